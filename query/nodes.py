"""What the memory holds about a node, read from a home's DuckDB views: the node as
``mem_nodes`` records it, its facets, QA pairs and summary, its children, and (leaves) its
documents in the source of truth; the leaves written and not built yet; and the Dagster run
that built a node. The inspector's pages and the service's JSON API read through these; each
takes an open connection (the run: the home) and binds every value as a parameter.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from hltm_resources.ids import make_path
from hltm_resources.ids import node_id as make_node_id
from hltm_resources.schema import TreeSchema
from hltm_resources.stores.memory_rows import INVALIDATED, PENDING

#: Children or documents read for one node (a seat of a huge tree stays a page, not a dump).
MAX_LISTED = 1000


@dataclass(frozen=True)
class Node:
    """A built node as ``mem_nodes`` records it (who built it, with which hints)."""

    node_id: str
    level: str
    name: str
    parent_id: str | None
    path: str
    engine: str
    embed_model: str
    hints_version: int
    leaf_count: int
    doc_count: int
    built_at: datetime
    input_hash: str

    @property
    def emptied(self) -> bool:
        """Emptied by a deletion or a move below it, and not rebuilt yet."""
        return self.input_hash == INVALIDATED


_NODE_COLUMNS = (
    "node_id, level, name, parent_id, path, engine, embed_model, hints_version, leaf_count, "
    "doc_count, built_at, input_hash"
)


def read_nodes(con, where: str, params: Sequence[object]) -> list[Node]:
    """Nodes by name; ``where`` is a constant of this module, values are bound parameters."""
    rows = con.execute(
        f"SELECT {_NODE_COLUMNS} FROM mem_nodes WHERE {where} ORDER BY name, node_id "
        f"LIMIT {MAX_LISTED + 1}",
        list(params),
    ).fetchall()
    return [Node(*row) for row in rows]


def read_node(con, node_id: str) -> Node | None:
    found = read_nodes(con, "node_id = ?", [node_id])
    return found[0] if found else None


def path_nodes(schema: TreeSchema, path: str) -> list[tuple[str, str]]:
    """(node id, path) of every node on a path, root first (a path is raw ids, one a level)."""
    raws = path.split("/") if path else []
    return [
        (make_node_id(level, raw), make_path(*raws[: i + 1]))
        for i, (level, raw) in enumerate(zip(schema.names[: len(raws)], raws, strict=True))
    ]


def read_names(con, node_ids: Iterable[str]) -> dict[str, str]:
    ids = sorted(set(node_ids))
    rows = con.execute(
        "SELECT node_id, name FROM mem_nodes WHERE node_id IN (SELECT unnest(?))", [ids]
    ).fetchall()
    return dict(rows)


def read_facets(con, node_id: str) -> list[tuple[str, str, int, list[str]]]:
    return con.execute(
        "SELECT key, value, support, source_ids FROM mem_facets WHERE node_id = ? ORDER BY ord",
        [node_id],
    ).fetchall()


def read_history(con, node_id: str) -> list[tuple[str, str, list[str], str, str]]:
    """(key, value, source ids, valid from, valid to) of the facts a leaf held once and a
    later document replaced, earliest first."""
    return con.execute(
        "SELECT key, value, source_ids, coalesce(valid_from, ''), valid_to FROM mem_history "
        "WHERE node_id = ? ORDER BY key, valid_from, ord",
        [node_id],
    ).fetchall()


def read_qa(con, node_id: str) -> list[tuple[str, str, list[str]]]:
    return con.execute(
        "SELECT question, answer, source_ids FROM mem_qa WHERE node_id = ? ORDER BY ord",
        [node_id],
    ).fetchall()


def read_summary(con, node_id: str) -> tuple[str, str] | None:
    return con.execute(
        "SELECT concise, detailed FROM mem_summaries WHERE node_id = ?", [node_id]
    ).fetchone()


def read_leaf_documents(con, schema: TreeSchema, raw_id: str) -> list[tuple[str, str, str, str]]:
    """(doc id, kind, updated at, text) of a leaf's documents in the source of truth."""
    return con.execute(
        f"SELECT doc_id, kind, updated_at, text FROM sot_documents "
        f"WHERE {schema.leaf.id_field} = ? ORDER BY doc_id LIMIT {MAX_LISTED + 1}",
        [raw_id],
    ).fetchall()


