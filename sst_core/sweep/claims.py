"""Claims on runs: one worker computes a run, a killed worker's claims are taken over.

Before computing a run, a worker *claims* it: it creates ``<run-id>.claim`` beside the
record with ``O_CREAT | O_EXCL`` (exactly one creator wins, also across processes and, on
a shared file system, across machines), naming its host and pid, and refreshes the file's
time every :data:`HEARTBEAT_S` seconds while it works. A claim is *stale*, and is taken
over, when its process is gone (same host) or its heartbeat is older than
:data:`STALE_AFTER_S`; the takeover renames the stale claim away first, so two workers
cannot both take it over.
"""
from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from sst_core.store.records import (
    record_path,
)

HEARTBEAT_S = 30.0  # a working claim's file time is refreshed this often


STALE_AFTER_S = 600.0  # a claim whose heartbeat is older than this is taken over


def claim_path(cfg: Any, root: Path | None = None) -> Path:
    return record_path(cfg, root).with_suffix(".claim")


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (a zombie, killed but not yet reaped, as
    happens to a killed worker whose parent died with it, counts as gone)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: trust kill(0)
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def is_stale(path: Path, now: float | None = None) -> bool:
    """Whether the claim at ``path`` was left by a worker that is gone."""
    try:
        info = json.loads(path.read_text())
        age = (now or time.time()) - path.stat().st_mtime
    except FileNotFoundError:
        return False  # released meanwhile
    except (OSError, ValueError):
        return True  # unreadable: a claim cut short while being written
    if info.get("host") == socket.gethostname() and not _pid_alive(int(info.get("pid", -1))):
        return True
    return age > STALE_AFTER_S


class Claim:
    """An exclusive claim on one run (see the module docstring); a context manager."""

    def __init__(self, cfg: Any, root: Path | None = None):
        self.path = claim_path(cfg, root)
        self.held = False
        # what the stale claim this one replaced said (host, pid, since), when it replaced
        # one: a worker that ended without storing the run, e.g. one the kernel killed
        self.taken_over: dict[str, Any] | None = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def acquire(self) -> bool:
        """Take the claim (taking over a stale one); False when a live worker holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if not is_stale(self.path):
                    return False
                moved = self.path.with_name(f"{self.path.name}.stale-{uuid.uuid4().hex[:8]}")
                try:  # only one of several workers can move the stale claim away
                    os.rename(self.path, moved)
                    self.taken_over = _claim_info(moved)
                except FileNotFoundError:
                    pass
                for old in self.path.parent.glob(f"{self.path.name}.stale-*"):
                    old.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as f:
                json.dump({"host": socket.gethostname(), "pid": os.getpid(),
                           "since": time.time()}, f)
            self.held = True
            self._beat = threading.Thread(target=self._heartbeat, daemon=True)
            self._beat.start()
            return True
        return False

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                os.utime(self.path)
            except FileNotFoundError:
                return

    def release(self) -> None:
        if self.held:
            self._stop.set()
            self.path.unlink(missing_ok=True)
            self.held = False

    def __enter__(self) -> "Claim":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _claim_info(path: Path) -> dict[str, Any]:
    """What a claim file says (``{}`` when it cannot be read: cut short while written)."""
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def takeover_text(run_id: str, info: dict[str, Any]) -> str:
    """The line a sweep prints when it takes over ``run_id`` from a worker that is gone,
    so that a killed sweep leaves a trace in the next one's log."""
    since = info.get("since")
    when = (time.strftime(" since %Y-%m-%d %H:%M:%S UTC", time.gmtime(since))
            if isinstance(since, (int, float)) else "")
    who = (f"pid {info['pid']} on {info.get('host', '?')}{when}" if "pid" in info
           else "a worker whose claim cannot be read")
    return (f"run {run_id} was claimed by {who}, which ended without storing it (killed? "
            "an out-of-memory kill shows in `dmesg`); computing it again")


def drop_stale_claim(cfg: Any) -> None:
    """Remove the claim a killed worker left on a run it had already stored (a stack
    stores its runs one by one and releases their claims together at the end)."""
    path = claim_path(cfg)
    if path.exists() and is_stale(path):
        path.unlink(missing_ok=True)
