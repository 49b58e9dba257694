"""Running the memory tree through Dagster in this process (what ``hltm index`` does).

The plan says which nodes to build; each level is then materialized as partition *ranges*,
from the leaves up: one run per parent of the level's dirty keys, from its first dirty child to
its last (keys are in path order, so a parent's children are contiguous; ranges that touch, or
lie at most :data:`RANGE_GAP` partitions apart, are one run). The runs of an incremental index
carry ``hltm/only-changed``, so the unchanged nodes inside a range are recorded, not rebuilt.
Runs are recorded in the home's Dagster instance, so they show in the UI.
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from collections.abc import Callable
from pathlib import Path

import dagster as dg

from hltm_assets import progress
from hltm_assets.assets import ONLY_CHANGED_TAG, partition_metadata
from hltm_assets.definitions import build_definitions, level_job_name
from hltm_assets.distributed import run_index_distributed
from hltm_assets.history import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    PARTITIONS_TAG,
    REPORTED,
    TRIGGER_TAG,
    open_instance,
    record_materializations,
)
from hltm_assets.partitions import (
    KeyRange,
    TreePartitions,
    range_label,
    ranges_around,
    sibling_ranges,
    tree_partitions,
)
from hltm_assets.runs import IndexResult, LevelKeys
from hltm_resources.config import Settings
from hltm_resources.indexing.erasure import complete_erasures
from hltm_resources.indexing.indexer import BuildReport, Indexer, NodeBuildError
from hltm_resources.indexing.plan import Plan
from hltm_resources.stores.lock import home_lock
from hltm_resources.stores.vectors import TABLES

# No pool limits here: an in-process run that is killed would keep its pool slot forever (no
# daemon monitors it) and every later `hltm index` would wait on it. The home's writer lock
# serializes writers across processes; `dagster dev` (the repo's dagster.yaml) still
# serializes its own runs with the `hltm_writer` pool.
# Runs carry Dagster's partition-range tags (history.py), so the asset sees every key of the
# range in ``context.partition_keys``.
#: Ranges of nearby parents are one run when at most this many partitions lie between them.
#: At 10k leaves a run that builds costs about 0.45 s more than the nodes it builds, and a
#: current partition inside a range about 2 ms (BENCHMARKS.md, Scale): spanning up to 200
#: current partitions is cheaper than another run.
RANGE_GAP = 200
#: No run spans more partitions than this. A run holds each of its partitions' metadata and
#: materialization event until it ends: the one leaf run of a 100k build peaked at 12.6 GB
#: (BENCHMARKS.md, Scale). The half second a run costs is nothing to 2,000 leaves' build.
RUN_PARTITIONS_MOST = 2000
_QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}


#: The Dagster instance whose storage lives in the home (a context manager).
dagster_instance = open_instance


def fail_abandoned_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark failed the runs an ``hltm index`` started in its own process and never finished
    (it was killed): under the home's writer lock no such run can still be alive. Runs that
    ``dagster dev`` launched are its own to monitor."""
    abandoned = instance.get_runs(
        filters=dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING],
            tags={TRIGGER_TAG: "cli"},
        )
    )
    for run in abandoned:
        instance.report_run_failed(
            run, "abandoned: the hltm index running it was killed (marked by the next index)"
        )
    return [run.run_id for run in abandoned]


def _run(
    job, instance, start: str, end: str, label: str, result: IndexResult, only_changed: bool
) -> int | None:
    """One partition-range run; adds its timings to ``result``; how many nodes it built, or
    None when it failed."""
    tags = {
        ASSET_PARTITION_RANGE_START_TAG: start,
        ASSET_PARTITION_RANGE_END_TAG: end,
        TRIGGER_TAG: "cli",
        PARTITIONS_TAG: label,
    }
    if only_changed:
        tags[ONLY_CHANGED_TAG] = "true"
    run = job.execute_in_process(
        instance=instance, run_config=_QUIET, tags=tags, raise_on_error=False
    )
    result.runs += 1
    try:
        return _outcome(run, result)
    finally:
        del run
        _give_back_memory()


def _outcome(run, result: IndexResult) -> int | None:
    """What :func:`_run` returns for a finished ``run``; an interrupted one raises."""
    if not run.success:
        if _interrupted(run):
            # Ctrl-C or SIGTERM stopped it: stop here, not run its parts again (a failed
            # range is retried in halves, which would go on building for as long as it takes).
            raise KeyboardInterrupt
        return None
    events = run.get_asset_materialization_events()
    if not events:
        return 0
    return result.add_batch(events[0].materialization.metadata["batch"].value)


def _glibc():
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:  # not glibc: freed pages stay with the allocator
        return None


_LIBC = _glibc()


