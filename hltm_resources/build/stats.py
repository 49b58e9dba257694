"""Counts of what a home holds, per level and per view (for the demo and ``hltm stats``)."""

from __future__ import annotations

from hltm_resources.config import Settings
from hltm_resources.stores import database
from hltm_resources.stores.vectors import TABLES, VectorStore


def tree_stats(settings: Settings) -> dict:
    """Nodes, facets, QA pairs, summaries and vectors per level; where the stores are."""
    with database.connect(settings.duckdb_path, read_only=True) as con:
        sot = {
            t: con.execute(f"SELECT count(*) FROM sot_{t}").fetchone()[0]
            for t in database.sot_tables(settings.schema)
        }
        levels: dict[str, dict[str, int]] = {}
        for level in settings.schema.names:
            row = con.execute(
                """SELECT count(*),
                   (SELECT count(*) FROM memory_facets f JOIN memory_nodes n USING (node_id)
                    WHERE n.level = ?),
                   (SELECT count(*) FROM memory_qa q JOIN memory_nodes n USING (node_id)
                    WHERE n.level = ?),
                   (SELECT count(*) FROM memory_summaries s JOIN memory_nodes n USING (node_id)
                    WHERE n.level = ?)
                   FROM memory_nodes WHERE level = ?""",
                [level, level, level, level],
            ).fetchone()
            levels[level] = {"nodes": row[0], "facets": row[1], "qa": row[2], "summaries": row[3]}
    store = VectorStore(settings.lancedb_path, model_id=None, dim=None)
    vectors = {}
    for name in TABLES:
        counts = store.counts_by_node(name)
        vectors[name] = sum(counts.values())
    models = {name: store.table_model(name)[0] for name in TABLES if store.exists(name)}
    return {
        "sot": sot,
        "levels": levels,
        "vectors": vectors,
        "embed_models": models,
        "duckdb": str(settings.duckdb_path),
        "lancedb": str(settings.lancedb_path),
    }


def format_stats(stats: dict) -> str:
    """A small table of the tree for terminals."""
    lines = [f"{'level':<9}{'nodes':>7}{'facets':>9}{'qa':>7}{'summaries':>11}"]
    for level, c in stats["levels"].items():
        lines.append(f"{level:<9}{c['nodes']:>7}{c['facets']:>9}{c['qa']:>7}{c['summaries']:>11}")
    v = stats["vectors"]
    lines.append(
        f"vectors: facets {v['facets']}, qa {v['qa']}, summaries {v['summaries']} "
        f"({', '.join(sorted(set(stats['embed_models'].values())))})"
    )
    lines.append(
        f"DuckDB:  {stats['duckdb']}  (views memory_nodes, memory_facets, memory_qa, "
        "memory_summaries)"
    )
    lines.append(f"LanceDB: {stats['lancedb']}  (tables facets, qa, summaries)")
    return "\n".join(lines)
