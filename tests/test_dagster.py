"""The Dagster layer: definitions load, per-partition lineage, assets through ``materialize``
on real stores, the completeness check, and eager automation of exactly the ancestors."""

import dagster as dg
import pytest

from hltm_assets.definitions import build_definitions, defs, level_job_name
from hltm_assets.partitions import read_tree, tree_partitions
from hltm_assets.resources import HLTMResource
from hltm_assets.runner import dagster_instance, run_index
from hltm_resources.config import Settings
from hltm_resources.embedding import MINILM_TOKENWISE_MODEL_ID
from hltm_resources.engines.extractive.agents import EXTRACTIVE_VERSION
from hltm_resources.indexing.checks import check_level
from hltm_resources.indexing.loading import load_snapshot


def test_definitions_load_on_an_empty_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HLTM_HOME", str(tmp_path / "empty"))
    loaded = defs()
    dg.Definitions.validate_loadable(loaded)
    assert {k.to_user_string() for k in loaded.resolve_all_asset_keys()} == {
        "project_memory",
        "seat_memory",
        "account_memory",
        "query_log",
        "adaptation_hints",
    }


def test_lineage_is_declared_per_partition(built_home, world):
    loaded = build_definitions(built_home)
    dg.Definitions.validate_loadable(loaded)
    seat = loaded.get_assets_def("seat_memory")
    mapping = seat.get_partition_mapping(dg.AssetKey("project_memory"))
    assert isinstance(mapping, dg.StaticPartitionMapping)
    expected = {p["project_id"]: p["seat_id"] for p in world.projects}
    assert dict(mapping.downstream_partition_keys_by_upstream_partition_key) == expected
    account = loaded.get_assets_def("account_memory")
    mapping = account.get_partition_mapping(dg.AssetKey("seat_memory"))
    assert dict(mapping.downstream_partition_keys_by_upstream_partition_key) == {
        s["seat_id"]: s["account_id"] for s in world.seats
    }
    for level in ("project", "seat", "account"):
        assert loaded.resolve_job_def(level_job_name(level))


def test_every_run_executes_its_steps_in_its_own_process(built_home):
    # No process per step for a run the UI, the sensor or automation launches.
    loaded = build_definitions(built_home)
    jobs = [
        loaded.resolve_job_def(level_job_name(level)) for level in ("project", "seat", "account")
    ]
    jobs.append(loaded.resolve_implicit_global_asset_job_def())  # the UI's "Materialize"
    assert {job.executor_def.name for job in jobs} == {dg.in_process_executor.name}


def test_partition_keys_are_in_path_order(built_home):
    tree = tree_partitions(read_tree(built_home))
    keys = tree.of_level("project").get_partition_keys()
    seats = [tree.topology.leaves[k].parent_id for k in keys]
    # The projects of one seat are contiguous, so a seat's batch of leaves is one range.
    changes = sum(1 for a, b in zip(seats, seats[1:], strict=False) if a != b)
    assert changes == len(set(seats)) - 1


@pytest.fixture
def fresh_home(tmp_path, snapshot_dir):
    settings = Settings(home=tmp_path / "home")
    load_snapshot(settings, snapshot_dir)
    return settings


def test_each_partition_of_a_range_run_carries_its_own_metadata(fresh_home, world):
    """A run of many partitions records each one's own node and counts; the batch's totals
    are its ``batch`` entry."""
    run_index(fresh_home)
    documents = {}
    for d in world.documents:
        documents[d["project_id"]] = documents.get(d["project_id"], 0) + 1
    with dagster_instance(fresh_home) as instance:
        records = instance.fetch_materializations(
            dg.AssetKey("project_memory"), limit=10_000
        ).records
    assert len(records) == len(world.projects)
    runs = {r.run_id for r in records}
    assert len(runs) == 1  # one range run built them all
    for record in records:
        meta = record.asset_materialization.metadata
        key = record.partition_key
        assert meta["node_id"].value == f"project:{key}"
        assert meta["status"].value == "built"
        assert meta["source_documents"].value == documents[key]
        assert meta["batch"].value["nodes_built"] == len(world.projects)
        assert meta["batch"].value["source_documents"] == len(world.documents)
    assert len({r.asset_materialization.metadata["facets"].value for r in records}) > 1


