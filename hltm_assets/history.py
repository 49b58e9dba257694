"""The home's Dagster storage, seen as one more store an erasure must reach.

Dagster records each run with its partition-range tags, and its event log names every
partition it planned, materialized or failed, with the metadata the assets attached (node
ids, which may be e-mail addresses, and a preview of each node's memory). Erasing a node
removes every run that touched its partition or one of its ancestors' (their previews quoted
its facts), whole, the runs' compute logs, the assets' cached status, and then rewrites the
SQLite files so no freed page keeps a copy. The other nodes such a run built keep their
memory: their materializations are restated without a run (:func:`_restate`).

Registered with the erasure of :mod:`hltm_resources.indexing.erasure` when this package is
imported (every ``hltm`` command imports it); Dagster itself is imported only when a home's
history is touched, so ``hltm ask`` never loads it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from hltm_resources.config import Settings

if TYPE_CHECKING:
    import dagster as dg
from hltm_resources.indexing.erasure import has_run_history

INSTANCE_YAML = """# Dagster instance of this HLTM home (written by hltm). `dagster dev` started
# from the repo root with HLTM_HOME pointing here uses the same storage (repo dagster.yaml).
telemetry:
  enabled: false
"""
# The tags Dagster itself puts on a partition-range run (what a backfill with a single-run
# policy launches; the runner sets them too) and on a single-partition run.
ASSET_PARTITION_RANGE_START_TAG = "dagster/asset_partition_range_start"
ASSET_PARTITION_RANGE_END_TAG = "dagster/asset_partition_range_end"
PARTITION_TAG = "dagster/partition"
#: What started a run or a materialization (``cli``, ``serve``, ...): HLTM's own tag.
TRIGGER_TAG = "hltm/trigger"
#: The partition range of a run as a person reads it (:func:`partitions.range_label`).
PARTITIONS_TAG = "hltm/partitions"
_LIMIT = 10_000
#: The run id Dagster gives an event reported without a run.
RUNLESS_RUN_ID = ""
#: The Dagster instance of the distributed deployment (its folder in the home of each machine,
#: every value from the environment): runs and event logs in PostgreSQL, runs launched onto
#: the Celery workers, and the ``hltm_writer`` pool open to 16 writing runs at once (the lake
#: and LanceDB take concurrent writers; locally it is 1, the one DuckDB file's writer).
DISTRIBUTED_YAML = """# Dagster instance of HLTM's distributed deployment (written by hltm;
# the values come from the environment, as every machine of the deployment sets it).
storage:
  postgres:
    postgres_url:
      env: HLTM_CATALOG_URL
run_launcher:
  module: dagster_celery.launcher
  class: CeleryRunLauncher
  config:
    broker:
      env: HLTM_BROKER_URL
    backend:
      env: HLTM_BROKER_URL
    config_source:
      worker_prefetch_multiplier: 1
      task_track_started: true
compute_logs:
  module: dagster._core.storage.noop_compute_log_manager
  class: NoOpComputeLogManager
concurrency:
  pools:
    default_limit: 16
telemetry:
  enabled: false
run_monitoring:
  enabled: true
  poll_interval_seconds: 30
