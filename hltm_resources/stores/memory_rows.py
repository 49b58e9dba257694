"""Memory rows in DuckDB: write a batch of node memories, read them back, erase them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from datetime import UTC, datetime

import pyarrow as pa

from hltm_resources.models import Facet, Memory, NodeInfo, Passage, QAPair, Summary

PASSAGE_FIELDS = tuple(f.name for f in fields(Passage))

INVALIDATED = "invalidated"
#: The tables holding what a node's memory says (``mem_nodes`` says what was built).
MEMORY_TABLES = ("mem_facets", "mem_history", "mem_qa", "mem_summaries", "mem_evidence")
#: The leaves a write changed and no build has taken since (journaled with the write, cleared
#: once built): a writer killed in between leaves them for the next one, whose plan covers
#: them too (:mod:`hltm_resources.indexing.writes`).
PENDING = "build_pending"
PENDING_DDL = f"CREATE TABLE IF NOT EXISTS {PENDING} (node_id VARCHAR NOT NULL)"


@dataclass(frozen=True)
class NodeState:
    """What ``mem_nodes`` records about a built node."""

    node_id: str
    level: str
    parent_id: str | None
    path: str
    input_hash: str
    memory_hash: str
    hints_version: int


@dataclass(frozen=True)
class BuildMeta:
    """How a batch was built: engine, embedding model, hints version."""

    engine: str
    embed_model: str
    hints_version: int


def add_pending(con, leaves: Sequence[str]) -> None:
    """Journal ``leaves`` (node ids) as written and not built, in the write's transaction."""
    con.execute(PENDING_DDL)
    if leaves:
        con.executemany(f"INSERT INTO {PENDING} VALUES (?)", [[n] for n in leaves])


def pending_leaves(con) -> list[str]:
    """The leaves a write changed and no build has taken since (node ids)."""
    con.execute(PENDING_DDL)
    return sorted({r[0] for r in con.execute(f"SELECT node_id FROM {PENDING}").fetchall()})


