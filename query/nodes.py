"""What the memory holds about a node, read from a home's DuckDB views: the node as
``mem_nodes`` records it, its facets, QA pairs and summary, its children, and (leaves) its
documents in the source of truth. The inspector's pages and the service's JSON API read
through these; each takes an open connection and binds every value as a parameter.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from hltm_resources.ids import make_path
from hltm_resources.ids import node_id as make_node_id
from hltm_resources.schema import TreeSchema
from hltm_resources.stores.memory_rows import INVALIDATED

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
