"""Asset checks: every node of a level has all three views and as many vectors as rows."""


import dagster as dg

from hltm_resources.checks import check_level
from hltm_resources.resources import HLTMResource


def build_checks(assets: list[dg.AssetsDefinition]) -> list[dg.AssetChecksDefinition]:
    """One completeness check per level asset."""
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
                    metadata={"nodes": result.nodes, "nodes_with_problems": len(result.problems),
                              "problems": dg.MetadataValue.json(shown)},
                )

            return memory_complete

        checks.append(make())
    return checks
