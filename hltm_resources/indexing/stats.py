"""Counts of what a home holds, per level and per view (for the demo and ``hltm stats``)."""

from __future__ import annotations

from hltm_resources.config import Settings
from hltm_resources.stores import database
from hltm_resources.stores.vectors import TABLES, VectorStore

#: The public views of memory items, one per memory view.
VIEWS = ("facets", "qa", "summaries", "evidence")


def tree_stats(settings: Settings) -> dict:
    """Nodes, facets, QA pairs, summaries and vectors per level; where the stores are."""
    with database.connect(settings.duckdb_path, read_only=True) as con:
        sot = {
            t: con.execute(f"SELECT count(*) FROM sot_{t}").fetchone()[0]
            for t in database.sot_tables(settings.schema)
        }
        levels: dict[str, dict[str, int]] = {}
        for level in settings.schema.names:
            counts = {
                "nodes": con.execute(
                    "SELECT count(*) FROM memory_nodes WHERE level = ?", [level]
                ).fetchone()[0]
            }
            for view in VIEWS:
                counts[view] = con.execute(
                    f"SELECT count(*) FROM memory_{view} v JOIN memory_nodes n USING (node_id) "
                    "WHERE n.level = ?",
                    [level],
                ).fetchone()[0]
            levels[level] = counts
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
    lines = [f"{'level':<9}{'nodes':>7}" + "".join(f"{v:>11}" for v in VIEWS)]
    for level, c in stats["levels"].items():
        lines.append(f"{level:<9}{c['nodes']:>7}" + "".join(f"{c[v]:>11}" for v in VIEWS))
    v = stats["vectors"]
    models = ", ".join(sorted(set(stats["embed_models"].values())))
    lines.append("vectors: " + ", ".join(f"{name} {v[name]}" for name in TABLES) + f" ({models})")
    views = ", ".join(f"memory_{view}" for view in ("nodes", *VIEWS))
    lines.append(f"DuckDB:  {stats['duckdb']}  (views {views})")
    lines.append(f"LanceDB: {stats['lancedb']}  (tables {', '.join(TABLES)})")
    return "\n".join(lines)