"""


def distributed_instance_dir(settings: Settings) -> Path:
    """The folder of the distributed deployment's ``dagster.yaml`` (``DAGSTER_HOME`` of the
    workers and of ``dagster dev``), written if missing."""
    folder = Path(settings.home) / "dagster-distributed"
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "dagster.yaml"
    if not config.exists() or config.read_text() != DISTRIBUTED_YAML:
        config.write_text(DISTRIBUTED_YAML)
    return folder


@contextmanager
def open_instance(settings: Settings) -> Iterator:
    """The Dagster instance whose storage lives in the home (distributed: in PostgreSQL)."""
    import logging

    import dagster as dg

    from hltm_assets.event_log import EVENT_BATCH_SIZE

    logging.getLogger("dagster").setLevel(logging.ERROR)
    if settings.distributed:
        with dg.DagsterInstance.from_config(str(distributed_instance_dir(settings))) as instance:
            yield instance
        return
    home = Path(settings.home)
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_YAML)
    # Dagster hands a partition range's asset events over as one batch only when this is set;
    # the event log below then stores each batch in one transaction (event_log.py).
    os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", str(EVENT_BATCH_SIZE))
    overrides = {
        "event_log_storage": {
            "module": "hltm_assets.event_log",
            "class": "BatchedSqliteEventLogStorage",
            "config": {"base_dir": str(home / "history" / "runs")},
        },
        # The assets log through Dagster's event log, never to stdout: capturing a step's
        # output (two `tail` processes a step) cost about 40 ms a run and kept nothing.
        "compute_logs": {
            "module": "dagster._core.storage.noop_compute_log_manager",
            "class": "NoOpComputeLogManager",
        },
    }
    with dg.DagsterInstance.local_temp(tempdir=str(home), overrides=overrides) as instance:
        yield instance


def erase_runs(settings: Settings, node_ids: Sequence[str]) -> list[str]:
    """Delete every run that touched a partition of ``node_ids``; returns the run ids."""
    if not node_ids or not has_run_history(settings):
        return []
    import dagster as dg

    schema = settings.schema
    targets: dict[str, set[str]] = {}
    for node in node_ids:
        level, _, raw = node.partition(":")
        if level in schema.names:
            targets.setdefault(schema.level(level).asset, set()).add(raw)
    runs: set[str] = set()
    with open_instance(settings) as instance:
        for asset, keys in targets.items():
            key = dg.AssetKey(asset)
            records_filter = dg.AssetRecordsFilter(asset_key=key, asset_partitions=sorted(keys))
            for fetch in (
                instance.fetch_materializations,
                instance.fetch_planned_materializations,
                instance.fetch_failed_materializations,
            ):
                runs.update(r.run_id for r in fetch(records_filter, limit=_LIMIT).records)
            for raw in keys:
                for tag in (
                    ASSET_PARTITION_RANGE_START_TAG,
                    ASSET_PARTITION_RANGE_END_TAG,
                    PARTITION_TAG,
                ):
                    found = instance.get_runs(filters=dg.RunsFilter(tags={tag: raw}))
                    runs.update(run.run_id for run in found)
        runs.discard(RUNLESS_RUN_ID)  # the memory service's reports: erased by partition below
        kept = _materialized_by(instance, runs, targets)
        for run_id in sorted(runs):
            instance.delete_run(run_id)
            shutil.rmtree(Path(settings.home) / "storage" / run_id, ignore_errors=True)
        _erase_reported(instance, targets)
        _erase_check_results(instance, runs, node_ids)
        _restate(instance, settings, kept, targets)
        instance.wipe_asset_cached_status(
            [dg.AssetKey(level.asset) for level in settings.schema.levels]
        )
        if settings.distributed:
            _forget_latest_in(instance, runs)
    if settings.distributed:
        vacuum_catalog(settings)
    else:
        _forget_latest(settings, runs)
        compact_files(settings)
    return sorted(runs)


#: The ``hltm/trigger`` tag of a materialization restated after an erasure deleted its run.
RESTATED = "erasure"


def _materialized_by(instance, runs: set[str], targets: dict[str, set[str]]) -> dict:
    """(asset, partition) -> the last materialization that ``runs`` made of each partition
    the erasure leaves alone (not in ``targets``)."""
    import dagster as dg

    kept: dict[tuple[str, str], tuple[int, dg.AssetMaterialization]] = {}
    for run_id in sorted(runs):
        records = instance.get_records_for_run(
            run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
        ).records
        for record in records:
            m = record.event_log_entry.asset_materialization
            asset = m.asset_key.to_user_string()
            if m.partition is None or m.partition in targets.get(asset, ()):
                continue
            key = (asset, m.partition)
            if key not in kept or kept[key][0] < record.storage_id:
                kept[key] = (record.storage_id, m)
    return {key: m for key, (_, m) in kept.items()}


def _restate(instance, settings: Settings, kept: dict, targets: dict[str, set[str]]) -> None:
    """Record again, without a run, the materializations of nodes that only lost the run
    that built them (it also built an erased or emptied node): their memory is intact, and
    Dagster would otherwise show them as never materialized, and its automation would not
    build their parents while a child looks missing (``eager`` waits for every child).

    Each is restated as it was (metadata and tags; its preview quotes only its own subtree),
    levels bottom-up, and with it the last materialization of each ancestor outside the
    erasure, so every parent is recorded after its children and automation finds nothing
    to rebuild but the emptied nodes."""
    import dagster as dg

    from hltm_assets.partitions import read_tree

    schema = settings.schema
    level_of = {level.asset: level.name for level in schema.levels}
    restate: dict[tuple[str, str], dg.AssetMaterialization] = {}
    for asset in sorted({asset for asset, _ in kept}):
        materialized = instance.event_log_storage.get_latest_storage_id_by_partition(
            dg.AssetKey(asset), dg.DagsterEventType.ASSET_MATERIALIZATION
        )
        restate |= {k: m for k, m in kept.items() if k[0] == asset and k[1] not in materialized}
    if not restate:
        return
    tree = read_tree(settings)
    looked: set[tuple[str, str]] = set(restate)
    for asset, raw in sorted(restate):
        node = tree.node(f"{level_of[asset]}:{raw}")
        for ancestor in tree.ancestors(node) if node is not None else ():
            level, _, parent = ancestor.node_id.partition(":")
            key = (schema.level(level).asset, parent)
            if key in looked or parent in targets.get(key[0], ()):
                continue
            looked.add(key)
            latest = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey(key[0]), asset_partitions=[parent]),
                limit=1,
                ascending=False,
            ).records
            if latest:
                restate[key] = latest[0].asset_materialization
    bottom_up = {level: i for i, level in enumerate(schema.bottom_up)}
    order = sorted(restate, key=lambda k: (bottom_up[level_of[k[0]]], k[1]))
    record_materializations(
        instance,
        [
            dg.AssetMaterialization(
                asset_key=restate[k].asset_key,
                partition=restate[k].partition,
                metadata=restate[k].metadata,
                # Input pointers name events of the deleted runs.
                tags={t: v for t, v in (restate[k].tags or {}).items() if "/input_" not in t}
                | {TRIGGER_TAG: RESTATED},
            )
            for k in order
        ],
    )


def _erase_reported(instance, targets: dict[str, set[str]]) -> None:
    """Delete the materializations of these partitions that the memory service reported
    without a run (``hltm serve``, :func:`runner.report_level`), with their tags, from the
    cross-run index and the runless events' own database; and the asset index's copy of the
    latest one when it is such a report."""
    import dagster as dg
    import sqlalchemy as sa
    from dagster._core.storage.event_log.schema import (
        AssetEventTagsTable,
        AssetKeyTable,
        SqlEventLogStorageTable,
    )

    events = SqlEventLogStorageTable
    storage = instance.event_log_storage
    for asset, keys in targets.items():
        key = dg.AssetKey(asset).to_string()
        match = sa.and_(
            events.c.run_id == RUNLESS_RUN_ID,
            events.c.asset_key == key,
            events.c.partition.in_(sorted(keys)),
        )
        with storage.index_connection() as conn:
            ids = [r[0] for r in conn.execute(sa.select(events.c.id).where(match)).fetchall()]
            if ids:
                conn.execute(
                    AssetEventTagsTable.delete().where(AssetEventTagsTable.c.event_id.in_(ids))
                )
                conn.execute(events.delete().where(events.c.id.in_(ids)))
                conn.execute(
                    AssetKeyTable.update()
                    .where(
                        sa.and_(
                            AssetKeyTable.c.asset_key == key,
                            AssetKeyTable.c.last_run_id == RUNLESS_RUN_ID,
                        )
                    )
                    .values(
                        last_materialization=None,
                        last_materialization_timestamp=None,
                        last_run_id=None,
                    )
                )
        if not hasattr(storage, "path_for_shard"):  # PostgreSQL: the index holds every event
            continue
        with storage.run_connection(RUNLESS_RUN_ID) as conn:
            conn.execute(events.delete().where(match))


def _erase_check_results(instance, runs: set[str], node_ids: Sequence[str]) -> None:
    """Delete the asset checks' results of the deleted runs (``delete_run`` leaves them in the
    cross-run index, and their metadata names the partitions they checked), and every other
    check result whose evaluation names an erased node (a problem listed under its id)."""
    import sqlalchemy as sa
    from dagster._core.storage.event_log.schema import AssetCheckExecutionsTable

    checks = AssetCheckExecutionsTable
    named = [checks.c.evaluation_event.contains(node, autoescape=True) for node in node_ids]
    erased = sa.or_(checks.c.run_id.in_(sorted(runs)), *named)
    with instance.event_log_storage.index_connection() as conn:
        conn.execute(checks.delete().where(erased))


def _forget_latest_in(instance, runs: set[str]) -> None:
    """:func:`_forget_latest` through the instance's own index connection (PostgreSQL)."""
    import sqlalchemy as sa
    from dagster._core.storage.event_log.schema import AssetKeyTable

    if not runs:
        return
    with instance.event_log_storage.index_connection() as conn:
        for run_id in sorted(runs):
            conn.execute(
                AssetKeyTable.update()
                .where(
                    sa.or_(
                        AssetKeyTable.c.last_run_id == run_id,
                        AssetKeyTable.c.last_materialization.like(f"%{run_id}%"),
                    )
                )
                .values(
                    last_materialization=None, last_materialization_timestamp=None, last_run_id=None
                )
            )