def test_assets_materialize_with_metadata_and_check(fresh_home, world):
    loaded = build_definitions(fresh_home)
    resource = HLTMResource.from_settings(fresh_home)
    project = world.projects[0]
    check = next(
        c
        for c in loaded.asset_checks
        if dg.AssetKey("project_memory") in {k.asset_key for k in c.check_keys}
    )
    leaf = dg.materialize(
        [loaded.get_assets_def("project_memory"), check],
        partition_key=project["project_id"],
        resources={"hltm": resource},
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert leaf.success
    meta = leaf.get_asset_materialization_events()[0].materialization.metadata
    assert meta["batch"].value["nodes_built"] == 1
    assert meta["node_id"].value == f"project:{project['project_id']}"
    assert meta["status"].value == "built"
    assert meta["facets"].value > 0 and meta["qa_pairs"].value > 0
    assert meta["engine"].value == EXTRACTIVE_VERSION
    assert meta["embed_model"].value == MINILM_TOKENWISE_MODEL_ID
    assert meta["source_documents"].value == sum(
        1 for d in world.documents if d["project_id"] == project["project_id"]
    )
    # The run's check covers what the run built: this one leaf, complete...
    check = leaf.get_asset_check_evaluations()[0]
    assert check.passed and check.metadata["nodes"].value == 1
    # ...while the level as a whole (the consistency job's check) misses the other leaves.
    whole = check_level(fresh_home, "project")
    assert whole.nodes == len(world.projects)
    assert len(whole.problems) == len(world.projects) - 1
    assert all(p.startswith("not built") for p in whole.problems.values())
    # A seat is never aggregated from some of its projects: refused, naming the others...
    assets = [loaded.get_assets_def(k) for k in ("project_memory", "seat_memory")]

    def materialize(selection: str, key: str) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            assets,
            selection=[selection],
            partition_key=key,
            resources={"hltm": resource},
            instance=dg.DagsterInstance.ephemeral(),
            raise_on_error=False,
        )

    siblings = [
        p["project_id"]
        for p in world.projects
        if p["seat_id"] == project["seat_id"] and p != project
    ]
    refused = materialize("seat_memory", project["seat_id"])
    assert not refused.success
    assert "ChildrenNotBuiltError" in str(refused.all_events) and siblings[0] in str(
        refused.all_events
    )
    # ... and built once they are.
    for sibling in siblings:
        assert materialize("project_memory", sibling).success
    assert materialize("seat_memory", project["seat_id"]).success


