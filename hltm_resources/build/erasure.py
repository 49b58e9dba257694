"""Erasing nodes everywhere they leave a trace: memory rows, vectors (every version), caches,
the query log.
"""

from __future__ import annotations

from collections.abc import Sequence

from hltm_resources.config import Settings
from hltm_resources.stores.memory_rows import erase_rows
from hltm_resources.stores.vectors import VectorStore


def scrub_database(
    con, gone: Sequence[str], invalidate: Sequence[str], deleted_projects: Sequence[str] = ()
) -> None:
    """Inside the caller's transaction: drop memory rows of ``gone``, empty ``invalidate``,
    and drop query-log rows scoped to or citing any of ``gone``/``deleted_projects``."""
    erase_rows(con, gone, invalidate)
    nodes = sorted(set(gone) | set(deleted_projects))
    if nodes:
        con.execute(
            "DELETE FROM query_log WHERE scope IN (SELECT unnest(?)) "
            "OR list_has_any(references_, ?)",
            [nodes, nodes],
        )


def erase_everywhere(settings: Settings, node_ids: Sequence[str]) -> None:
    """Remove vectors (and their old table versions) and cached LLM outputs of ``node_ids``."""
    store = VectorStore(settings.lancedb_path, model_id=None, dim=None)
    if node_ids:
        store.delete_nodes(node_ids)
    store.purge_history()
    from hltm_resources.stores.llm_cache import purge_nodes

    purge_nodes(settings, node_ids)
