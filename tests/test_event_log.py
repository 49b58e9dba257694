"""Dagster's event log in a home: a partition range's asset events stored as one batch, and
read back by Dagster exactly as if stored one by one."""

import dagster as dg
import pytest

from hltm_assets.event_log import BatchedSqliteEventLogStorage
from hltm_assets.history import open_instance
from hltm_assets.runner import run_index
from hltm_resources.indexing.loading import load_snapshot


def materializations(instance, asset: str) -> list[str]:
    records = instance.fetch_materializations(dg.AssetKey(asset), limit=10_000).records
    return sorted(r.partition_key for r in records)


def planned(instance, asset: str) -> list[str]:
    records = instance.get_event_records(
        dg.EventRecordsFilter(
            event_type=dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
            asset_key=dg.AssetKey(asset),
        )
    )
    return sorted(r.partition_key for r in records)


@pytest.fixture
def loaded(settings, snapshot_dir):
    """A home with the small world loaded, nothing built."""
    load_snapshot(settings, snapshot_dir)
    return settings


def test_every_partition_of_a_range_run_is_recorded_planned_and_materialized(loaded, world):
    fresh_home = loaded
    result = run_index(fresh_home)
    leaves = sorted(p["project_id"] for p in world.projects)
    seats = sorted(s["seat_id"] for s in world.seats)
    assert result.runs == 3  # one range per level: many partitions per batch of events
    with open_instance(fresh_home) as instance:
        assert isinstance(instance.event_log_storage, BatchedSqliteEventLogStorage)
        assert materializations(instance, "project_memory") == leaves
        assert planned(instance, "project_memory") == leaves
        assert materializations(instance, "seat_memory") == seats
        status = instance.get_materialized_partitions(dg.AssetKey("project_memory"))
        assert sorted(status) == leaves
        latest = instance.get_latest_materialization_event(dg.AssetKey("seat_memory"))
        assert latest is not None and latest.run_id


def test_a_batch_holds_the_same_rows_as_events_stored_one_by_one(loaded, snapshot_dir):
    """The stock storage, reading the home's files, sees what the batched one wrote."""
    fresh_home = loaded
    run_index(fresh_home)
    with open_instance(fresh_home) as instance:
        batched = materializations(instance, "project_memory")
    stock = dg.DagsterInstance.local_temp(tempdir=str(fresh_home.home))
    try:
        assert type(stock.event_log_storage).__name__ == "SqliteEventLogStorage"
        assert materializations(stock, "project_memory") == batched
        assert sorted(stock.get_materialized_partitions(dg.AssetKey("project_memory"))) == (batched)
    finally:
        stock.dispose()
    load_snapshot(fresh_home, snapshot_dir)  # nothing changed: nothing more recorded
    assert run_index(fresh_home).runs == 0


def test_the_asset_row_holds_the_last_event_of_a_batch(loaded):
    """A batch writes each asset's row (its latest materialization and run) once, from the
    batch's last event: what storing every event one by one leaves there."""
    fresh_home = loaded
    run_index(fresh_home)
    with open_instance(fresh_home) as instance:
        for asset in ("project_memory", "seat_memory"):
            key = dg.AssetKey(asset)
            newest = instance.fetch_materializations(key, limit=1, ascending=False).records[0]
            (row,) = instance.get_asset_records([key])
            kept = row.asset_entry.last_materialization_record
            assert kept is not None and kept.storage_id == newest.storage_id
            assert kept.partition_key == newest.partition_key
            assert row.asset_entry.last_run_id == newest.run_id
