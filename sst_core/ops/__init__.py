"""Fast operators with a plain reference beside each (same signature, same results)."""
from sst_core.ops.scan import linear_scan, linear_scan_ref

__all__ = ["linear_scan", "linear_scan_ref"]
