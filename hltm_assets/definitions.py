"""The code location: ``dagster dev`` (workspace.yaml) and the CLI both load it from here.

One asset, job and completeness check per level of the tree schema. Partitions and mappings
are read from the SOT topology when the definitions load, so a topology change (new, deleted or
moved node) needs a code-location reload (``hltm reload`` or the UI's "Reload definitions");
the CLI builds its definitions fresh on every call.

Every job runs its steps in the run's process (``in_process_executor``). Writers of a home
take turns under its writer lock, so a process per step (Dagster's default for a run that the
UI, the sensor or automation launches) builds nothing in parallel; it only adds the start-up
of a Python process with Dagster and the engine to every step.
"""

from __future__ import annotations

import warnings

import dagster as dg

from hltm_assets.adaptation import QUERY_LOG, adaptation_hints, adaptation_job, daily_adaptation
from hltm_assets.assets import build_assets
from hltm_assets.checks import build_checks, build_lossless_check
from hltm_assets.partitions import TreePartitions, read_tree, tree_partitions
from hltm_assets.resources import HLTMResource
from hltm_assets.sensors import build_sensor
from hltm_resources.config import Settings
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.schema import Level


def level_job_name(level: str) -> str:
    """The job that builds partitions of one level: its asset's name + ``_job``."""
    return f"{Level(level).asset}_job"


def build_definitions(
    settings: Settings, tree: TreePartitions | None = None, indexer: Indexer | None = None
) -> dg.Definitions:
    """Assets, checks, one job per level, the sensors and the nightly consistency schedule.

    ``indexer``: the Indexer in-process runs build with (the CLI's); without one, each run
    makes its own from the ``hltm`` resource's settings.
    """
    schema = settings.schema
    tree = tree or tree_partitions(read_tree(settings))
    with warnings.catch_warnings():
        # backfill_policy and pool are marked beta in Dagster 1.13; we rely on both knowingly.
        warnings.simplefilter("ignore", dg.BetaWarning)
        warnings.simplefilter("ignore", dg.PreviewWarning)
        assets = build_assets(settings, tree)
    levels = schema.bottom_up
    checks = build_checks(assets, levels)
    lossless = build_lossless_check(assets[-1])
    jobs = {
        level: dg.define_asset_job(
            level_job_name(level),
            selection=dg.AssetSelection.assets(asset).without_checks()
            | dg.AssetSelection.checks(check),
            partitions_def=tree.of_level(level),
            description=f"Build {level} memory for a partition range.",
        )
        for level, asset, check in zip(levels, assets, checks, strict=True)
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
        minimum_interval_seconds=settings.sensor_interval_s,
        # Runs, not a backfill, when a tick requests several partitions of one level: the
        # backfill daemon launches a backfill's runs only every 30 s.
        emit_backfills=False,
        description="Rebuilds every parent after its children change (eager).",
    )
    nightly = dg.ScheduleDefinition(
        name="hltm_nightly_consistency",
        job=consistency,
        cron_schedule="0 3 * * *",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Nightly: full rebuild into a scratch home, compared node by node.",
    )
    return dg.Definitions(
        executor=dg.in_process_executor,  # the default of every job here, the level jobs too
        assets=[*assets, QUERY_LOG, adaptation_hints],
        asset_checks=[*checks, lossless],
        jobs=[*jobs.values(), consistency, adaptation_job],
        sensors=[automation, build_sensor(tree, jobs, settings.sensor_interval_s)],
        schedules=[nightly, daily_adaptation],
        resources={
            "hltm": indexer if indexer is not None else HLTMResource.from_settings(settings)
        },
    )


@dg.definitions
def defs() -> dg.Definitions:
    """Definitions for the home in ``$HLTM_HOME`` (default ``./.hltm``), tree in ``$HLTM_TREE``."""
    return build_definitions(Settings.from_env())


#: Where a run launched onto the workers finds its definitions: ``defs_for_<tree fingerprint>``
#: of this module (:func:`__getattr__`). Dagster keeps the last job it reconstructed per
#: process, keyed by where the job came from; a name per tree makes a long-lived worker build
#: a run's definitions again once the tree its coordinator planned from is another one.
TREE_DEFS_PREFIX = "defs_for_"


def tree_defs_name(tree: TreePartitions) -> str:
    """The attribute naming the definitions of ``tree`` (see :data:`TREE_DEFS_PREFIX`)."""
    return TREE_DEFS_PREFIX + tree.fingerprint


def __getattr__(name: str) -> dg.Definitions:
    if name.startswith(TREE_DEFS_PREFIX):
        # The source of truth's tree now: a run checks it is the one it was launched for.
        return build_definitions(Settings.from_env())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
