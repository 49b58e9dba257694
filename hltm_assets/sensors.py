"""The nearline sensor: keep memory fresh as the source of truth changes."""

import json
import time

import dagster as dg

from hltm_assets.partitions import TreePartitions, read_tree
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.indexing.nearline import Request, decide


def _run_request(r: Request, jobs: dict) -> dg.RunRequest:
    tags = {"hltm/trigger": "sensor", "hltm/reason": r.reason[:200]}
    if r.end is None:
        return dg.RunRequest(
            job_name=jobs[r.level].name, partition_key=r.raw_id, run_key=r.run_key, tags=tags
        )
    # A partition-range run, as a single-run backfill launches it.
    tags |= {
        "dagster/asset_partition_range_start": r.raw_id,
        "dagster/asset_partition_range_end": r.end,
    }
    return dg.RunRequest(job_name=jobs[r.level].name, run_key=r.run_key, tags=tags)


def build_sensor(tree: TreePartitions, jobs: dict, interval_s: int) -> dg.SensorDefinition:
    """Requests leaf runs for changed leaves (run keys carry the input hash) and parent runs
    automation missed; skips, saying why, when the tree changed since the location loaded."""

    @dg.sensor(
        name="hltm_sot_changes",
        minimum_interval_seconds=interval_s,
        default_status=dg.DefaultSensorStatus.RUNNING,
        jobs=list(jobs.values()),
        description="Rebuilds the leaves whose documents changed in the source of truth.",
    )
    def hltm_sot_changes(context: dg.SensorEvaluationContext, hltm: dg.ResourceParam[Indexer]):
        settings = hltm.settings
        if not settings.duckdb_path.exists():
            return dg.SkipReason(f"no source of truth at {settings.duckdb_path} yet")
        plan = hltm.plan()
        cursor = json.loads(context.cursor) if context.cursor else {}
        decision = decide(
            plan,
            tree.topology,
            read_tree(settings),
            cursor,
            time.time(),
            order=list(tree.topology.leaves),
        )
        new_cursor = json.dumps(decision.cursor, sort_keys=True)
        if decision.skip_reason:
            context.update_cursor(new_cursor)
            return dg.SkipReason(decision.skip_reason)
        return dg.SensorResult(
            run_requests=[_run_request(r, jobs) for r in decision.requests],
            cursor=new_cursor,
        )

    return hltm_sot_changes
