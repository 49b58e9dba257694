"""What one node's memory says, in a few lines of markdown: the preview a node's partition
carries in Dagster (its one-sentence summary, its best-supported facets as "X of N <leaves>",
a few QA pairs), every item with the ids it comes from."""

from __future__ import annotations

from hltm_resources.models import Memory, NodeInfo
from hltm_resources.schema import TreeSchema
from hltm_resources.text import collapse_ws, plural_s

#: How many facets and QA pairs a preview shows, and provenance ids per item.
PREVIEW_FACETS = 5
PREVIEW_QA = 3
PREVIEW_SOURCES = 3


def _sources(ids: tuple[str, ...]) -> str:
    shown = ", ".join(f"`{i}`" for i in ids[:PREVIEW_SOURCES])
    more = len(ids) - PREVIEW_SOURCES
    return shown + (f" and {more} more" if more > 0 else "")


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell (memory text comes from user documents)."""
    return collapse_ws(text).replace("|", "\\|")


def support_text(support: int, leaf_count: int, schema: TreeSchema) -> str:
    """``9 of 12 projects`` (in the leaf level's noun)."""
    return f"{support} of {plural_s(leaf_count, schema.leaf.noun)}"


def memory_preview(node: NodeInfo, memory: Memory, schema: TreeSchema) -> str:
    """The markdown preview of ``node``'s ``memory``."""
    size = "" if memory.level == schema.leaf.name else f", {memory.leaf_count} {schema.leaf.nouns}"
    lines = [
        f"**{node.name}** ({node.node_id}{size})",
        "",
        f"> {_cell(memory.summary.concise)}",
        "",
    ]
    # The count of leaves is a facet too (``project_count: 12``): the heading says it.
    facets = [f for f in memory.facets if f.key != schema.leaf_count_key]
    if facets:
        top = sorted(facets, key=lambda f: -f.support)[:PREVIEW_FACETS]
        lines += ["| facet | support | from |", "| --- | --- | --- |"]
        lines += [
            f"| {_cell(f.text)} | {support_text(f.support, memory.leaf_count, schema)} "
            f"| {_sources(f.source_ids)} |"
            for f in top
        ]
        if len(facets) > len(top):
            lines.append(f"\n{len(facets) - len(top)} more facets.")
        lines.append("")
    for qa in memory.qa[:PREVIEW_QA]:
        lines.append(
            f"- **{_cell(qa.question)}** {_cell(qa.answer)} (from {_sources(qa.source_ids)})"
        )
    if len(memory.qa) > PREVIEW_QA:
        lines.append(f"- {len(memory.qa) - PREVIEW_QA} more QA pairs.")
    return "\n".join(lines).rstrip() + "\n"
