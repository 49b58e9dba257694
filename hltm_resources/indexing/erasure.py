"""Erasing nodes everywhere they leave a trace: memory rows, vectors (every version), caches,
the query log, API tokens scoped to them, Dagster's run history, free blocks of the DuckDB
file.

An erasure is an intent recorded before anything is erased: the transaction that takes nodes
out of the source of truth also writes their ids to ``erasure_pending``. The stores outside
that transaction (LanceDB versions, the LLM cache, the DuckDB file's freed blocks) are then
cleaned by :func:`complete_erasures`, which every writing command (``delete``, ``load``,
``index``, ``verify``) runs first, so a process killed at any point leaves work that the next
command finishes; ``check`` fails while an erasure is pending. The last step, rewriting the
DuckDB file (the lake's data files), is announced by a mark before the journal rows go, and
redone until it has completed once; the distributed deployment keeps the mark in the lake, so
any coordinator finishes what another left.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from hltm_resources.config import Settings
from hltm_resources.faults import fault
from hltm_resources.stores import database
from hltm_resources.stores.memory_rows import drop_pending, erase_rows
from hltm_resources.stores.tokens import revoke_scoped
from hltm_resources.stores.vectors import VectorStore

JOURNAL_DDL = (
    "CREATE TABLE IF NOT EXISTS erasure_pending (node_id VARCHAR NOT NULL, "
    "kind VARCHAR NOT NULL, recorded_at TIMESTAMP NOT NULL)"
)
#: Journal kinds: the node left the tree, or it stays and only its memory is emptied.
GONE, EMPTIED = "gone", "emptied"
#: Next to the DuckDB file: "the file still holds freed blocks of erased rows: rewrite it".
REWRITE_MARKER = ".rewrite-pending"
#: The same mark in the distributed deployment's lake: "rewrite the data files".
REWRITE_TABLE = "erasure_rewrite_pending"
REWRITE_DDL = f"CREATE TABLE IF NOT EXISTS {REWRITE_TABLE} (recorded_at TIMESTAMP NOT NULL)"

#: Stores outside this package that keep traces of nodes, erased by plug-ins registered at
#: import (``hltm_assets`` registers Dagster's run history): name -> erase(settings, ids).
OUTER_STORES: dict[str, Callable[[Settings, Sequence[str]], object]] = {}
RUN_HISTORY = "Dagster's run history"


def register_outer_store(name: str, erase: Callable[[Settings, Sequence[str]], object]) -> None:
    OUTER_STORES[name] = erase


def has_run_history(settings: Settings) -> bool:
    """Whether the home holds Dagster storage (``hltm index`` or ``dagster dev`` ran); the
    distributed deployment's is in PostgreSQL, always there."""
    return settings.distributed or (settings.home / "history" / "runs.db").exists()


def _unreachable_stores(settings: Settings) -> list[str]:
    """Stores this home holds that no plug-in of this process can erase."""
    return [RUN_HISTORY] if has_run_history(settings) and RUN_HISTORY not in OUTER_STORES else []


def gone_and_emptied(states: dict, topo) -> tuple[list[str], set[str]]:
    """After the source of truth changed: the built nodes (``states``) no longer in the tree
    ``topo``, and those to empty. A node that moved keeps its old path in its vectors (the
    scope filter): it and its old and new ancestors are emptied, so no question at the old
    scope can find it before it is rebuilt; so are the surviving ancestors of a node gone."""
    gone = sorted(n for n in states if topo.node(n) is None)
    moved = [n for n, st in states.items() if topo.node(n) and topo.node(n).path != st.path]
    emptied = set(moved) | {a.node_id for n in moved for a in topo.ancestors(topo.node(n))}
    for node in gone + moved:  # the stored ancestors still in the tree
        parent = states[node].parent_id
        while parent is not None and parent in states:
            if topo.node(parent) is not None:
                emptied.add(parent)
            parent = states[parent].parent_id
    return gone, emptied


def scrub_database(
    con, gone: Sequence[str], invalidate: Sequence[str], deleted_projects: Sequence[str] = ()
) -> None:
    """Inside the caller's transaction: drop memory rows of ``gone``, empty ``invalidate``,
    drop query-log rows scoped to or citing any of ``gone``/``deleted_projects``, and record
    the erasure of all of them from the other stores (:func:`complete_erasures`)."""
    erase_rows(con, gone, invalidate)
    nodes = sorted(set(gone) | set(deleted_projects))
    drop_pending(con, nodes)
    if nodes:
        con.execute(
            "DELETE FROM query_log WHERE scope IN (SELECT unnest(?)) "
            "OR list_has_any(references_, ?)",
            [nodes, nodes],
        )
    left = set(gone) | set(deleted_projects)
    record_erasure(con, {n: GONE for n in left} | {n: EMPTIED for n in invalidate if n not in left})


def record_erasure(con, nodes: dict[str, str]) -> None:
    """Journal the erasure of ``nodes`` (id -> ``GONE`` or ``EMPTIED``), inside the
    transaction that deletes or empties them."""
    con.execute(JOURNAL_DDL)
    if nodes:
        now = datetime.now(UTC).replace(tzinfo=None)
        con.executemany(
            "INSERT INTO erasure_pending VALUES (?, ?, ?)",
            [[n, kind, now] for n, kind in sorted(nodes.items())],
        )


