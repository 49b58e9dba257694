"""Asset checks: every node a run built has all three views and matching vectors; and the
memory equals a full rebuild of the current source of truth (the nightly consistency check)."""

from collections.abc import Mapping

import dagster as dg

from hltm_assets.history import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    PARTITION_TAG,
)
from hltm_resources.indexing.checks import check_level
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.indexing.verify import verify


def completeness_check(asset: dg.AssetsDefinition, level: str) -> dg.AssetChecksDefinition:
    """Every node of ``level`` that the run built (its partition range) has facets, QA pairs, a
    summary and matching vectors."""

    @dg.asset_check(
        asset=asset,
        name="memory_complete",
        description=f"Every {level} has facets, QA pairs, a summary and matching vectors.",
    )
    def memory_complete(
        context: dg.AssetCheckExecutionContext, hltm: dg.ResourceParam[Indexer]
    ) -> dg.AssetCheckResult:
        built = run_key_range(context.op_execution_context.run.tags)
        result = check_level(hltm.settings, level, built, topology=hltm.pinned_topology)
        shown = dict(sorted(result.problems.items())[:20])
        return dg.AssetCheckResult(
            passed=result.passed,
            metadata={
                "partitions": "every one" if built is None else "..".join(dict.fromkeys(built)),
                "nodes": result.nodes,
                "nodes_with_problems": len(result.problems),
                "problems": dg.MetadataValue.json(shown),
            },
        )

    return memory_complete


def run_key_range(tags: Mapping[str, str]) -> tuple[str, str] | None:
    """The partitions a run materialized, from its tags (None: a run of no partition, such as
    the consistency job, checks the whole level)."""
    if ASSET_PARTITION_RANGE_START_TAG in tags:
        return tags[ASSET_PARTITION_RANGE_START_TAG], tags[ASSET_PARTITION_RANGE_END_TAG]
    if PARTITION_TAG in tags:
        return tags[PARTITION_TAG], tags[PARTITION_TAG]
    return None


def build_checks(
    assets: list[dg.AssetsDefinition], levels: tuple[str, ...]
) -> list[dg.AssetChecksDefinition]:
    """One completeness check per level asset (run with every materialization)."""
    return [completeness_check(a, level) for a, level in zip(assets, levels, strict=True)]


#: The lossless check's automation condition: never true. A check of an asset that has no
#: condition of its own runs with every automated materialization of its asset, so without one
#: the full rebuild would run with every automated account build; with one, only the checks
#: without a condition (completeness) ride along, and this one runs on the nightly schedule.
NIGHTLY_ONLY = (dg.AutomationCondition.missing() & ~dg.AutomationCondition.missing()).with_label(
    "never by automation: the nightly schedule runs it"
)


def build_lossless_check(root_asset: dg.AssetsDefinition) -> dg.AssetChecksDefinition:
    """Rebuild everything into a scratch home and compare node by node (expensive: it runs on
    the nightly schedule, not with every materialization)."""

    @dg.asset_check(
        asset=root_asset,
        name="memory_equals_full_rebuild",
        automation_condition=NIGHTLY_ONLY,
        description="Incrementally maintained memory equals a full rebuild of the current SOT "
        "(byte-identical with the deterministic engine), and vectors match rows.",
    )
    def memory_equals_full_rebuild(hltm: dg.ResourceParam[Indexer]) -> dg.AssetCheckResult:
        report = verify(hltm.settings)
        shown = dict(sorted({**report.differences, **report.vector_mismatches}.items())[:30])
        return dg.AssetCheckResult(
            passed=report.ok,
            metadata={
                "nodes": report.nodes,
                "identical_nodes": report.identical,
                "differing_nodes": len(report.differences),
                "vector_mismatches": len(report.vector_mismatches),
                "differences": dg.MetadataValue.json(shown),
            },
        )

    return memory_equals_full_rebuild
