"""One writer per home: every command that changes a home holds its lock file.

``hltm load``, ``index``, ``delete``, ``verify``, ``adapt`` and the Dagster runs of a home take
an exclusive ``flock`` on ``<home>/hltm.lock`` for as long as they write. A second writer is
refused at once with the pid and command of the holder (or waits, when asked to), so two
indexes never interleave their rows and a load can never delete projects under a running index
that would then write them back. The kernel drops the lock of a killed process, so a crash
never leaves a home locked. The lock is re-entrant inside one process (``hltm delete`` holds
it across its rebuild; ``hltm index`` across the Dagster runs it executes in process).

Readers (``ask``, the query module) never take it.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = "hltm.lock"
#: Seconds a writer waits for the lock when the caller does not say (0: refuse at once).
WAIT_ENV = "HLTM_LOCK_WAIT"

_held: dict[str, list] = {}  # resolved home -> [file object, depth]
_guard = threading.Lock()


class HomeBusyError(RuntimeError):
    """Another process is writing this home."""


def _holder(path: Path) -> str:
    try:
        text = path.read_text().strip()
    except OSError:
        return "another process"
    pid, _, command = text.partition(" ")
    return f"hltm {command or 'command'} (pid {pid})" if pid else "another process"


@contextmanager
def home_lock(home: str | Path, command: str, wait_s: float | None = None) -> Iterator[None]:
    """Hold the home's writer lock; :class:`HomeBusyError` if another process keeps it longer
    than ``wait_s`` seconds (default ``$HLTM_LOCK_WAIT``, else 0)."""
    home = Path(home).resolve()
    key = str(home)
    with _guard:
        if key in _held:
            _held[key][1] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield
        finally:
            with _guard:
                _held[key][1] -= 1
        return
    if wait_s is None:
        wait_s = float(os.environ.get(WAIT_ENV, "0") or 0)
    home.mkdir(parents=True, exist_ok=True)
    path = home / LOCK_FILE
    fh = path.open("a+")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = _holder(path)
                fh.close()
                raise HomeBusyError(
                    f"{holder} is writing {home}: only one writer at a time; run this again "
                    f"when it finishes (or set {WAIT_ENV}=SECONDS to wait)"
                ) from None
            time.sleep(0.1)
    fh.seek(0)
    fh.truncate()
    fh.write(f"{os.getpid()} {command}\n")
    fh.flush()
    with _guard:
        _held[key] = [fh, 1]
    try:
        yield
    finally:
        with _guard:
            _held[key][1] -= 1
            done = _held[key][1] == 0
            if done:
                del _held[key]
        if done:
            fh.seek(0)
            fh.truncate()
            fh.flush()
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            fh.close()


def holds_lock(home: str | Path) -> bool:
    """Whether this process holds the home's writer lock."""
    return str(Path(home).resolve()) in _held
