"""What the Dagster UI shows about each level's asset before any run: where its memory lives,
the columns of the SQL views users query, the code that builds it, its owners and tags.

Set ``HLTM_GIT_URL`` (and ``HLTM_GIT_BRANCH``, default ``main``) to turn the code references
into links to the source on a git host; without them they are the local files.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import dagster as dg
import duckdb

from hltm_resources.config import Settings
from hltm_resources.engines import MemoryAgents
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.stores.database import MEMORY_SCHEMA
from hltm_resources.stores.vectors import TABLES

#: The repository root, which code references are relative to on a git host.
ROOT = Path(__file__).resolve().parents[1]
OWNERS = ["team:hltm"]
#: The SQL views of the memory, one row per node (the first) or per item of a view.
VIEWS = (
    "memory_nodes",
    "memory_facets",
    "memory_facet_history",
    "memory_qa",
    "memory_summaries",
    "memory_evidence",
)


@functools.cache
def view_columns() -> dict[str, tuple[tuple[str, str], ...]]:
    """Each memory view's columns and types, as DuckDB declares them."""
    con = duckdb.connect(":memory:")
    try:
        con.execute(MEMORY_SCHEMA)
        return {
            view: tuple((r[0], r[1]) for r in con.execute(f"DESCRIBE {view}").fetchall())
            for view in VIEWS
        }
    finally:
        con.close()


def _reference(fn: Callable, label: str) -> dg.LocalFileCodeReference:
    fn = inspect.unwrap(fn)
    return dg.LocalFileCodeReference(
        file_path=inspect.getsourcefile(fn),
        line_number=inspect.getsourcelines(fn)[1],
        label=label,
    )


def code_references(leaf: bool, body: Callable) -> dg.CodeReferencesMetadataValue:
    """The asset ``body``, the indexer it calls and the engine step that makes the memory."""
    step = MemoryAgents.build_leaf if leaf else MemoryAgents.aggregate
    return dg.CodeReferencesMetadataValue(
        code_references=[
            _reference(body, "asset body"),
            _reference(Indexer.build, "Indexer.build"),
            _reference(step, f"MemoryAgents.{step.__name__}"),
        ]
    )


def asset_metadata(settings: Settings, level: str, body: Callable) -> dict:
    """The definition metadata of one level's asset, whose partitions ``body`` builds."""
    schema = settings.schema
    columns = view_columns()
    nodes = dg.TableSchema(columns=[dg.TableColumn(n, t) for n, t in columns["memory_nodes"]])
    views = "\n".join(
        ["| view | columns |", "| --- | --- |"]
        + [f"| `{v}` | {', '.join(n for n, _ in cols)} |" for v, cols in columns.items()]
    )
    example = (
        "```sql\nSELECT key, value, support FROM memory_facets\n"
        f"WHERE node_id = '{level}:<partition key>' ORDER BY support DESC;\n```"
    )
    return {
        "dagster/column_schema": nodes,
        "dagster/table_name": "memory_nodes",
        "dagster/code_references": code_references(schema.is_leaf(level), body),
        "views": dg.MetadataValue.md(
            f"One row per {schema.level(level).noun} in `memory_nodes`, its items in the "
            f"other views (DuckDB, read-only):\n\n{views}\n\n{example}"
        ),
        "duckdb_path": dg.MetadataValue.path(str(settings.duckdb_path)),
        "lancedb_path": dg.MetadataValue.path(str(settings.lancedb_path)),
        "lancedb_tables": ", ".join(TABLES),
    }


def asset_tags(level: str) -> dict[str, str]:
    return {"hltm/level": level, "domain": "memory"}


def linked_to_git(assets: Sequence[dg.AssetsDefinition]) -> Sequence[dg.AssetsDefinition]:
    """``assets`` with their code references as links to ``HLTM_GIT_URL`` when it is set."""
    url = os.environ.get("HLTM_GIT_URL")
    if not url:
        return assets
    return dg.link_code_references_to_git(
        assets,
        git_url=url,
        git_branch=os.environ.get("HLTM_GIT_BRANCH", "main"),
        file_path_mapping=dg.AnchorBasedFilePathMapping(
            local_file_anchor=ROOT, file_anchor_path_in_repository=""
        ),
    )
