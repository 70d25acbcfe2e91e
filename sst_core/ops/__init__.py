"""Fast operators with a plain reference beside each (same signature, same results)."""
from .rnn_scan import rnn_scan, rnn_scan_ref
from .scan import linear_scan, linear_scan_ref
from .selective_scan import selective_scan, selective_scan_ref

__all__ = ["linear_scan", "linear_scan_ref", "rnn_scan", "rnn_scan_ref", "selective_scan",
           "selective_scan_ref"]