def read_document(con, schema: TreeSchema, doc_id: str) -> tuple[str, str, str, str] | None:
    """(leaf raw id, kind, updated at, text) of a document."""
    return con.execute(
        f"SELECT {schema.leaf.id_field}, kind, updated_at, text FROM sot_documents "
        "WHERE doc_id = ?",
        [doc_id],
    ).fetchone()


def sot_path(con, schema: TreeSchema, leaf_raw: str) -> str | None:
    """Where the source of truth puts a leaf now (a document belongs where its leaf is, even
    when the leaf moved and its memory still records the old place)."""
    raws = [leaf_raw]
    for level in reversed(schema.levels[1:]):
        parent = schema.parent(level.name)
        assert parent is not None
        row = con.execute(
            f"SELECT {parent.id_field} FROM {level.table} WHERE {level.id_field} = ?", [raws[-1]]
        ).fetchone()
        if row is None:
            return None
        raws.append(row[0])
    return make_path(*reversed(raws))


def read_pending_paths(con, schema: TreeSchema) -> dict[str, str]:
    """The leaves a write changed and no build has taken since (the build journal), each
    with where it sits: its memory's path, or for a leaf never built the source of truth's.
    Read without creating the journal (a read-only connection may not)."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    if PENDING not in tables:
        return {}
    rows = con.execute(
        f"SELECT DISTINCT p.node_id, n.path FROM {PENDING} p "
        "LEFT JOIN mem_nodes n ON n.node_id = p.node_id ORDER BY 1"
    ).fetchall()
    out = {}
    for node_id, path in rows:
        if path is None:
            path = sot_path(con, schema, node_id.split(":", 1)[1])
        if path is not None:
            out[node_id] = path
    return out


@dataclass(frozen=True)
class BuildRun:
    """The Dagster run whose materialization built a node's memory: its id ("" for a
    materialization reported without a run, as the memory service reports its builds) and
    when it was recorded (UTC)."""

    run_id: str
    at: datetime


#: Where a local home's Dagster instance keeps its asset events (hltm_assets/history.py).
ASSET_INDEX = ("history", "runs", "index.db")
#: Materializations read back per partition looking for one that built the node.
_RUN_LOOKBACK = 20


def read_build_run(home: Path, schema: TreeSchema, node: Node) -> BuildRun | None:
    """The run of the last materialization of the node's partition that built it, read from
    the home's Dagster event log with plain SQLite (never Dagster); None when the home has
    no run history, when none built it, or when the node was rebuilt since without a run
    (its ``built_at`` is later than that materialization).

    The file is opened read-only; when its write-ahead log is empty (no Dagster process
    writing) as immutable, so that reading it touches no file of the home."""
    index = home.joinpath(*ASSET_INDEX)
    if not index.exists():
        return None
    wal = index.with_name(index.name + "-wal")
    immutable = not wal.exists() or wal.stat().st_size == 0
    uri = f"{index.as_uri()}?mode=ro" + ("&immutable=1" if immutable else "")
    asset_key = json.dumps([schema.level(node.level).asset])
    try:
        con = sqlite3.connect(uri, uri=True)
        try:
            rows = con.execute(
                "SELECT run_id, timestamp, event FROM event_logs WHERE asset_key = ? "
                "AND partition = ? AND dagster_event_type = 'ASSET_MATERIALIZATION' "
                f"ORDER BY id DESC LIMIT {_RUN_LOOKBACK}",
                [asset_key, node.node_id.split(":", 1)[1]],
            ).fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return None  # no event log yet, or one being created: nothing to link
    for run_id, at, event in rows:
        if _status(event) != "built":
            continue  # "unchanged": an earlier run built what the node holds
        when = datetime.fromisoformat(at) if isinstance(at, str) else at
        if node.built_at is not None and node.built_at > when:
            return None  # rebuilt since, without a run
        return BuildRun(run_id or "", when)
    return None


def _status(event: str) -> str | None:
    """The ``status`` metadata of a stored materialization event (``built``, ...)."""
    try:
        data = json.loads(event)
        entries = data["dagster_event"]["event_specific_data"]["materialization"][
            "metadata_entries"
        ]
    except (ValueError, KeyError, TypeError):
        return None
    for entry in entries:
        if entry.get("label") == "status":
            return entry.get("entry_data", {}).get("text")
    return None
