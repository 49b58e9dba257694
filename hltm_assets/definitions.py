"""The code location: ``dagster dev`` (workspace.yaml) and the CLI both load it from here.

Partitions and mappings are read from the SOT topology when the definitions load, so a topology
change (new, deleted or moved project) needs a code-location reload (``hltm reload`` or the UI's
"Reload definitions"); the CLI builds its definitions fresh on every call.
"""

from __future__ import annotations

import warnings

import dagster as dg

from hltm_assets.adaptation import QUERY_LOG, adaptation_hints, adaptation_job, daily_adaptation
from hltm_assets.assets import build_assets
from hltm_assets.checks import build_checks, build_lossless_check
from hltm_assets.partitions import LEVEL_ASSETS, TreePartitions, read_tree, tree_partitions
from hltm_assets.resources import HLTMResource
from hltm_assets.sensors import build_sensor
from hltm_resources.config import Settings


def level_job_name(level: str) -> str:
    return f"{LEVEL_ASSETS[level]}_job"


def build_definitions(settings: Settings, tree: TreePartitions | None = None) -> dg.Definitions:
    """Assets, checks, one job per level, the sensors and the nightly consistency schedule."""
    tree = tree or tree_partitions(read_tree(settings))
    with warnings.catch_warnings():
        # backfill_policy and pool are marked beta in Dagster 1.13; we rely on both knowingly.
        warnings.simplefilter("ignore", dg.BetaWarning)
        warnings.simplefilter("ignore", dg.PreviewWarning)
        assets = build_assets(tree)
    checks = build_checks(assets)
    lossless = build_lossless_check(assets[2])
    jobs = {
        level: dg.define_asset_job(
            level_job_name(level),
            selection=dg.AssetSelection.assets(asset).without_checks()
            | dg.AssetSelection.checks(check),
            partitions_def=tree.of_level(level),
            description=f"Build {level} memory for a partition range.",
        )
        for level, asset, check in zip(("project", "seat", "account"), assets, checks, strict=True)
    }
    consistency = dg.define_asset_job(
        "hltm_consistency_job",
        selection=dg.AssetSelection.checks(lossless, *checks),
        description="Every node complete, and memory equal to a full rebuild of the SOT.",
    )
    automation = dg.AutomationConditionSensorDefinition(
        "hltm_automation",
        target=dg.AssetSelection.assets(*assets[1:]),
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=30,
        description="Rebuilds seats and accounts after their children change (eager).",
    )
    sensor = build_sensor(tree, jobs)
    nightly = dg.ScheduleDefinition(
        name="hltm_nightly_consistency",
        job=consistency,
        cron_schedule="0 3 * * *",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Nightly: full rebuild into a scratch home, compared node by node.",
    )
    return dg.Definitions(
        assets=[*assets, QUERY_LOG, adaptation_hints],
        asset_checks=[*checks, lossless],
        jobs=[*jobs.values(), consistency, adaptation_job],
        sensors=[automation, sensor],
        schedules=[nightly, daily_adaptation],
        resources={"hltm": HLTMResource.from_settings(settings)},
    )


@dg.definitions
def defs() -> dg.Definitions:
    """Definitions for the home in ``$HLTM_HOME`` (default ``./.hltm``)."""
    return build_definitions(Settings.from_env())
