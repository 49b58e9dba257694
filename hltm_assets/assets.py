"""The memory tree as assets, one per level of the tree schema (``project_memory`` ->
``seat_memory`` -> ``account_memory`` by default), made by one factory.

Assets only wire things together: each calls :meth:`Indexer.build` for the partitions of its
run and reports what was built. One run may carry many partitions (a partition range), so
Dagster's per-run overhead is paid once per batch, not once per node. ``hltm index`` runs a
parent's whole range of children to rebuild a few of them (Dagster runs no scattered set of
partitions); its runs carry :data:`ONLY_CHANGED_TAG`, and the others in the range, whose
memory is current, are left as they are and recorded with ``status: unchanged``. Every
partition carries its own metadata (its node, what it holds, what building it cost, a preview)
next to the batch's (``batch``).
"""

import contextlib
from collections.abc import Iterator

import dagster as dg
from dagster._core.execution.context.metadata_logging import (
    AssetMetadataHandle,
    OutputMetadataAccumulator,
)

from hltm_assets import progress
from hltm_assets.catalog import OWNERS, asset_metadata, asset_tags, linked_to_git
from hltm_assets.partitions import TreePartitions
from hltm_resources.config import Settings
from hltm_resources.indexing.indexer import BuildReport, Indexer, StaleTopologyError
from hltm_resources.stores.lock import run_lock

#: Runs that write the stores share this pool (limit 1 in dagster.yaml): one DuckDB writer.
WRITER_POOL = "hltm_writer"
#: How long a run launched by Dagster waits for another writer of the home (a load, an
#: ``hltm index``) before it fails; ``hltm index`` runs its own runs under the lock it holds.
RUN_LOCK_WAIT_S = 900.0
_POLICY = dg.BackfillPolicy.single_run()
#: A run with this tag ("true") builds only the nodes of its range whose memory is not current;
#: without it (the UI, the sensor, automation) every partition of the run is rebuilt.
ONLY_CHANGED_TAG = "hltm/only-changed"
#: An op tag on each level's asset: the fingerprint of the tree its definitions were made from.
TREE_TAG = "hltm/tree"


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


def _own_metadata(entry: dict, run: dict) -> dict:
    """One node's entry (:func:`node_entry`) as the metadata of its partition, the run's
    (``run``) after it: who it is, its preview (markdown), its counts, its rows in the memory
    views as ``dagster/row_count``, and what building it cost."""
    meta = {k: entry[k] for k in ("node_id", "name", "status")}
    meta["preview"] = dg.MetadataValue.md(entry["preview"])
    meta |= {k: v for k, v in entry.items() if k not in meta and k not in ("rows", "preview")}
    meta["dagster/row_count"] = dg.MetadataValue.int(entry["rows"])
    return meta | run


def add_partition_metadata(context: dg.AssetExecutionContext, own: dict[str, dict]) -> None:
    """What ``context.add_asset_metadata(meta, partition_key=key)`` does for each partition
    in ``own``, done once for all of them.

    Dagster's call lists the run's partition range and copies the metadata of every partition
    so far on each call, so a call per partition grows with the square of the range (7,173
    calls took 5.8 s of a 1 % churn at 10k; a full build's range of 100k partitions would
    take hours). This puts the same entries into the step's metadata accumulator in one go.
    It uses Dagster 1.13's internals (pinned in pyproject.toml); tests/test_partition_metadata.py
    checks that every partition of a range run carries its own metadata.
    """
    step = context.op_execution_context._step_execution_context
    entries = {
        AssetMetadataHandle(asset_key=context.asset_key, partition_key=key): meta
        for key, meta in own.items()
    }
    step._metadata_accumulator = OutputMetadataAccumulator(
        per_output_metadata={**step._metadata_accumulator.per_output_metadata, **entries}
    )


def partition_metadata(report: BuildReport, indexer: Indexer) -> tuple[dict[str, dict], dict]:
    """Per raw id of a node in ``report``, the metadata of its partition (its own, then the
    batch's); and the batch's alone: the engine and embedding model, and what the batch as a
    whole did (one ``batch`` entry)."""
    run = report.metadata(indexer.agents.engine_id, indexer.embedder.model_id)
    run["batch"] = dg.MetadataValue.json(run["batch"])
    own = {
        node.split(":", 1)[1]: _own_metadata(entry, run)
        for node, entry in report.node_metadata().items()
    }
    return own, run


