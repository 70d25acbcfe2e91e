"""Where and with what a record was made: git commit, package versions, device, host."""
from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

VERSIONED = ("sst-core", "torch", "numpy", "scipy", "sympy")


def git_commit(where: Path) -> str:
    """The commit checked out at ``where``, ``+dirty`` when tracked files differ from it,
    or ``unknown``; one ``git status`` call (its ``branch.oid`` header and any change
    line), since a record is stored per run and a stack stores many at once.
    ``--no-optional-locks``: ``git status`` would otherwise refresh the index under
    ``.git/index.lock``, and a status killed by the timeout (a busy machine) would leave
    that lock behind, so that every later ``git add`` and ``git commit`` of the user fails
    until it is removed by hand."""
    try:
        out = subprocess.run(["git", "--no-optional-locks", "status", "--porcelain=v2",
                              "--branch", "--untracked-files=no"],
                             cwd=where, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if out.returncode != 0:
        return "unknown"
    lines = out.stdout.splitlines()
    head = next((line.split()[2] for line in lines if line.startswith("# branch.oid ")), None)
    if head is None or head == "(initial)":  # no commit yet
        return "unknown"
    dirty = any(line and not line.startswith("#") for line in lines)
    return head + ("+dirty" if dirty else "")


@functools.cache
def _package_versions() -> tuple[tuple[str, str], ...]:
    """The :data:`VERSIONED` packages' versions, read once per process (reading them is
    a few ms of metadata parsing, paid per stored record otherwise; a process runs the
    versions it imported)."""
    found = [("python", platform.python_version())]
    for name in VERSIONED:
        try:
            found.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            pass
    return tuple(found)


def versions() -> dict[str, str]:
    """Python's and the :data:`VERSIONED` packages' versions (a new dict each call)."""
    return dict(_package_versions())


def current_device() -> str:
    """``cuda:<name>`` when torch is loaded and sees a GPU, else ``cpu``.

    torch is only consulted when the run already imported it, so chapters that do not
    need torch do not pay for importing it.
    """
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return f"cuda:{torch.cuda.get_device_name(0)}"
    return "cpu"


# the processor's widest vector instructions decide how the C loops (built with
# -march=native) and the BLAS round: two machines of one name can round differently
SIMD_FLAGS = ("avx512f", "avx2", "fma", "neon", "asimd")


def cpu_info(cpuinfo: str | None = None) -> dict[str, Any]:
    """The processor's model name and which of :data:`SIMD_FLAGS` it has (from
    ``/proc/cpuinfo`` where there is one, else ``platform.processor()`` and no flags)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return {"model": platform.processor() or "unknown", "simd": []}
    model, flags = "unknown", set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "hardware") and model == "unknown":
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    return {"model": model, "simd": [f for f in SIMD_FLAGS if f in flags]}


def host_info() -> dict[str, Any]:
    host = {"machine": platform.machine(), "cpus": os.cpu_count(), "cpu": cpu_info()}
    if "torch" in sys.modules:  # threads change float summation order, hence results
        host["torch_threads"] = sys.modules["torch"].get_num_threads()
    native = sys.modules.get("sst_core.ops.native")
    if native is not None:  # the scan's C loops round differently from its torch loops
        host["scan_loops"] = "C" if native.loaded() else "torch"
    selective = sys.modules.get("sst_core.ops.native_selective")
    if selective is not None:  # and so do the selective scan's
        host["selective_scan_loops"] = "C" if selective.loaded() else "torch"
    return host