def vacuum_catalog(settings: Settings) -> None:
    """Rewrite every table of the deployment's PostgreSQL database (deleted rows of erased
    runs stay in a table's pages until then; :meth:`~hltm_resources.stores.lake.Lake.vacuum`)."""
    settings.duckdb_path.vacuum()


def _forget_latest(settings: Settings, runs: set[str]) -> None:
    """The asset index keeps a copy of each asset's latest materialization event (with its
    metadata): forget the copies that came from a deleted run (the next build writes it
    again). Plain SQL on Dagster's SQLite index: no API resets this column."""
    index = Path(settings.home) / "history" / "runs" / "index.db"
    if not runs or not index.exists():
        return
    con = sqlite3.connect(index)
    try:
        with con:
            for run_id in sorted(runs):
                con.execute(
                    "UPDATE asset_keys SET last_materialization = NULL, "
                    "last_materialization_timestamp = NULL, last_run_id = NULL "
                    "WHERE last_run_id = ? OR last_materialization LIKE ?",
                    [run_id, f"%{run_id}%"],
                )
    finally:
        con.close()


def compact_files(settings: Settings) -> None:
    """Rewrite every SQLite file of the run history (freed pages keep deleted rows)."""
    home = Path(settings.home)
    for path in sorted([*home.glob("history/**/*.db"), *home.glob("schedules/*.db")]):
        con = sqlite3.connect(path)
        try:
            con.execute("VACUUM")
        finally:
            con.close()


#: The ``hltm/trigger`` tag of a materialization the memory service reported without a run.
REPORTED = "serve"
#: The job name Dagster gives an event reported without a run.
RUNLESS_JOB_NAME = ""


def record_materializations(instance, materializations: list[dg.AssetMaterialization]) -> None:
    """What ``instance.report_runless_asset_event`` does for each, stored as one batch (one
    transaction: :mod:`hltm_assets.event_log`) instead of one commit each (about 6 ms)."""
    from dagster._core.events import (
        DagsterEvent,
        DagsterEventBatchMetadata,
        DagsterEventType,
        StepMaterializationData,
        generate_event_batch_id,
    )

    batch = generate_event_batch_id()
    last = len(materializations) - 1
    for i, materialization in enumerate(materializations):
        event = DagsterEvent(
            event_type_value=DagsterEventType.ASSET_MATERIALIZATION.value,
            event_specific_data=StepMaterializationData(materialization),
            job_name=RUNLESS_JOB_NAME,
        )
        instance.report_dagster_event(
            event, run_id=RUNLESS_RUN_ID, batch_metadata=DagsterEventBatchMetadata(batch, i == last)
        )
