"""Named points where a test can kill the process, to prove that every command recovers.

``HLTM_FAULT=erase:marked hltm delete project:p1`` dies with SIGKILL (no cleanup, no
``finally``) when it reaches ``fault("erase:marked")``; unset, a point costs one dict lookup.
The points are listed in ``FAULT_POINTS`` so the fault-injection tests can walk all of them.
"""

from __future__ import annotations

import os
import signal

ENV = "HLTM_FAULT"

FAULT_POINTS = (
    "delete:committed",  # the SOT transaction (with the erasure journal) committed
    "load:committed",
    "write:committed",  # a direct write's transaction committed, nothing built
    "serve:committed",  # the memory service's batch committed, not acknowledged or built
    "erase:vectors-deleted",  # rows deleted in LanceDB, old versions still on disk
    "erase:runs-deleted",  # Dagster runs of the nodes deleted, vectors and caches before
    "erase:stores-clean",  # vectors and caches erased, journal still there
    "erase:marked",  # rewrite marker written, journal still there
    "erase:journal-cleared",  # journal gone, DuckDB file not yet rewritten
    "rewrite:copied",  # the fresh DuckDB copy written, not yet swapped in
    "erase:rewritten",  # file swapped in, marker still there
    "index:planned",  # an index planned its work, nothing built
    "index:level-built",  # one level stored, the levels above not yet
)


def fault(point: str) -> None:
    """Kill this process here if ``$HLTM_FAULT`` names ``point``."""
    if os.environ.get(ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)
