"""Where and with what a record was made: git commit, package versions, device, host."""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

VERSIONED = ("sst-core", "torch", "numpy", "scipy", "sympy")


def git_commit(where: Path) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True,
                             text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=where, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if out.returncode != 0:
        return "unknown"
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def current_device() -> str:
    """``cuda:<name>`` when torch is loaded and sees a GPU, else ``cpu``.

    torch is only consulted when the run already imported it, so chapters that do not
    need torch do not pay for importing it.
    """
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return f"cuda:{torch.cuda.get_device_name(0)}"
    return "cpu"


def host_info() -> dict[str, Any]:
    host = {"machine": platform.machine(), "cpus": os.cpu_count()}
    if "torch" in sys.modules:  # threads change float summation order, hence results
        host["torch_threads"] = sys.modules["torch"].get_num_threads()
    native = sys.modules.get("sst_core.ops.native")
    if native is not None:  # the scan's C loops round differently from its torch loops
        host["scan_loops"] = "C" if native.loaded() else "torch"
    selective = sys.modules.get("sst_core.ops.native_selective")
    if selective is not None:  # and so do the selective scan's
        host["selective_scan_loops"] = "C" if selective.loaded() else "torch"
    return host
