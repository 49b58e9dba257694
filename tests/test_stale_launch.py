"""A run launched from the UI after the tree changed, before the code location was reloaded.

The UI creates the run from the definitions it loaded (possibly older than the source of
truth); the run then loads the definitions afresh from the code location's module, as
Dagster's run worker does. Both cases below must fail with the project's message and its fix.
"""

import shutil

import dagster as dg
import pytest
from dagster._core.definitions.reconstruct import ReconstructableRepository
from dagster._core.execution.api import execute_run

from hltm_assets.definitions import build_definitions, level_job_name
from hltm_assets.history import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG
from hltm_assets.runner import dagster_instance, run_index
from hltm_resources.config import Settings
from hltm_resources.indexing.loading import load_snapshot
from tests.conftest import write_jsonl


@pytest.fixture
def home(tmp_path, snapshot_dir, monkeypatch) -> Settings:
    settings = Settings(home=tmp_path / "home")
    load_snapshot(settings, snapshot_dir)
    assert not run_index(settings).failed
    monkeypatch.setenv("HLTM_HOME", str(settings.home))  # what the run worker loads
    return settings


def launch_from(defs: dg.Definitions, settings: Settings, level: str, key: str) -> str | None:
    """Launch ``level``'s partition ``key`` as the UI does from ``defs``; the error its run
    log shows (None when it succeeded)."""
    job_name = level_job_name(level)
    worker_job = ReconstructableRepository.for_module(
        "hltm_assets.definitions", "defs"
    ).get_reconstructable_job(job_name)
    tags = {ASSET_PARTITION_RANGE_START_TAG: key, ASSET_PARTITION_RANGE_END_TAG: key}
    with dagster_instance(settings) as instance:
        run = instance.create_run_for_job(job_def=defs.resolve_job_def(job_name), tags=tags)
        result = execute_run(worker_job, run, instance)
    if result.success:
        return None
    failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    return failures[0].event_specific_data.error.to_string()  # the run log's text, with causes


def changed_snapshot(tmp_path, snapshot_dir, projects: list[dict], documents=None):
    snap = tmp_path / "v2"
    shutil.copytree(snapshot_dir, snap)
    write_jsonl(snap / "projects.jsonl", projects)
    if documents is not None:
        write_jsonl(snap / "documents.jsonl", documents)
    return snap


def test_launching_a_deleted_partition_says_to_reload(home, world, snapshot_dir, tmp_path):
    ui = build_definitions(home)  # what the UI loaded
    gone = world.projects[0]
    load_snapshot(
        home,
        changed_snapshot(
            tmp_path,
            snapshot_dir,
            [dict(p) for p in world.projects[1:]],
            [dict(d) for d in world.documents if d["project_id"] != gone["project_id"]],
        ),
    )
    error = launch_from(ui, home, "project", gone["project_id"])
    assert error is not None and "not a valid range" not in error
    assert f"['{gone['project_id']}'] are not in the source of truth any more" in error
    assert "hltm reload" in error


def test_a_build_launched_from_a_stale_mapping_is_refused(home, world, snapshot_dir, tmp_path):
    ui = build_definitions(home)
    moved = dict(world.projects[0])
    old_seat = moved["seat_id"]
    moved["seat_id"] = next(s["seat_id"] for s in world.seats if s["seat_id"] != old_seat)
    load_snapshot(
        home,
        changed_snapshot(tmp_path, snapshot_dir, [moved] + [dict(p) for p in world.projects[1:]]),
    )
    error = launch_from(ui, home, "seat", old_seat)
    assert error is not None and "older than the source of truth" in error
    assert "hltm reload" in error
    # After a reload (the UI's definitions read afresh), the same launch builds.
    assert launch_from(build_definitions(home), home, "seat", old_seat) is None
