"""The memory tree as assets, one per level of the tree schema (``project_memory`` ->
``seat_memory`` -> ``account_memory`` by default), made by one factory.

Assets only wire things together: each calls :meth:`Indexer.build` for the partitions of its
run and reports what was built. One run may carry many partitions (a partition range), so
Dagster's per-run overhead is paid once per batch, not once per node. ``hltm index`` runs a
parent's whole range of children to rebuild a few of them (Dagster runs no scattered set of
partitions); its runs carry :data:`ONLY_CHANGED_TAG`, and the others in the range, whose
memory is current, are left as they are and recorded with ``status: unchanged``. A partition
carries its own metadata (its node, what it holds; in runs of up to
:data:`OWN_METADATA_MAX_PARTITIONS` partitions) next to the batch's (``batch``).
"""

import contextlib
from collections.abc import Iterator

import dagster as dg

from hltm_assets import progress
from hltm_assets.partitions import TreePartitions
from hltm_resources.build.indexer import BuildReport, Indexer
from hltm_resources.ids import node_id
from hltm_resources.stores.lock import home_lock

#: Runs that write the stores share this pool (limit 1 in dagster.yaml): one DuckDB writer.
WRITER_POOL = "hltm_writer"
#: How long a run launched by Dagster waits for another writer of the home (a load, an
#: ``hltm index``) before it fails; ``hltm index`` runs its own runs under the lock it holds.
RUN_LOCK_WAIT_S = 900.0
_POLICY = dg.BackfillPolicy.single_run()
#: A run with this tag ("true") builds only the nodes of its range whose memory is not current;
#: without it (the UI, the sensor, automation) every partition of the run is rebuilt.
ONLY_CHANGED_TAG = "hltm/only-changed"


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


#: Runs of at most this many partitions record each partition's own metadata. Dagster's
#: ``add_asset_metadata(partition_key=...)`` lists the run's partition range and copies every
#: partition's metadata so far on each call, so a call per partition grows with the square of
#: the range: 7,173 calls took 5.8 s of a 1 % churn at 10k (cProfile), and a full build's
#: range of 100k partitions would take hours. Larger runs carry the batch's metadata only.
OWN_METADATA_MAX_PARTITIONS = 256


def _result(
    context: dg.AssetExecutionContext, report: BuildReport, indexer: Indexer, level: str
) -> dg.MaterializeResult:
    """The batch's metadata on every partition of the run, and each partition's own (runs of
    up to :data:`OWN_METADATA_MAX_PARTITIONS` partitions)."""
    keys = context.partition_keys
    if len(keys) <= OWN_METADATA_MAX_PARTITIONS:
        own = report.node_metadata()
        for key in keys:
            node = own.get(node_id(level, key))
            if node is not None:
                context.add_asset_metadata(node, partition_key=key)
    meta = report.metadata(indexer.agents.engine_id, indexer.embedder.model_id)
    meta["batch"] = dg.MetadataValue.json(meta["batch"])
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


def build_level(
    context: dg.AssetExecutionContext, hltm: Indexer, level: str, child_asset: str | None
) -> dg.MaterializeResult:
    """Build the run's partitions of ``level`` (only the stale ones with
    :data:`ONLY_CHANGED_TAG`); a parent level refuses a stale mapping."""
    keys = context.partition_keys
    children = _mapped_children(context, child_asset) if child_asset else None
    only_changed = context.run.tags.get(ONLY_CHANGED_TAG) == "true"
    with (
        home_lock(hltm.settings.home, "index (Dagster run)", wait_s=RUN_LOCK_WAIT_S),
        _progress(context, level, len(keys)) as tick,
    ):
        report = hltm.build(
            level, keys, progress=tick, expected_children=children, only_changed=only_changed
        )
    return _result(context, report, hltm, level)


def level_asset(
    tree: TreePartitions, level: str, child: dg.AssetsDefinition | None
) -> dg.AssetsDefinition:
    """The asset of one level: partitioned per node, fed by its child level's asset."""
    schema = tree.topology.schema
    lv = schema.level(level)
    deps = []
    if child is not None:
        mapping = tree.to_parent[schema.child(level).name]
        deps = [dg.AssetDep(child, partition_mapping=mapping)]
    if schema.is_leaf(level):
        description = f"Leaf memory of each {lv.noun}, built from its documents."
    else:
        description = (
            f"{lv.noun.capitalize()} ({level}) memory, aggregated from its "
            f"{schema.child(level).plural}' memories."
        )

    @dg.asset(
        name=lv.asset,
        partitions_def=tree.of_level(level),
        deps=deps,
        backfill_policy=_POLICY,
        pool=WRITER_POOL,
        group_name="memory",
        kinds={"duckdb", "lancedb"},
        automation_condition=None if child is None else dg.AutomationCondition.eager(),
        description=description,
    )
    def memory(context: dg.AssetExecutionContext, hltm: dg.ResourceParam[Indexer]):
        return build_level(context, hltm, level, child.key.to_user_string() if child else None)

    return memory


def build_assets(tree: TreePartitions) -> list[dg.AssetsDefinition]:
    """One asset per level, leaves first."""
    assets: list[dg.AssetsDefinition] = []
    for level in tree.topology.schema.bottom_up:
        assets.append(level_asset(tree, level, assets[-1] if assets else None))
    return assets
