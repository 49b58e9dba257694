"""Asset checks: every node of a level has all three views and matching vectors; and the
memory equals a full rebuild of the current source of truth (the nightly consistency check)."""

import dagster as dg

from hltm_assets.resources import HLTMResource
from hltm_resources.build.checks import check_level
from hltm_resources.build.verify import verify


def build_checks(assets: list[dg.AssetsDefinition]) -> list[dg.AssetChecksDefinition]:
    """One completeness check per level asset (run with every materialization)."""
    checks = []
    for asset, level in zip(assets, ("project", "seat", "account"), strict=True):

        def make(level: str = level, asset: dg.AssetsDefinition = asset):
            @dg.asset_check(
                asset=asset,
                name="memory_complete",
                description=f"Every {level} has facets, QA pairs, a summary and matching vectors.",
            )
            def memory_complete(hltm: HLTMResource) -> dg.AssetCheckResult:
                result = check_level(hltm.settings(), level)
                shown = dict(sorted(result.problems.items())[:20])
                return dg.AssetCheckResult(
                    passed=result.passed,
                    metadata={
                        "nodes": result.nodes,
                        "nodes_with_problems": len(result.problems),
                        "problems": dg.MetadataValue.json(shown),
                    },
                )

            return memory_complete

        checks.append(make())
    return checks


def build_lossless_check(account_asset: dg.AssetsDefinition) -> dg.AssetChecksDefinition:
    """Rebuild everything into a scratch home and compare node by node (expensive: it runs on
    the nightly schedule, not with every materialization)."""

    @dg.asset_check(
        asset=account_asset,
        name="memory_equals_full_rebuild",
        description="Incrementally maintained memory equals a full rebuild of the current SOT "
        "(byte-identical with the deterministic engine), and vectors match rows.",
    )
    def memory_equals_full_rebuild(hltm: HLTMResource) -> dg.AssetCheckResult:
        report = verify(hltm.settings())
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
