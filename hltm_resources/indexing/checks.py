"""Invariants of built memory, used by the asset checks and ``hltm check``."""

from __future__ import annotations

from dataclasses import dataclass

from hltm_resources.config import Settings
from hltm_resources.indexing.erasure import erasure_pending
from hltm_resources.models import Topology
from hltm_resources.stores import database
from hltm_resources.stores.sot import read_topology
from hltm_resources.stores.vectors import TABLES, VectorStore, node_filter

_VIEW_OF = {
    "facets": "mem_facets",
    "qa": "mem_qa",
    "summaries": "mem_summaries",
    "evidence": "mem_evidence",
}


@dataclass(frozen=True)
class CheckResult:
    level: str
    nodes: int
    problems: dict[str, str]

    @property
    def passed(self) -> bool:
        return not self.problems


def check_level(
    settings: Settings,
    level: str,
    key_range: tuple[str, str] | None = None,
    topology: Topology | None = None,
) -> CheckResult:
    """Every node of ``level`` has facets, QA pairs and a summary (a leaf with documents also
    evidence passages), and as many vectors as rows in each view.

    ``key_range`` (first and last raw id, in partition order): only the nodes of that range,
    what one Dagster run built; a run's check then costs what the run built, not the level.
    ``topology``: the tree of an index run that pinned it (see :meth:`Indexer.pinned`; the run
    holds the writer lock, so no erasure can be pending either).
    """
    with database.connect(settings.duckdb_path, read_only=True) as con:
        tree = topology if topology is not None else read_topology(con, settings.schema)
        raw = list(tree.level(level).values())
        if key_range is not None:
            position = {n.raw_id: i for i, n in enumerate(raw)}
            first, last = (position.get(k) for k in key_range)
            raw = raw[first : last + 1] if first is not None and last is not None else []
        nodes = [n.node_id for n in raw]
        con.execute("CREATE TEMP TABLE checked (node_id VARCHAR, raw_id VARCHAR)")
        con.executemany("INSERT INTO checked VALUES (?, ?)", [[n.node_id, n.raw_id] for n in raw])
        built = {
            r[0]
            for r in con.execute(
                "SELECT node_id FROM mem_nodes JOIN checked USING (node_id) "
                "WHERE level = ? AND input_hash <> 'invalidated'",
                [level],
            ).fetchall()
        }
        documents = dict(
            con.execute(
                f"SELECT {settings.schema.leaf.id_field}, count(*) FROM sot_documents "
                f"WHERE {settings.schema.leaf.id_field} IN (SELECT raw_id FROM checked) "
                "GROUP BY 1"
            ).fetchall()
        )
        rows = {
            view: dict(
                con.execute(
                    f"SELECT node_id, count(*) FROM {table} JOIN checked USING (node_id) "
                    "GROUP BY node_id"
                ).fetchall()
            )
            for view, table in _VIEW_OF.items()
        }
    store = VectorStore(settings.lancedb_path, model_id=None, dim=None)
    only = node_filter(nodes) if key_range is not None and nodes else None
    vectors = {name: store.counts_by_node(name, only) for name in TABLES}
    problems: dict[str, str] = {}
    for node in nodes:
        issues = []
        if node not in built:
            issues.append("not built")
        for view in TABLES:
            n_rows = rows[view].get(node, 0)
            n_vec = vectors[view].get(node, 0)
            needed = view != "evidence" or documents.get(node.split(":", 1)[1], 0) > 0
            if n_rows == 0 and needed and (view != "evidence" or settings.schema.is_leaf(level)):
                issues.append(f"no {view}")
            if n_rows != n_vec:
                issues.append(f"{view}: {n_rows} rows but {n_vec} vectors")
        if issues:
            problems[node] = "; ".join(issues)
    if topology is None and settings.schema.is_leaf(level) and erasure_pending(settings):
        problems["erasure"] = (
            "an erasure was recorded and is not complete in every store: run hltm index "
            "(or load, delete, verify) to finish it"
        )
    return CheckResult(level, len(nodes), problems)
