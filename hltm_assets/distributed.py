"""``hltm index`` and ``hltm worker`` on the distributed deployment.

The index plans as on one machine, then hands each level's partition ranges to Dagster as runs
that its instance (PostgreSQL) launches onto Celery workers (``dagster-celery``'s run
launcher, Redis as broker): every worker executes whole runs, a range of partitions each, and
writes the shared lake and vector tables itself. A level's runs go out at once; the next
level starts when they all ended, and the lake's small files are merged in between. A run
whose worker died (killed, out of memory, its machine gone) is marked failed, its level stops
the index, and the next ``hltm index`` builds what it left, since everything a run stored is
stored whole (a chunk's rows commit in one transaction) and the plan finds the rest stale.
"""

from __future__ import annotations

import math
import os
import socket
import time
import warnings

import dagster as dg

from hltm_assets import progress
from hltm_assets.assets import ONLY_CHANGED_TAG
from hltm_assets.definitions import build_definitions, level_job_name, tree_defs_name
from hltm_assets.history import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    PARTITIONS_TAG,
    TRIGGER_TAG,
    distributed_instance_dir,
    open_instance,
)
from hltm_assets.partitions import KeyRange, TreePartitions, range_label, sibling_ranges
from hltm_assets.runs import IndexResult, LevelKeys
from hltm_resources.config import Settings
from hltm_resources.indexing.erasure import complete_erasures
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.indexing.plan import Plan
from hltm_resources.stores import database
from hltm_resources.stores.lake import CATALOG, DeploymentError
from hltm_resources.stores.lock import home_lock

#: The Celery queue of HLTM's runs (dagster-celery's default).
QUEUE = "dagster"
#: Partitions per run: enough runs that every worker gets several (a worker that finishes
#: early takes the next), but no run smaller than the first or larger than the second.
RUN_SIZE = (25, 1000)
RUNS_PER_WORKER = 3
#: Seconds between looks at the runs of a level, and between asks which tasks live workers
#: hold (how a dead worker's run is found).
POLL_S = 0.5
LIVENESS_S = 5.0
#: How many looks in a row a started run may be missing from every live worker before it is
#: declared lost (a task between the broker and a worker's start is briefly in neither).
LOST_AFTER = 3
TASK_ID_TAG = "dagster-celery/task_id"
CODE_MODULE = "hltm_assets.definitions"
#: Runs log to the workers' consoles only their errors (the event log has everything).
QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}


class NoWorkersError(DeploymentError):
    """No Celery worker answered on the broker."""


def celery_app(settings: Settings):
    """A Celery app on the deployment's broker with dagster-celery's tasks registered."""
    from dagster_celery.config import DEFAULT_CONFIG
    from dagster_celery.make_app import make_app
    from dagster_celery.tasks import create_execute_job_task, create_resume_job_task

    app = make_app(
        {
            "broker": settings.broker_url,
            "backend": settings.broker_url,
            "config_source": DEFAULT_CONFIG | {"task_track_started": True},
        }
    )
    create_execute_job_task(app)
    create_resume_job_task(app)
    return app


def run_worker(settings: Settings, name: str | None = None) -> None:
    """Run a Celery worker that executes HLTM's Dagster runs, one at a time (blocks).

    Its Dagster instance is the deployment's (``DAGSTER_HOME`` is set to the folder of the
    distributed ``dagster.yaml``); a run it takes loads the code location from
    :data:`CODE_MODULE` with this process's ``HLTM_*`` settings."""
    from hltm_assets.event_log import EVENT_BATCH_SIZE

    os.environ["DAGSTER_HOME"] = str(distributed_instance_dir(settings))
    # A run's events per partition go to PostgreSQL in batches (as they go to SQLite locally).
    os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", str(EVENT_BATCH_SIZE))
    database.init_schema(settings.duckdb_path, settings.schema)  # fail here, not in a run
    app = celery_app(settings)
    app.worker_main(
        [
            "worker",
            "--queues",
            QUEUE,
            # One run at a time, in a thread of this process: no fork after LanceDB's runtime
            # started (its fork support may deadlock), and the main thread keeps answering the
            # coordinator's questions while a run builds.
            "--pool",
            "threads",
            "--concurrency",
            "1",
            "--hostname",
            name or f"hltm-{os.getpid()}@{socket.gethostname()}",
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            # Take a run only when idle: a killed worker then loses only the run it executes.
            "--disable-prefetch",
        ]
    )


def live_workers(app, timeout_s: float = 2.0) -> list[str]:
    return sorted(r for reply in app.control.ping(timeout=timeout_s) or [] for r in reply)