def _give_back_memory() -> None:
    """Hand the pages the run freed back to the system: the C allocator keeps them
    otherwise, and the next run's peak comes on top of them."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _interrupted(run) -> bool:
    """Whether a failed run failed because its process was interrupted (SIGINT, SIGTERM)."""
    for event in run.all_events:
        if not event.is_step_failure:
            continue
        error = event.step_failure_data.error
        while error is not None:
            if error.cls_name in ("DagsterExecutionInterruptedError", "KeyboardInterrupt"):
                return True
            error = error.cause
    return False


def report_level(
    instance, settings: Settings, level: str, keys: list[str], indexer: Indexer
) -> tuple[BuildReport, dict[str, str]]:
    """Build ``keys`` of ``level`` in this process (only those not current) and record each
    one's materialization in ``instance`` without a run, with the metadata a run gives its
    partition (:func:`assets.partition_metadata`): what the memory service does with a batch
    whose nodes are scattered over more parents than it runs Dagster for (a run takes a
    contiguous range of partitions; Dagster runs no scattered set, and each run costs some
    0.2 s before it builds anything). Returns the report and the nodes that failed."""
    failures: dict[str, str] = {}
    try:
        report = indexer.build(level, keys, only_changed=True)
    except NodeBuildError as exc:
        if exc.report is None:
            raise
        report, failures = exc.report, exc.failures
    asset = dg.AssetKey(settings.schema.level(level).asset)
    own, _ = partition_metadata(report, indexer)
    record_materializations(
        instance,
        [
            dg.AssetMaterialization(
                asset_key=asset,
                partition=raw,
                metadata=own[raw],
                tags={TRIGGER_TAG: REPORTED},
            )
            for raw in (entry["node_id"].split(":", 1)[1] for entry in report.per_node)
        ],
    )
    return report, failures


def _materialize_level(
    defs: dg.Definitions,
    tree: TreePartitions,
    instance,
    result: IndexResult,
    only_changed: bool,
    indexer: Indexer,
    max_runs: int | None = None,
):
    """A ``build_level`` for :meth:`Indexer.build_plan`: one Dagster run per parent of the
    level's keys, nearby parents' merged (:func:`sibling_ranges`); a parent of nodes the level
    below recorded is recorded as well.

    A range run fails when some of its nodes fail; it stores all the others first. The parts
    of the range around the failed nodes are then run again, finding those nodes current, so
    Dagster records them and only the failed partitions stay failed: a few runs per failed
    node, never a run per key. A range run that stopped half-way (a crash, not a node) is run
    again in halves, down to the keys that fail on their own."""

    recorded_children: set[str] = set()  # node ids the level below recorded

    def build_level(level: str, keys: list[str]) -> None:
        job = defs.resolve_job_def(level_job_name(level))
        lk = LevelKeys.of(tree, level, keys, recorded_children)
        ordered, nodes, position = lk.ordered, lk.nodes, lk.position
        to_build = set(keys)
        recorded_children.clear()

        def attempt(spans: list[KeyRange], only_changed: bool) -> None:
            for span in spans:
                indexer.last_failures = None
                label = range_label(tree, level, span.start, span.end)
                built = _run(job, instance, span.start, span.end, label, result, only_changed)
                if built is not None:
                    result.built[level] += built
                    recorded_children.update(lk.node_ids(span))
                    continue
                failed = {k for k in span.keys if nodes[k].node_id in (indexer.last_failures or {})}
                anchors = sorted([*span.keys, *span.recorded], key=position.__getitem__)
                if len(anchors) == 1:
                    result.failed += [f"{level}:{k}" for k in span.keys]
                elif failed:
                    result.failed += [f"{level}:{k}" for k in span.keys if k in failed]
                    # Stored by the failed run: recorded now, their memory left as it is.
                    result.built[level] += len(span.keys) - len(failed)
                    attempt(ranges_around(span, failed, ordered), True)
                else:
                    half = len(anchors) // 2
                    attempt(
                        [
                            r
                            for part in (anchors[:half], anchors[half:])
                            for r in sibling_ranges(
                                [k for k in part if k in to_build],
                                ordered,
                                lk.parent_of,
                                [k for k in part if k not in to_build],
                            )
                        ],
                        only_changed,
                    )

        if max_runs is None or not only_changed:
            attempt(
                sibling_ranges(
                    keys, ordered, lk.parent_of, lk.recorded, RANGE_GAP, RUN_PARTITIONS_MOST
                ),
                only_changed,
            )
            return
        # No idle partitions in these runs.
        spans = sibling_ranges(keys, ordered, lk.parent_of, lk.recorded, 0, RUN_PARTITIONS_MOST)
        if len(spans) <= max_runs:
            attempt(spans, only_changed)
            return
        todo = sorted({*keys, *lk.recorded}, key=position.__getitem__)
        report, failures = report_level(instance, indexer.settings, level, todo, indexer)
        result.built[level] += len(report.nodes)
        result.add_batch(report.metadata("", "")["batch"])
        result.failed += sorted(failures)
        recorded_children.update(nodes[k].node_id for k in todo if nodes[k].node_id not in failures)

    return build_level


def run_index(
    settings: Settings,
    full: bool = False,
    show_progress: bool = False,
    plan: Plan | None = None,
    reset_vectors: bool = False,
    indexer: Indexer | None = None,
    after_level: Callable[[str], object] | None = None,
    defs: Callable[[TreePartitions, Indexer], dg.Definitions] | None = None,
    instance: dg.DagsterInstance | None = None,
    max_runs: int | None = None,
    tidy: bool = True,
) -> IndexResult:
    """Build every node whose inputs changed (or all with ``full``), through Dagster.

    ``after_level(level)`` is called as each level's runs are done (the memory service
    answers a write once its leaf is built). ``defs(tree, indexer)`` makes the definitions
    (default: afresh from the plan's tree) and ``instance`` is the home's Dagster instance
    (default: opened here), both kept by a long-lived caller. A plan passed in is pinned like
    one made here: its caller holds the writer lock from the plan to the build.
    ``max_runs``: a level of an incremental index whose nodes need more runs than this is
    built in this process and its materializations reported without a run
    (:func:`report_level`).

    ``reset_vectors`` drops the LanceDB tables first and rebuilds everything: the way to move
    a home to another embedding model (vectors of two models never share a table). Without
    ``full``, the runs leave the nodes of their ranges whose memory is current (a ``plan``
    passed in must then be an incremental one, or its current nodes are not rebuilt).
    """
    if settings.distributed:
        return run_index_distributed(settings, full, show_progress, plan, reset_vectors, indexer)
    with home_lock(settings, "index"):
        return _run_index(
            settings,
            full,
            show_progress,
            plan,
            reset_vectors,
            indexer,
            after_level,
            defs,
            instance,
            max_runs,
            tidy,
        )


def _run_index(
    settings: Settings,
    full: bool,
    show_progress: bool,
    plan: Plan | None,
    reset_vectors: bool,
    indexer: Indexer | None,
    after_level: Callable[[str], object] | None = None,
    make_defs: Callable[[TreePartitions, Indexer], dg.Definitions] | None = None,
    instance: dg.DagsterInstance | None = None,
    max_runs: int | None = None,
    tidy: bool = True,
) -> IndexResult:
    t0 = time.perf_counter()
    complete_erasures(settings)
    if instance is None and (Path(settings.home) / "history" / "runs.db").exists():
        with dagster_instance(settings) as instance:
            fail_abandoned_runs(instance)
    indexer = indexer or Indexer(settings)
    if reset_vectors:
        indexer.vectors.drop_all()
        full = True
    plan = plan or indexer.plan(full=full)
    result = IndexResult(plan, plan_seconds=time.perf_counter() - t0)
    if plan.total == 0:
        indexer.build_plan(plan)  # purges only
        result.seconds = time.perf_counter() - t0
        return result
    tree = tree_partitions(plan.topology)
    if make_defs is not None:
        defs = make_defs(tree, indexer)
    else:
        defs = build_definitions(settings, tree=tree, indexer=indexer)
    usage0 = indexer.agents.usage.snapshot()
    texts0, calls0 = indexer.embedder.texts, indexer.embedder.calls
    # Planned under the writer lock the whole index holds: the tree, the hints and the
    # erasure journal cannot change until the last run, so the runs need not read them again.
    pinned = indexer.pinned(plan.topology) if plan.topology else contextlib.nullcontext()
    opened = dagster_instance(settings) if instance is None else contextlib.nullcontext(instance)
    with (
        opened as instance,
        progress.bar(plan.total, show_progress),
        pinned,
    ):
        build_level = _materialize_level(defs, tree, instance, result, not full, indexer, max_runs)
        if after_level is not None:
            inner = build_level

            def build_level(level: str, keys: list[str]) -> None:
                inner(level, keys)
                after_level(level)

        indexer.build_plan(plan, build_level)
    after = indexer.agents.usage.snapshot()
    result.usage = {k: after[k] - usage0[k] for k in after if isinstance(after[k], int)}
    result.usage_encoding = after.get("token_encoding")
    result.embedded_texts = indexer.embedder.texts - texts0
    result.embedding_calls = indexer.embedder.calls - calls0
    if tidy:
        if full:  # every text is stored by now; the compaction below needs the memory
            indexer.forget_embeddings()
            _give_back_memory()
        for name in TABLES:  # a table at a time, the pages each freed handed back (<= 70 MB)
            indexer.vectors.tidy(when_needed=not full, tables=[name])
            _give_back_memory()
    result.seconds = time.perf_counter() - t0
    return result
