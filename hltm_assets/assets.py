"""The memory tree: ``project_memory`` -> ``seat_memory`` -> ``account_memory``.

Assets only wire things together: each calls :meth:`Indexer.build` for the partitions of its
run and reports what was built. One run may carry many partitions (a partition range), so
Dagster's per-run overhead is paid once per batch, not once per node.
"""

import contextlib
from collections.abc import Iterator

import dagster as dg

from hltm_assets import progress
from hltm_assets.partitions import TreePartitions
from hltm_assets.resources import HLTMResource
from hltm_resources.build.indexer import BuildReport, Indexer

#: Runs that write the stores share this pool (limit 1 in dagster.yaml): one DuckDB writer.
WRITER_POOL = "hltm_writer"
_POLICY = dg.BackfillPolicy.single_run()


@contextlib.contextmanager
def _progress(context: dg.AssetExecutionContext, level: str, total: int) -> Iterator:
    """A callback counting built nodes: the CLI's bar when there is one, else log lines."""
    cli_bar = progress.sink()
    if cli_bar is not None:
        yield cli_bar
        return
    state = {"done": 0, "next": max(1, total // 10)}

    def tick(n: int) -> None:
        state["done"] += n
        if state["done"] >= state["next"] or state["done"] == total:
            context.log.info(f"{level}: built {state['done']}/{total}")
            state["next"] += max(1, total // 10)

    yield tick


def _result(report: BuildReport, indexer: Indexer) -> dg.MaterializeResult:
    meta = report.metadata(indexer.agents.engine_id, indexer.embedder.model_id)
    if len(report.per_node) == 1:
        meta["node_id"] = report.per_node[0]["node_id"]
    elif report.per_node and len(report.per_node) <= 50:
        meta["per_node"] = dg.MetadataValue.json(report.per_node)
    return dg.MaterializeResult(metadata=meta)


def _mapped_children(context: dg.AssetExecutionContext, upstream: str) -> list[str] | None:
    """The child partitions Dagster maps onto this run's partitions (None if it cannot say,
    e.g. when the upstream asset is not part of the materialized selection)."""
    try:
        return list(context.asset_partition_keys_for_input(upstream))
    except Exception:  # Dagster raises a CheckError when the input has no partitions here
        context.log.warning(
            f"could not resolve {upstream} partitions; skipping the check "
            "that Dagster's mapping matches the source of truth"
        )
        return None


def _build_parents(
    context: dg.AssetExecutionContext, hltm: HLTMResource, level: str, upstream: str
) -> dg.MaterializeResult:
    """Aggregate the run's parent partitions, refusing a stale partition mapping."""
    indexer = hltm.indexer()
    keys = context.partition_keys
    children = _mapped_children(context, upstream)
    with _progress(context, level, len(keys)) as tick:
        report = indexer.build(level, keys, progress=tick, expected_children=children)
    return _result(report, indexer)


def build_assets(tree: TreePartitions) -> list[dg.AssetsDefinition]:
    """The three level assets for this topology."""

    @dg.asset(
        partitions_def=tree.projects,
        backfill_policy=_POLICY,
        pool=WRITER_POOL,
        group_name="memory",
        kinds={"duckdb", "lancedb"},
        description="Leaf memory of each hiring project, built from its documents.",
    )
    def project_memory(context: dg.AssetExecutionContext, hltm: HLTMResource):
        indexer = hltm.indexer()
        keys = context.partition_keys
        with _progress(context, "project", len(keys)) as tick:
            report = indexer.build("project", keys, progress=tick)
        return _result(report, indexer)

    @dg.asset(
        partitions_def=tree.seats,
        deps=[dg.AssetDep(project_memory, partition_mapping=tree.project_to_seat)],
        backfill_policy=_POLICY,
        pool=WRITER_POOL,
        group_name="memory",
        kinds={"duckdb", "lancedb"},
        automation_condition=dg.AutomationCondition.eager(),
        description="Recruiter (seat) memory, aggregated from its projects' memories.",
    )
    def seat_memory(context: dg.AssetExecutionContext, hltm: HLTMResource):
        return _build_parents(context, hltm, "seat", "project_memory")

    @dg.asset(
        partitions_def=tree.accounts,
        deps=[dg.AssetDep(seat_memory, partition_mapping=tree.seat_to_account)],
        backfill_policy=_POLICY,
        pool=WRITER_POOL,
        group_name="memory",
        kinds={"duckdb", "lancedb"},
        automation_condition=dg.AutomationCondition.eager(),
        description="Organization (account) memory, aggregated from its seats' memories.",
    )
    def account_memory(context: dg.AssetExecutionContext, hltm: HLTMResource):
        return _build_parents(context, hltm, "account", "seat_memory")

    return [project_memory, seat_memory, account_memory]
