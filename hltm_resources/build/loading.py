"""``hltm load``: validate a snapshot, then replace the SOT and erase what it no longer holds.

Leaves (and nodes above them) missing from the new snapshot are deleted: their documents
leave the SOT, their memory rows and vectors are erased, and the memory of their former
ancestors is invalidated (emptied and marked for rebuild) so that no aggregate keeps facts of
deleted data until the next ``hltm index`` rebuilds it.
"""

from __future__ import annotations

from pathlib import Path

from hltm_resources.build.erasure import erase_everywhere, scrub_database
from hltm_resources.build.indexer import Indexer
from hltm_resources.build.plan import Plan
from hltm_resources.config import Settings
from hltm_resources.stores import database
from hltm_resources.stores.memory_rows import read_states
from hltm_resources.stores.sot import LoadReport, apply_snapshot, read_snapshot, read_topology


def load_snapshot(settings: Settings, directory: str | Path) -> LoadReport:
    """Load ``directory`` into the home's SOT (validated first, one transaction)."""
    schema = settings.schema
    if settings.duckdb_path.exists():  # a home keeps its tree: refuse another before reading
        database.init_schema(settings.duckdb_path, schema)
    snap = read_snapshot(directory, schema)
    database.init_schema(settings.duckdb_path, schema)
    with database.connect(settings.duckdb_path) as con, database.transaction(con):
        report = apply_snapshot(con, snap, str(Path(directory).resolve()))
        topo = read_topology(con, schema)
        states = read_states(con)
        gone = sorted(n for n in states if topo.node(n) is None)
        invalidate = sorted(_surviving_ancestors(gone, states, topo))
        deleted = [f"{schema.leaf.name}:{p}" for p in report.deleted]
        scrub_database(con, gone, invalidate, deleted)
    if gone or invalidate or report.deleted:
        erase_everywhere(settings, gone + invalidate)
        database.rewrite_file(settings.duckdb_path)  # no freed block keeps deleted documents
    return report


def _surviving_ancestors(gone: list[str], states: dict, topo) -> set[str]:
    out: set[str] = set()
    for node in gone:
        parent = states[node].parent_id
        while parent is not None and parent in states:
            if topo.node(parent) is not None:
                out.add(parent)
            parent = states[parent].parent_id
    return out


def load_and_build(settings: Settings, directory: str | Path) -> Plan:
    """Load a snapshot and build all of its memory with the plain indexer (no Dagster)."""
    load_snapshot(settings, directory)
    return Indexer(settings).build_all()