def drop_pending(con, node_ids: Sequence[str]) -> None:
    """Take ``node_ids`` off the journal (built, found current, or erased), if there is one."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    if node_ids and PENDING in tables:
        con.execute(f"DELETE FROM {PENDING} WHERE node_id IN (SELECT unnest(?))", [list(node_ids)])


def read_states(
    con, level: str | None = None, node_ids: Sequence[str] | None = None
) -> dict[str, NodeState]:
    """The stored state of every node (of ``level``, of ``node_ids``, when given)."""
    if node_ids is not None and not node_ids:
        return {}
    where, params = [], []
    if level:
        where.append("level = ?")
        params.append(level)
    if node_ids is not None:
        where.append("node_id IN (SELECT unnest(?))")
        params.append(list(node_ids))
    rows = con.execute(
        "SELECT node_id, level, parent_id, path, input_hash, memory_hash, hints_version "
        "FROM mem_nodes" + (" WHERE " + " AND ".join(where) if where else ""),
        params,
    ).fetchall()
    return {r[0]: NodeState(*r) for r in rows}


def write_memories(
    con,
    items: Sequence[tuple[NodeInfo, Memory, str, int]],
    meta: BuildMeta,
) -> None:
    """Replace the rows of every node in ``items`` (node, memory, input hash, doc count).

    The caller owns the transaction.
    """
    node_ids = [info.node_id for info, *_ in items]
    erase_rows(con, node_ids)
    now = datetime.now(UTC).replace(tzinfo=None)
    nodes = pa.table(
        {
            "node_id": [i.node_id for i, *_ in items],
            "level": [i.level for i, *_ in items],
            "name": [i.name for i, *_ in items],
            "parent_id": [i.parent_id for i, *_ in items],
            "path": [i.path for i, *_ in items],
            "input_hash": [h for _, _, h, _ in items],
            "memory_hash": [m.content_hash() for _, m, _, _ in items],
            "engine": [meta.engine] * len(items),
            "embed_model": [meta.embed_model] * len(items),
            "hints_version": pa.array([meta.hints_version] * len(items), pa.int32()),
            "leaf_count": pa.array([m.leaf_count for _, m, _, _ in items], pa.int32()),
            "doc_count": pa.array([d for *_, d in items], pa.int32()),
            "built_at": pa.array([now] * len(items), pa.timestamp("us")),
        }
    )
    facets: dict[str, list] = {
        c: [] for c in ("node_id", "ord", "key", "value", "support", "source_ids", "valid_from")
    }
    history: dict[str, list] = {
        c: [] for c in ("node_id", "ord", "key", "value", "source_ids", "valid_from", "valid_to")
    }
    qa = {"node_id": [], "ord": [], "question": [], "answer": [], "source_ids": []}
    summaries = {"node_id": [], "detailed": [], "concise": [], "source_ids": []}
    evidence: dict[str, list] = {c: [] for c in ("node_id", "ord", *PASSAGE_FIELDS)}
    for info, memory, _, _ in items:
        for i, p in enumerate(memory.evidence):
            for col, val in zip(evidence, (info.node_id, i, *astuple(p)), strict=True):
                evidence[col].append(val)
        for i, f in enumerate(memory.facets):
            for col, val in zip(
                facets,
                (info.node_id, i, f.key, f.value, f.support, list(f.source_ids), f.valid_from),
                strict=True,
            ):
                facets[col].append(val)
        for i, f in enumerate(memory.history):
            row = (info.node_id, i, f.key, f.value, list(f.source_ids), f.valid_from, f.valid_to)
            for col, val in zip(history, row, strict=True):
                history[col].append(val)
        for i, q in enumerate(memory.qa):
            for col, val in zip(
                qa, (info.node_id, i, q.question, q.answer, list(q.source_ids)), strict=True
            ):
                qa[col].append(val)
        s = memory.summary
        for col, val in zip(
            summaries, (info.node_id, s.detailed, s.concise, list(s.source_ids)), strict=True
        ):
            summaries[col].append(val)
    tables = {
        "mem_nodes": nodes,
        "mem_facets": pa.table(
            facets, schema=_schema(facets, {"ord": pa.int32(), "support": pa.int32()})
        ),
        "mem_history": pa.table(history, schema=_schema(history, {"ord": pa.int32()})),
        "mem_qa": pa.table(qa, schema=_schema(qa, {"ord": pa.int32()})),
        "mem_summaries": pa.table(summaries, schema=_schema(summaries, {})),
        "mem_evidence": pa.table(evidence, schema=_schema(evidence, {"ord": pa.int32()})),
    }
    for name, table in tables.items():
        cols = ", ".join(table.column_names)
        con.register("_hltm_rows", table)
        con.execute(f"INSERT INTO {name} ({cols}) SELECT {cols} FROM _hltm_rows")
        con.unregister("_hltm_rows")


def _schema(columns: dict, overrides: dict) -> pa.Schema:
    fields = []
    for name in columns:
        if name in overrides:
            fields.append(pa.field(name, overrides[name]))
        elif name == "source_ids":
            fields.append(pa.field(name, pa.list_(pa.string())))
        else:
            fields.append(pa.field(name, pa.string()))
    return pa.schema(fields)


def erase_rows(con, node_ids: Sequence[str], invalidate: Sequence[str] = ()) -> None:
    """Delete the memory rows of ``node_ids``; keep ``invalidate`` nodes but drop their content.

    An invalidated node keeps its ``mem_nodes`` row with input hash ``invalidated``, so the
    next index rebuilds it, and until then it holds nothing derived from erased data.
    """
    ids = list(node_ids)
    inv = list(invalidate)
    if ids:
        con.execute("DELETE FROM mem_nodes WHERE node_id IN (SELECT unnest(?))", [ids])
    content = ids + inv
    if content:
        for table in MEMORY_TABLES:
            con.execute(f"DELETE FROM {table} WHERE node_id IN (SELECT unnest(?))", [content])
    if inv:
        con.execute(
            "UPDATE mem_nodes SET input_hash = ?, memory_hash = ? "
            "WHERE node_id IN (SELECT unnest(?))",
            [INVALIDATED, INVALIDATED, inv],
        )


def read_memories(con, node_ids: Sequence[str], evidence: bool = True) -> dict[str, Memory]:
    """Rebuild :class:`Memory` objects from the rows (same content hash as when written);
    without ``evidence``, leaves come without their passages (and another hash)."""
    ids = list(node_ids)
    if not ids:
        return {}
    nodes = {
        r[0]: r[1:]
        for r in con.execute(
            "SELECT node_id, level, leaf_count FROM mem_nodes WHERE node_id IN (SELECT unnest(?))"
            " AND input_hash <> ?",
            [ids, INVALIDATED],
        ).fetchall()
    }

    def rows(table: str, columns: str, make) -> dict[str, list]:
        """Each node's items of ``table`` in their order, each made by ``make`` from its
        ``columns``."""
        out: dict[str, list] = {n: [] for n in nodes}
        for n, *values in con.execute(
            f"SELECT node_id, {columns} FROM {table} "
            "WHERE node_id IN (SELECT unnest(?)) ORDER BY node_id, ord",
            [ids],
        ).fetchall():
            if n in out:
                out[n].append(make(*values))
        return out

    facets = rows(
        "mem_facets",
        "key, value, support, source_ids, valid_from",
        lambda k, v, n, src, since: Facet(k, v, n, tuple(src), since or ""),
    )
    history = rows(
        "mem_history",
        "key, value, source_ids, valid_from, valid_to",
        lambda k, v, src, since, until: Facet(k, v, 1, tuple(src), since or "", until),
    )
    qa = rows("mem_qa", "question, answer, source_ids", lambda q, a, src: QAPair(q, a, tuple(src)))
    passages = (
        rows("mem_evidence", ", ".join(PASSAGE_FIELDS), Passage)
        if evidence
        else {n: [] for n in nodes}
    )
    summaries = {
        n: Summary(d, c, tuple(src))
        for n, d, c, src in con.execute(
            "SELECT node_id, detailed, concise, source_ids FROM mem_summaries "
            "WHERE node_id IN (SELECT unnest(?))",
            [ids],
        ).fetchall()
    }
    out = {}
    for n, (level, leaf_count) in nodes.items():
        if n in summaries:
            out[n] = Memory(
                n,
                level,
                tuple(facets[n]),
                tuple(qa[n]),
                summaries[n],
                leaf_count,
                evidence=tuple(passages[n]),
                history=tuple(history[n]),
            )
    return out


def evidence_counts(con, node_ids: Sequence[str]) -> dict[str, int]:
    """How many evidence passages each of ``node_ids`` has (those with any)."""
    return dict(
        con.execute(
            "SELECT node_id, count(*) FROM mem_evidence WHERE node_id IN (SELECT unnest(?)) "
            "GROUP BY node_id",
            [list(node_ids)],
        ).fetchall()
    )
