"""``hltm load``: validate a snapshot, then replace the SOT and erase what it no longer holds.

Leaves (and nodes above them) missing from the new snapshot are deleted: their documents
leave the SOT, their memory rows and vectors are erased, and the memory of their former
ancestors is invalidated (emptied and marked for rebuild) so that no aggregate keeps facts of
deleted data until the next ``hltm index`` rebuilds it. A node that moved is emptied with its
old and new ancestors the same way. The erasure is journaled in the load's transaction and
completed by :func:`complete_erasures` (here, or by the next writing command after a crash).
"""

from __future__ import annotations

from pathlib import Path

from hltm_resources.config import ConfigError, Settings
from hltm_resources.faults import fault
from hltm_resources.indexing.erasure import complete_erasures, gone_and_emptied, scrub_database
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.indexing.plan import Plan
from hltm_resources.stores import database
from hltm_resources.stores.lock import home_lock
from hltm_resources.stores.memory_rows import read_states
from hltm_resources.stores.sot import LoadReport, apply_snapshot, read_snapshot, read_topology


def load_snapshot(settings: Settings, directory: str | Path, rebuild: bool = False) -> LoadReport:
    """Load ``directory`` into the home's SOT (validated first, one transaction).

    ``rebuild`` (the distributed deployment only): start the memory over from this snapshot,
    after its object store lost the files its catalog names. The lake is dropped first, its
    catalog and every object under the store's prefix (vectors included); then ``hltm index
    --full`` builds everything again."""
    schema = settings.schema
    if rebuild and not settings.distributed:
        raise ConfigError(
            "--rebuild starts the distributed deployment's memory over (HLTM_DEPLOYMENT="
            "distributed); a home's memory is rebuilt by loading into a new --home"
        )
    if not rebuild and settings.duckdb_path.exists():  # a home keeps its tree: refuse
        database.init_schema(settings.duckdb_path, schema)  # another before reading
    snap = read_snapshot(directory, schema)
    with home_lock(settings, "load"):
        if rebuild:
            settings.duckdb_path.drop()
        complete_erasures(settings)  # an earlier delete or load may have died half-way
        database.init_schema(settings.duckdb_path, schema)
        with database.connect(settings.duckdb_path) as con, database.transaction(con):
            report = apply_snapshot(con, snap, str(Path(directory).resolve()))
            topo = read_topology(con, schema)
            states = read_states(con)
            gone, invalidate = gone_and_emptied(states, topo)
            deleted = [f"{schema.leaf.name}:{p}" for p in report.deleted]
            scrub_database(con, gone, sorted(invalidate), deleted)
        fault("load:committed")
        complete_erasures(settings)
    return report


def load_and_build(settings: Settings, directory: str | Path) -> Plan:
    """Load a snapshot and build all of its memory with the plain indexer (no Dagster)."""
    load_snapshot(settings, directory)
    return Indexer(settings).build_all()