def test_stale_mapping_is_refused(fresh_home, world, snapshot_dir, tmp_path):
    loaded = build_definitions(fresh_home)  # partitions read now
    moved = dict(world.projects[0])
    moved["seat_id"] = next(s["seat_id"] for s in world.seats if s["seat_id"] != moved["seat_id"])
    import shutil

    from tests.conftest import write_jsonl

    snap = tmp_path / "v2"
    shutil.copytree(snapshot_dir, snap)
    write_jsonl(snap / "projects.jsonl", [moved] + [dict(p) for p in world.projects[1:]])
    load_snapshot(fresh_home, snap)
    assets = [loaded.get_assets_def(k) for k in ("project_memory", "seat_memory")]
    result = dg.materialize(
        assets,
        selection=["seat_memory"],
        partition_key=moved["seat_id"],
        resources={"hltm": HLTMResource.from_settings(fresh_home)},
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert not result.success
    assert "stale" in str(result.get_step_failure_events()[0].event_specific_data.error)


def test_eager_automation_requests_exactly_the_ancestors(fresh_home, world):
    first = run_index(fresh_home)
    assert not first.failed
    assert first.built == {
        "project": len(world.projects),
        "seat": len(world.seats),
        "account": len(world.accounts),
    }
    assert first.runs == 3  # one partition-range run per level, not one per node
    for level in ("project", "seat", "account"):
        assert check_level(fresh_home, level).passed
    loaded = build_definitions(fresh_home)
    project = world.projects[-1]
    account = next(s["account_id"] for s in world.seats if s["seat_id"] == project["seat_id"])
    with dagster_instance(fresh_home) as instance:
        tick = dg.evaluate_automation_conditions(loaded, instance)
        assert tick.total_requested == 0
        job = loaded.resolve_job_def(level_job_name("project"))
        assert job.execute_in_process(
            instance=instance, partition_key=project["project_id"]
        ).success
        tick = dg.evaluate_automation_conditions(loaded, instance, cursor=tick.cursor)
        assert tick.total_requested == 1
        assert tick.get_requested_partitions(dg.AssetKey("seat_memory")) == {project["seat_id"]}
        job = loaded.resolve_job_def(level_job_name("seat"))
        assert job.execute_in_process(instance=instance, partition_key=project["seat_id"]).success
        tick = dg.evaluate_automation_conditions(loaded, instance, cursor=tick.cursor)
        assert tick.get_requested_partitions(dg.AssetKey("account_memory")) == {account}
        assert tick.total_requested == 1


def test_an_erasure_leaves_every_other_node_materialized_and_automation_working(fresh_home, world):
    """Forgetting a document deletes the runs that built its leaf and ancestors, and with them
    the records of every other node those runs built. Those nodes keep their memory, so they
    stay materialized in Dagster (restated), automation finds nothing to do afterwards, and a
    project materialized by hand later still has its seat built by automation (eager waits
    for every child of a seat to be materialized)."""
    from hltm_assets.service import dagster_build
    from query.writer import Writer

    assert not run_index(fresh_home).failed  # one range run per level: each built many nodes
    doc = world.documents[0]
    Writer(fresh_home, build=dagster_build(fresh_home)).forget(doc["doc_id"])
    loaded = build_definitions(fresh_home)
    tree = tree_partitions(read_tree(fresh_home))
    with dagster_instance(fresh_home) as instance:
        for level in fresh_home.schema.names:
            key = dg.AssetKey(fresh_home.schema.level(level).asset)
            expected = set(tree.of_level(level).get_partition_keys())
            assert instance.get_materialized_partitions(key) == expected, level
        tick = dg.evaluate_automation_conditions(loaded, instance)
        assert tick.total_requested == 0
        project = next(p for p in world.projects if p["project_id"] != doc["project_id"])
        job = loaded.resolve_job_def(level_job_name("project"))
        assert job.execute_in_process(
            instance=instance, partition_key=project["project_id"]
        ).success
        tick = dg.evaluate_automation_conditions(loaded, instance, cursor=tick.cursor)
        assert tick.get_requested_partitions(dg.AssetKey("seat_memory")) == {project["seat_id"]}


def test_automation_runs_the_completeness_check_and_leaves_the_full_rebuild_to_the_night(
    fresh_home, world
):
    """An automated account build carries its completeness check; the check that rebuilds
    everything runs on the nightly schedule only (README: Lossless, verified)."""
    from dagster._core.definitions.automation_tick_evaluation_context import build_run_requests

    assert not run_index(fresh_home).failed
    loaded = build_definitions(fresh_home)
    seat = world.seats[0]
    with dagster_instance(fresh_home) as instance:
        tick = dg.evaluate_automation_conditions(loaded, instance)
        job = loaded.resolve_job_def(level_job_name("seat"))
        assert job.execute_in_process(instance=instance, partition_key=seat["seat_id"]).success
        tick = dg.evaluate_automation_conditions(loaded, instance, cursor=tick.cursor)
    (request,) = build_run_requests(
        list(tick._requested_subsets), loaded.resolve_asset_graph(), {}, emit_backfills=False
    )
    assert request.asset_selection == [dg.AssetKey("account_memory")]
    assert {k.name for k in request.asset_check_keys} == {"memory_complete"}
    nightly = loaded.resolve_schedule_def("hltm_nightly_consistency").job
    assert "memory_equals_full_rebuild" in {
        k.name
        for k in loaded.resolve_job_def(nightly.name).asset_layer.asset_graph.asset_check_keys
    }


def test_each_level_asset_says_where_its_memory_lives_and_what_builds_it(built_home):
    from pathlib import Path

    loaded = build_definitions(built_home)
    for asset in ("project_memory", "seat_memory", "account_memory"):
        spec = next(iter(loaded.get_assets_def(asset).specs))
        meta = spec.metadata
        columns = [c.name for c in meta["dagster/column_schema"].columns]
        assert {"node_id", "level", "engine", "hints_version", "leaf_count"} <= set(columns)
        assert "memory_facets" in meta["views"].value and "support" in meta["views"].value
        assert meta["duckdb_path"].value == str(built_home.duckdb_path)
        assert meta["lancedb_path"].value == str(built_home.lancedb_path)
        references = meta["dagster/code_references"].code_references
        assert len(references) == 3
        for ref in references:
            lines = Path(ref.file_path).read_text().splitlines()
            start = ref.line_number - 1  # the function, or its first decorator
            assert any(line.lstrip().startswith("def ") for line in lines[start : start + 3])
        assert spec.owners == ["team:hltm"]
        assert spec.tags["hltm/level"] == asset.removesuffix("_memory")
