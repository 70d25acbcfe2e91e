"""Claims on runs: one worker computes a run, a killed worker's claims are taken over.

Before computing a run, a worker *claims* it: it writes ``<run-id>.claim`` (its host, pid,
start time and a random ``token``) completely into a file of its own, then *links* that
file to the claim's name (``os.link`` does not overwrite: exactly one of several workers
wins, also across processes and, on a shared file system, across machines). A claim is
therefore never seen half written; a file system without hard links falls back to
``O_CREAT | O_EXCL`` and writing in place, and an unreadable claim younger than
:data:`UNREADABLE_LIVE_S` counts as live (a writer may still be filling it).

The worker refreshes the file's time every :data:`HEARTBEAT_S` seconds while it works. A
claim is *stale*, and is taken over, when its process is gone (same host), its heartbeat
is older than :data:`STALE_AFTER_S`, or it has been unreadable for longer than
:data:`UNREADABLE_LIVE_S`. Every removal of a claim (a takeover, a release, dropping a
stale claim) happens under an exclusive lock of the folder's ``.claims.lock`` (``flock``,
released by the kernel when its holder dies) and removes only the file it judged: the
claim is renamed away and, when the renamed file is not the one judged, linked back. A
worker releases only a claim that carries its own token.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

from sst_core.store.records import (
    record_path,
)

HEARTBEAT_S = 30.0  # a working claim's file time is refreshed this often


STALE_AFTER_S = 600.0  # a claim whose heartbeat is older than this is taken over

# an unreadable claim (a writer without hard links still filling it, or one killed while
# doing so) counts as live this long after its last change, and as stale after
UNREADABLE_LIVE_S = 60.0

LOCK_NAME = ".claims.lock"  # beside the claims of one folder while a claim is removed


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


def _read(path: Path) -> tuple[dict[str, Any] | None, os.stat_result] | None:
    """What the claim at ``path`` says (None when unreadable) and its stat; None when there
    is no claim."""
    try:
        st = path.stat()
        text = path.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        try:
            return None, path.stat()
        except OSError:
            return None
    try:
        info = json.loads(text)
    except ValueError:
        info = None
    return (info if isinstance(info, dict) else None), st


def _stale(info: dict[str, Any] | None, st: os.stat_result, now: float | None = None) -> bool:
    age = (now or time.time()) - st.st_mtime
    if info is None:  # unreadable: being written, or cut short while being written
        return age > UNREADABLE_LIVE_S
    pid = info.get("pid", -1)
    if info.get("host") == socket.gethostname() and not _pid_alive(
            pid if isinstance(pid, int) and not isinstance(pid, bool) else -1):
        return True
    return age > STALE_AFTER_S


def is_stale(path: Path, now: float | None = None) -> bool:
    """Whether the claim at ``path`` was left by a worker that is gone (False when there
    is no claim)."""
    read = _read(path)
    if read is None:
        return False
    return _stale(read[0], read[1], now)


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock of ``folder``'s claims, held by every removal of a claim: ``flock``
    of the file ``.claims.lock``, which its holder deletes before letting go (a waiter
    that then finds another file, or none, at the name tries again), so no lock file is
    left beside the records. A file system without locks gives none, and the removal's
    own check stands alone."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    path = folder / LOCK_NAME
    for _ in range(1000):
        try:
            fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
        except OSError:
            break
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # no locks on this file system
            os.close(fd)
            break
        try:
            current = os.stat(path)
        except FileNotFoundError:
            current = None
        if current is None or not _same_file(current, os.fstat(fd)):
            os.close(fd)  # its holder deleted it meanwhile: take the next one
            continue
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)
            os.close(fd)
        return
    yield


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _remove_if(path: Path, keep: Any) -> dict[str, Any] | None:
    """Under the folder lock: rename the claim at ``path`` away and delete it unless
    ``keep(info, stat)`` says it must stay (then it is linked back). Returns what the
    removed claim said (``{}`` when unreadable), or None when nothing was removed."""
    with _folder_lock(path.parent):
        read = _read(path)
        if read is None or keep(*read):
            return None
        judged = read[1]
        moved = path.with_name(f"{path.name}.gone-{uuid.uuid4().hex[:12]}")
        try:
            os.rename(path, moved)
        except FileNotFoundError:
            return None
        try:
            if not _same_file(moved.stat(), judged):  # replaced meanwhile (no lock): put back
                with contextlib.suppress(OSError):
                    os.link(moved, path)
                return None
            return read[0] or {}
        finally:
            moved.unlink(missing_ok=True)


def _write_new(path: Path, text: str) -> bool:
    """Make ``path`` hold ``text``, complete when visible, unless it exists: write a file
    of this worker's own, then link it to ``path``. False when ``path`` exists."""
    tmp = path.with_name(f"{path.name}.new-{uuid.uuid4().hex[:12]}")
    try:
        with open(tmp, "x") as f:
            f.write(text)
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        except OSError:  # no hard links here: create exclusively and fill in place
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "w") as f:
                f.write(text)
            return True
    finally:
        tmp.unlink(missing_ok=True)


def _clear_leftovers(path: Path) -> None:
    """Delete the files a worker killed while claiming ``path`` left (its own copy before
    linking, a claim it had renamed away), once they are older than a live write."""
    now = time.time()
    for old in path.parent.glob(f"{path.name}.*-*"):
        with contextlib.suppress(OSError):
            if now - old.stat().st_mtime > UNREADABLE_LIVE_S:
                old.unlink()


class Claim:
    """An exclusive claim on one run (see the module docstring); a context manager."""

    def __init__(self, cfg: Any, root: Path | None = None):
        self.path = claim_path(cfg, root)
        self.held = False
        self.token = uuid.uuid4().hex
        # what the stale claim this one replaced said (host, pid, since), when it replaced
        # one: a worker that ended without storing the run, e.g. one the kernel killed
        self.taken_over: dict[str, Any] | None = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def acquire(self) -> bool:
        """Take the claim (taking over a stale one); False when a live worker holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                           "since": time.time(), "token": self.token})
        for _ in range(2):
            if _write_new(self.path, text):
                self.held = True
                self._beat = threading.Thread(target=self._heartbeat, daemon=True)
                self._beat.start()
                return True
            gone = _remove_if(self.path, lambda info, st: not _stale(info, st))
            if gone is None:
                return False  # live, or taken over by another worker meanwhile
            self.taken_over = gone
            _clear_leftovers(self.path)
        return False

    def _mine(self) -> bool:
        read = _read(self.path)
        return read is not None and read[0] is not None and read[0].get("token") == self.token

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            if not self._mine():
                return  # taken over (this worker looked gone): leave the new claim alone
            try:
                os.utime(self.path)
            except FileNotFoundError:
                return

    def release(self) -> None:
        """Remove this worker's claim; a claim at the path with another token (this one
        was taken over meanwhile) is left to its holder."""
        if self.held:
            self._stop.set()
            _remove_if(self.path, lambda info, st: (info or {}).get("token") != self.token)
            self.held = False

    def __enter__(self) -> "Claim":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


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
    if path.exists():
        _remove_if(path, lambda info, st: not _stale(info, st))
