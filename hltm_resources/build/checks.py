"""Invariants of built memory, used by the asset checks and ``hltm check``."""

from __future__ import annotations

from dataclasses import dataclass

from hltm_resources.build.erasure import erasure_pending
from hltm_resources.config import Settings
from hltm_resources.stores import database
from hltm_resources.stores.sot import read_topology
from hltm_resources.stores.vectors import TABLES, VectorStore

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


def check_level(settings: Settings, level: str) -> CheckResult:
    """Every node of ``level`` has facets, QA pairs and a summary (a leaf with documents also
    evidence passages), and as many vectors as rows in each view."""
    with database.connect(settings.duckdb_path, read_only=True) as con:
        nodes = [n.node_id for n in read_topology(con, settings.schema).level(level).values()]
        built = {
            r[0]
            for r in con.execute(
                "SELECT node_id FROM mem_nodes WHERE level = ? AND input_hash <> 'invalidated'",
                [level],
            ).fetchall()
        }
        documents = dict(
            con.execute(
                f"SELECT {settings.schema.leaf.id_field}, count(*) FROM sot_documents GROUP BY 1"
            ).fetchall()
        )
        rows = {
            view: dict(
                con.execute(f"SELECT node_id, count(*) FROM {table} GROUP BY node_id").fetchall()
            )
            for view, table in _VIEW_OF.items()
        }
    store = VectorStore(settings.lancedb_path, model_id=None, dim=None)
    vectors = {name: store.counts_by_node(name) for name in TABLES}
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
    if settings.schema.is_leaf(level) and erasure_pending(settings):
        problems["erasure"] = (
            "an erasure was recorded and is not complete in every store: run hltm index "
            "(or load, delete, verify) to finish it"
        )
    return CheckResult(level, len(nodes), problems)