def marker_path(settings: Settings) -> Path:
    return settings.home / f"hltm.duckdb{REWRITE_MARKER}"


def pending_erasures(settings: Settings, timeout_s: float = 30.0) -> dict[str, str]:
    """Node id -> kind (``GONE``, ``EMPTIED``) of every erasure recorded and not complete."""
    return _erasure_state(settings, timeout_s)[0]


def erasure_pending(settings: Settings) -> bool:
    """Whether an erasure was recorded and is not complete in every store."""
    pending, rewrite = _erasure_state(settings)
    return bool(pending) or rewrite


def _erasure_state(settings: Settings, timeout_s: float = 30.0) -> tuple[dict[str, str], bool]:
    """The journal (:func:`pending_erasures`), and whether the last step of an erasure,
    rewriting the stores' files, is still to do. A home marks that with a file next to its
    DuckDB file; the distributed deployment in the lake itself (:data:`REWRITE_TABLE`), where
    every coordinator sees it, read with the journal (each attach of the lake costs a
    connection to its catalog)."""
    lake = settings.distributed
    rewrite = False if lake else marker_path(settings).exists()
    if not settings.duckdb_path.exists():
        return {}, rewrite
    with database.connect(settings.duckdb_path, read_only=True, timeout_s=timeout_s) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        rows = []
        if "erasure_pending" in tables:
            rows = con.execute(
                "SELECT node_id, max(kind) FROM erasure_pending GROUP BY 1 ORDER BY 1"
            ).fetchall()
        if lake and REWRITE_TABLE in tables:
            rewrite = con.execute(f"SELECT count(*) FROM {REWRITE_TABLE}").fetchone()[0] > 0
    return dict(rows), rewrite  # "gone" sorts after "emptied": deleted and emptied is gone


def _mark_rewrite_and_clear_journal(settings: Settings) -> None:
    """The erasure's stores are clean: announce the rewrite, then forget the journal."""
    if settings.distributed:
        # One transaction of the shared lake: the mark and the journal are never both gone.
        with database.connect(settings.duckdb_path) as con, database.transaction(con):
            con.execute(REWRITE_DDL)
            con.execute(f"INSERT INTO {REWRITE_TABLE} VALUES (current_timestamp)")
            con.execute("DELETE FROM erasure_pending")
        fault("erase:marked")
        fault("erase:journal-cleared")
        return
    marker = marker_path(settings)
    marker.write_text("rewrite the DuckDB file: freed blocks hold erased rows\n")
    _sync(marker)
    fault("erase:marked")
    with database.connect(settings.duckdb_path) as con, database.transaction(con):
        con.execute("DELETE FROM erasure_pending")
    fault("erase:journal-cleared")


def _clear_rewrite_mark(settings: Settings) -> None:
    if settings.distributed:
        with database.connect(settings.duckdb_path) as con:
            con.execute(f"DELETE FROM {REWRITE_TABLE}")
    else:
        marker_path(settings).unlink()


def complete_erasures(settings: Settings) -> list[str]:
    """Finish every recorded erasure: vectors and their old table versions, cached LLM
    replies, then the DuckDB file rewritten. Idempotent; returns the node ids erased."""
    pending, rewrite = _erasure_state(settings)
    nodes = sorted(pending)
    # A deleted node's tokens go with it (an emptied one keeps its own).
    revoke_scoped(settings, [n for n, kind in pending.items() if kind == GONE])
    if nodes and (missing := _unreachable_stores(settings)):
        # Finish what this process can; the journal stays for one that reaches the rest.
        erase_everywhere(settings, nodes)
        warnings.warn(
            f"erasure of {len(nodes)} nodes not complete: {', '.join(missing)} is erased by "
            "the hltm command line (run hltm index); hltm check fails until then",
            RuntimeWarning,
            stacklevel=2,
        )
        return []
    if nodes:
        erase_everywhere(settings, nodes)
        fault("erase:stores-clean")
        _mark_rewrite_and_clear_journal(settings)
        rewrite = True
    if rewrite:
        database.rewrite_file(settings.duckdb_path)
        fault("erase:rewritten")
        _clear_rewrite_mark(settings)
    return nodes


def erase_everywhere(settings: Settings, node_ids: Sequence[str]) -> None:
    """Remove vectors (and their old table versions), cached LLM outputs and the records the
    outer stores keep of ``node_ids``. Nodes only emptied (the ancestors of a deleted node)
    lose their run history too: it shows what their memory held, the erased node's facts."""
    store = VectorStore(settings.lancedb_path, model_id=None, dim=None)
    if node_ids:
        store.delete_nodes(node_ids)
    fault("erase:vectors-deleted")
    store.purge_history()
    from hltm_resources.stores.llm_cache import purge_nodes

    purge_nodes(settings, node_ids)
    for erase in OUTER_STORES.values():
        erase(settings, node_ids)
    fault("erase:runs-deleted")


def _sync(path: Path) -> None:
    import os

    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