class DistributedIndex:
    """One ``hltm index`` on the workers: the runs of each level, launched and awaited."""

    def __init__(self, settings: Settings, tree: TreePartitions, instance, result, full: bool):
        from dagster._core.definitions.reconstruct import ReconstructableRepository

        self.settings = settings
        self.tree = tree
        self.instance = instance
        self.result = result
        self.only_changed = not full
        self.defs = build_definitions(settings, tree=tree)
        self.repo = ReconstructableRepository.for_module(CODE_MODULE, tree_defs_name(tree))
        self.app = celery_app(settings)
        self.workers = live_workers(self.app)
        if not self.workers:
            raise NoWorkersError(
                f"no HLTM worker answers on {settings.broker_url}: start some (hltm worker) "
                "and run this again"
            )
        self.recorded_children: set[str] = set()

    def _launch(self, level: str, span: KeyRange) -> str:
        job_name = level_job_name(level)
        tags = {
            ASSET_PARTITION_RANGE_START_TAG: span.start,
            ASSET_PARTITION_RANGE_END_TAG: span.end,
            TRIGGER_TAG: "cli",
            PARTITIONS_TAG: range_label(self.tree, level, span.start, span.end),
        }
        if self.only_changed:
            tags[ONLY_CHANGED_TAG] = "true"
        run = self.instance.create_run_for_job(
            job_def=self.defs.resolve_job_def(job_name),
            run_config=QUIET,
            tags=tags,
            job_code_origin=self.repo.get_reconstructable_job(job_name).get_python_origin(),
        )
        with warnings.catch_warnings():
            # dagster-celery's launcher makes its Celery task again for every run it launches;
            # Celery warns from the second on that the name is taken (by the same task).
            warnings.simplefilter("ignore")
            self.instance.launch_run(run.run_id, workspace=None)
        return run.run_id

    def build_level(self, level: str, keys: list[str]) -> None:
        result = self.result
        lk = LevelKeys.of(self.tree, level, keys, self.recorded_children)
        size = math.ceil(len(keys) / (RUNS_PER_WORKER * len(self.workers)))
        size = max(RUN_SIZE[0], min(RUN_SIZE[1], size))
        spans = sibling_ranges(keys, lk.ordered, lk.parent_of, lk.recorded, most=size)
        runs = {self._launch(level, span): span for span in spans}
        result.runs += len(runs)
        failed = self._await(runs)
        # Each chunk a run stored is a few small Parquet files per table; the level above
        # reads them all, so they are merged first.
        with database.connect(self.settings.duckdb_path) as con:
            con.execute(f"CALL ducklake_merge_adjacent_files('{CATALOG}')")
        self.recorded_children.clear()
        for run_id, span in runs.items():
            if run_id in failed:
                result.failed.append(
                    f"{level} {span.start}..{span.end} ({len(span.keys)} partitions, run {run_id})"
                )
                continue
            records = self.instance.get_records_for_run(
                run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION, limit=1
            ).records
            if records:
                batch = records[0].event_log_entry.asset_materialization.metadata["batch"].value
                result.built[level] += result.add_batch(batch, usage=True)
            self.recorded_children.update(lk.node_ids(span))
        if failed:
            raise LevelFailed(level, sorted(failed))

    def _await(self, runs: dict[str, KeyRange]) -> set[str]:
        """Wait for ``runs`` to end; the ids of those that failed (a lost worker's too)."""
        pending, failed = set(runs), set()
        missing: dict[str, int] = {}
        next_look = time.monotonic() + LIVENESS_S
        tick = progress.sink()
        while pending:
            time.sleep(POLL_S)
            for run in self.instance.get_runs(dg.RunsFilter(run_ids=sorted(pending))):
                if run.status in (dg.DagsterRunStatus.SUCCESS,):
                    pending.discard(run.run_id)
                    if tick:
                        tick(len(runs[run.run_id].keys))
                elif run.status in (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED):
                    pending.discard(run.run_id)
                    failed.add(run.run_id)
            if pending and time.monotonic() >= next_look:
                next_look = time.monotonic() + LIVENESS_S
                for run_id in self._lost(pending, missing):
                    run = self.instance.get_run_by_id(run_id)
                    self.instance.report_run_failed(
                        run, "its worker stopped answering (killed or gone); hltm index again"
                    )
                    pending.discard(run_id)
                    failed.add(run_id)
        return failed

    def _lost(self, pending: set[str], missing: dict[str, int]) -> list[str]:
        """Runs whose task a worker started (Celery's ``STARTED``) and no live worker holds,
        :data:`LOST_AFTER` looks in a row. Workers take a task only when idle
        (``--disable-prefetch``), so a queued run is in the broker, never in a dead worker."""
        active = self.app.control.inspect(timeout=2.0).active() or {}
        held = {task["id"] for tasks in active.values() for task in tasks}
        lost = []
        for run in self.instance.get_runs(dg.RunsFilter(run_ids=sorted(pending))):
            task = run.tags.get(TASK_ID_TAG)
            started = task is not None and self.app.AsyncResult(task).state == "STARTED"
            if not started or task in held:
                missing.pop(run.run_id, None)
                continue
            missing[run.run_id] = missing.get(run.run_id, 0) + 1
            if missing[run.run_id] >= LOST_AFTER:
                lost.append(run.run_id)
        return lost


class LevelFailed(RuntimeError):
    def __init__(self, level: str, runs: list[str]):
        super().__init__(f"{len(runs)} {level} runs failed: {', '.join(runs)}")
        self.level = level
        self.runs = runs


def run_index_distributed(
    settings: Settings,
    full: bool,
    show_progress: bool,
    plan: Plan | None,
    reset_vectors: bool,
    indexer: Indexer | None,
):
    """:func:`hltm_assets.runner.run_index` on the workers (see the module's docstring)."""
    from hltm_assets.partitions import tree_partitions

    t0 = time.perf_counter()
    with home_lock(settings, "index"):
        complete_erasures(settings)
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
        indexer.vectors.create_tables()  # before writers that run at once would race to
        tree = tree_partitions(plan.topology)
        with open_instance(settings) as instance, progress.bar(plan.total, show_progress):
            index = DistributedIndex(settings, tree, instance, result, full)
            try:
                indexer.build_plan(plan, index.build_level)
            except LevelFailed as exc:
                result.failed.append(
                    f"stopped at the {exc.level} level; hltm index again builds what is left"
                )
        indexer.vectors.tidy(when_needed=not full)
    result.seconds = time.perf_counter() - t0
    return result
