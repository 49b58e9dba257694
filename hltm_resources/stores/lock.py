"""One writer per home: every command that changes a home holds its lock file.

``hltm load``, ``index``, ``delete``, ``verify``, ``adapt`` and the Dagster runs of a home take
an exclusive ``flock`` on ``<home>/hltm.lock`` for as long as they write. A second writer is
refused at once with the pid and command of the holder (or waits, when asked to), so two
indexes never interleave their rows and a load can never delete projects under a running index
that would then write them back. The kernel drops the lock of a killed process, so a crash
never leaves a home locked. The lock is re-entrant inside one process (``hltm delete`` holds
it across its rebuild; ``hltm index`` across the Dagster runs it executes in process).

Readers (``ask``, the query module) never take it.

The distributed deployment has no home to share: there the writer lock is a PostgreSQL
advisory lock in the catalog database, held by a connection that lives as long as the command
(PostgreSQL drops it with the connection of a killed process). Its Dagster runs, which run on
the workers while the ``hltm index`` that launched them holds the lock, take none.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from hltm_resources.env import number

if TYPE_CHECKING:
    from hltm_resources.config import Settings

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


#: The advisory lock's key in the catalog database (any constant unique to HLTM).
ADVISORY_KEY = 0x484C544D  # "HLTM"


@contextmanager
def home_lock(
    home: str | Path | Settings, command: str, wait_s: float | None = None
) -> Iterator[None]:
    """Hold the home's writer lock; :class:`HomeBusyError` if another process keeps it longer
    than ``wait_s`` seconds (default ``$HLTM_LOCK_WAIT``, else 0). Given the settings of a
    distributed deployment, the lock is the catalog's advisory lock."""
    if not isinstance(home, str | Path) and home.distributed:
        key = f"advisory:{home.catalog_url}"
        acquire = functools.partial(_advisory_lock, home.catalog_url)
    else:
        path = Path(home if isinstance(home, str | Path) else home.home).resolve()
        key, acquire = str(path), functools.partial(_file_lock, path)
    if _reenter(key):  # this process holds it already
        try:
            yield
        finally:
            _leave(key)
        return
    with acquire(key, command, wait_s):
        yield


def run_lock(settings: Settings, command: str, wait_s: float | None = None):
    """The lock a Dagster run of ``settings``' memory takes: the home's; none on a worker of
    the distributed deployment (the index that launched it holds the catalog's)."""
    if settings.distributed:
        return contextlib.nullcontext()
    return home_lock(settings.home, command, wait_s)


def _reenter(key: str) -> bool:
    with _guard:
        if key in _held:
            _held[key][1] += 1
            return True
    return False


def _leave(key: str) -> bool:
    """One level out; whether that was the last."""
    with _guard:
        _held[key][1] -= 1
        if _held[key][1] == 0:
            del _held[key]
            return True
    return False


@contextmanager
def _advisory_lock(url: str, key: str, command: str, wait_s: float | None) -> Iterator[None]:
    import psycopg2

    if wait_s is None:
        wait_s = number(WAIT_ENV, 0.0)
    con = psycopg2.connect(
        url, application_name=f"hltm {command} (pid {os.getpid()} on {socket.gethostname()})"
    )
    con.autocommit = True
    try:
        deadline = time.monotonic() + wait_s
        with con.cursor() as cur:
            while True:
                cur.execute("SELECT pg_try_advisory_lock(%s)", [ADVISORY_KEY])
                if cur.fetchone()[0]:
                    break
                if time.monotonic() >= deadline:
                    cur.execute(
                        "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a "
                        "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.objid = %s",
                        [ADVISORY_KEY],
                    )
                    row = cur.fetchone()
                    raise HomeBusyError(
                        f"{row[0] if row else 'another process'} is writing the distributed "
                        "memory: only one writer at a time; run this again when it finishes "
                        f"(or set {WAIT_ENV}=SECONDS to wait)"
                    )
                time.sleep(0.2)
        with _guard:
            _held[key] = [con, 1]
        try:
            yield
        finally:
            _leave(key)
    finally:
        con.close()  # ends the session, and with it the lock


@contextmanager
def _file_lock(home: Path, key: str, command: str, wait_s: float | None) -> Iterator[None]:
    if wait_s is None:
        wait_s = number(WAIT_ENV, 0.0)
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
                if holder.startswith("hltm serve "):
                    raise HomeBusyError(
                        f"{holder}, the memory service, owns writing to {home}: write through "
                        "it (hltm remember, forget, apply; they find it), or stop it to run this"
                    ) from None
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
        if _leave(key):
            fh.seek(0)
            fh.truncate()
            fh.flush()
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            fh.close()


#: Where a running memory service (``hltm serve``) says how to reach it, in its home.
SERVICE_FILE = "service.json"


def running_service(home: str | Path) -> dict | None:
    """``{"url", "pid"}`` of the home's running memory service, or None (no file, or its
    process is gone)."""
    try:
        info = json.loads((Path(home) / SERVICE_FILE).read_text())
        os.kill(int(info["pid"]), 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return info


def holds_lock(home: str | Path) -> bool:
    """Whether this process holds the home's writer lock."""
    return str(Path(home).resolve()) in _held
