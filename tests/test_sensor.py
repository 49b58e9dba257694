"""The nearline sensor, through ``build_sensor_context``, and its pure decision rules."""

import json
import shutil

import dagster as dg

from hltm_assets.definitions import build_definitions
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.indexing.loading import load_snapshot
from hltm_resources.indexing.nearline import decide
from hltm_resources.indexing.plan import Plan, PlanItem
from hltm_resources.models import Topology
from hltm_resources.schema import DEFAULT_SCHEMA
from tests.conftest import write_jsonl


def evaluate(defs, settings, cursor=None):
    sensor = defs.resolve_sensor_def("hltm_sot_changes")
    context = dg.build_sensor_context(
        instance=dg.DagsterInstance.ephemeral(),
        cursor=cursor,
        resources={"hltm": defs.resources["hltm"]},
    )
    return sensor(context), context


def edit_one_document(tmp_path, snapshot_dir, world, settings):
    snap = tmp_path / "edited"
    shutil.copytree(snapshot_dir, snap)
    docs = [dict(d) for d in world.documents]
    target = next(d for d in docs if d["kind"] == "brief")
    target["text"] += " Hiring freeze lifted."
    write_jsonl(snap / "documents.jsonl", docs)
    load_snapshot(settings, snap)
    return target["project_id"]


def test_nothing_to_do_is_a_skip(fresh_home):
    result, _ = evaluate(build_definitions(fresh_home), fresh_home)
    assert isinstance(result, dg.SkipReason) and "up to date" in result.skip_message


def test_an_edited_document_requests_exactly_its_leaf(fresh_home, tmp_path, snapshot_dir, world):
    defs = build_definitions(fresh_home)  # the code location loaded before the edit
    pid = edit_one_document(tmp_path, snapshot_dir, world, fresh_home)
    result, _ = evaluate(defs, fresh_home)
    assert isinstance(result, dg.SensorResult)
    [request] = result.run_requests
    assert request.job_name == "project_memory_job" and request.partition_key == pid
    leaf_hash = Indexer(fresh_home).plan().build["project"][0].input_hash
    assert request.run_key == f"project:{pid}:{leaf_hash[:16]}"
    # The next tick asks again with the same key (Dagster drops duplicate run keys); the seat
    # is left to automation within the grace period.
    again, _ = evaluate(defs, fresh_home, cursor=result.cursor)
    assert [r.run_key for r in again.run_requests] == [request.run_key]


def test_a_topology_change_is_skipped_until_the_location_reloads(
    fresh_home, tmp_path, snapshot_dir, world
):
    defs = build_definitions(fresh_home)
    snap = tmp_path / "moved"
    shutil.copytree(snapshot_dir, snap)
    projects = [dict(p) for p in world.projects]
    old_seat = projects[0]["seat_id"]
    projects[0]["seat_id"] = next(s["seat_id"] for s in world.seats if s["seat_id"] != old_seat)
    write_jsonl(snap / "projects.jsonl", projects)
    load_snapshot(fresh_home, snap)
    result, _ = evaluate(defs, fresh_home)
    assert isinstance(result, dg.SkipReason)
    assert "1 moved project(s)" in result.skip_message and "Reload" in result.skip_message
    fresh = build_definitions(fresh_home)  # after a reload the move is fresh_home
    result, _ = evaluate(fresh, fresh_home)
    # The moved project, and its old seat (emptied at load time, nothing of it pending).
    assert [r.partition_key for r in result.run_requests] == [projects[0]["project_id"], old_seat]


def _plan(*items: PlanItem) -> Plan:
    plan = Plan(DEFAULT_SCHEMA)
    for item in items:
        plan.build[item.level].append(item)
    return plan


EMPTY = Topology.empty(DEFAULT_SCHEMA)


def test_stale_parents_wait_for_automation_then_get_requested():
    stale = PlanItem("seat:s1", "seat", "s1", "inputs changed", "abc123")
    first = decide(_plan(stale), EMPTY, EMPTY, {}, now=1000.0, grace=180)
    assert first.requests == [] and "left to automation" in first.skip_reason
    early = decide(_plan(stale), EMPTY, EMPTY, first.cursor, now=1100.0, grace=180)
    assert early.requests == []
    late = decide(
        _plan(stale), EMPTY, EMPTY, json.loads(json.dumps(early.cursor)), now=1181.0, grace=180
    )
    assert [(r.level, r.raw_id, r.run_key) for r in late.requests] == [
        ("seat", "s1", "seat:s1:abc123")
    ]


def test_parents_emptied_by_a_deletion_are_requested_at_once():
    item = PlanItem("account:a", "account", "a", "emptied by a deletion or a move below it", "ffee")
    decision = decide(_plan(item), EMPTY, EMPTY, {}, now=0.0)
    assert [r.run_key for r in decision.requests] == ["account:a:ffee"]


def test_parents_above_a_pending_leaf_are_left_alone():
    leaf = PlanItem("project:p1", "project", "p1", "inputs changed", "1234")
    seat = PlanItem("seat:s1", "seat", "s1", "child rebuilt: project:p1", "")
    decision = decide(_plan(leaf, seat), EMPTY, EMPTY, {}, now=0.0)
    assert [r.level for r in decision.requests] == ["project"]


def test_many_changed_leaves_are_requested_as_partition_ranges():
    items = [
        PlanItem(f"project:{k}", "project", k, "inputs changed", f"h{k}")
        for k in ("a", "b", "c", "e")
    ]
    decision = decide(_plan(*items), EMPTY, EMPTY, {}, now=0.0, order=["a", "b", "c", "d", "e"])
    assert [(r.raw_id, r.end) for r in decision.requests] == [("a", "c"), ("e", None)]
    assert decision.requests[0].run_key.startswith("project:a..c:")
    assert decision.requests[1].run_key == "project:e:he"


def test_approved_hints_rebuild_through_range_runs(fresh_home, world):
    from hltm_resources.indexing import adaptation
    from hltm_resources.stores import database

    patterns = json.dumps([{"pattern": "which openings required <skill>"}])
    with database.connect(fresh_home.duckdb_path) as con:
        con.execute(
            "INSERT INTO adapt_hints VALUES (1, 'proposed', now(), NULL, NULL, NULL, 3, "
            "'{}', ?, '[]')",
            [patterns],
        )
    defs = build_definitions(fresh_home)
    adaptation.approve(fresh_home, 1)
    result, _ = evaluate(defs, fresh_home)
    # Every leaf is stale (the hints version is in every input hash) and the leaves are
    # contiguous in partition order: one range run.
    [request] = result.run_requests
    assert (
        request.tags["dagster/asset_partition_range_start"]
        == defs.resolve_job_def("project_memory_job").partitions_def.get_partition_keys()[0]
    )