def _result(
    context: dg.AssetExecutionContext, report: BuildReport, indexer: Indexer, level: str
) -> dg.MaterializeResult:
    """Each partition's own metadata (:func:`partition_metadata`); the run's for a partition
    the report does not name."""
    own, run = partition_metadata(report, indexer)
    add_partition_metadata(context, {key: own.get(key, run) for key in context.partition_keys})
    return dg.MaterializeResult()


def _launched_tree(context: dg.AssetExecutionContext) -> str | None:
    """The tree (:data:`TREE_TAG`) of the definitions this run was launched from: the UI
    launches from the code location it loaded, which may predate the source of truth, while
    the run itself loads the definitions afresh."""
    snapshot = context.instance.get_job_snapshot(context.run.job_snapshot_id)
    for op in snapshot.node_defs_snapshot.op_def_snaps:
        if op.name == context.op_def.name:
            return op.tags.get(TREE_TAG)
    return None


def check_launch(context: dg.AssetExecutionContext, tree: TreePartitions, level: str) -> None:
    """Refuse a run whose partitions or mapping come from an older tree than the source of
    truth's, with the fix, before Dagster resolves its partitions (it would fail on a deleted
    one with "Partition range ... is not a valid range")."""
    span = context.partition_key_range
    partitions = tree.of_level(level)
    gone = sorted({k for k in (span.start, span.end) if not partitions.has_partition_key(k)})
    if gone:
        raise StaleTopologyError(
            f"{level} partitions {gone} are not in the source of truth any more (deleted or "
            "moved since the code location loaded): reload it (hltm reload, or 'Reload "
            "definitions' in the UI) and launch again"
        )
    launched = _launched_tree(context)
    if launched is not None and launched != tree.fingerprint:
        raise StaleTopologyError(
            f"this run of {level} partitions {span.start}..{span.end} was launched from "
            "definitions older than the source of truth (the tree changed since the code "
            "location loaded; its partition mapping is stale): reload it (hltm reload, or "
            "'Reload definitions' in the UI) and launch again"
        )


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
    context: dg.AssetExecutionContext,
    hltm: Indexer,
    tree: TreePartitions,
    level: str,
    child_asset: str | None,
) -> dg.MaterializeResult:
    """Build the run's partitions of ``level`` (only the stale ones with
    :data:`ONLY_CHANGED_TAG`); a parent level refuses a stale mapping."""
    check_launch(context, tree, level)
    keys = context.partition_keys
    children = _mapped_children(context, child_asset) if child_asset else None
    only_changed = context.run.tags.get(ONLY_CHANGED_TAG) == "true"
    with (
        run_lock(hltm.settings, "index (Dagster run)", wait_s=RUN_LOCK_WAIT_S),
        _progress(context, level, len(keys)) as tick,
    ):
        report = hltm.build(
            level, keys, progress=tick, expected_children=children, only_changed=only_changed
        )
    return _result(context, report, hltm, level)


def level_asset(
    settings: Settings, tree: TreePartitions, level: str, child: dg.AssetsDefinition | None
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
        metadata=asset_metadata(settings, level, body=build_level),
        owners=OWNERS,
        tags=asset_tags(level),
        op_tags={TREE_TAG: tree.fingerprint},
    )
    def memory(context: dg.AssetExecutionContext, hltm: dg.ResourceParam[Indexer]):
        return build_level(
            context, hltm, tree, level, child.key.to_user_string() if child else None
        )

    return memory


def build_assets(settings: Settings, tree: TreePartitions) -> list[dg.AssetsDefinition]:
    """One asset per level, leaves first."""
    assets: list[dg.AssetsDefinition] = []
    for level in tree.topology.schema.bottom_up:
        assets.append(level_asset(settings, tree, level, assets[-1] if assets else None))
    return list(linked_to_git(assets))
