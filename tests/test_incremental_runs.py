"""An incremental ``hltm index`` pays Dagster's per-run overhead per touched parent, not per
touched leaf: one partition-range run per parent of a level's dirty keys, in which the
unchanged siblings are left as they are. The memory equals a full rebuild."""

from pathlib import Path

import dagster as dg
import pytest

from hltm_assets import runner
from hltm_assets.assets import ONLY_CHANGED_TAG
from hltm_assets.definitions import build_definitions, level_job_name
from hltm_assets.history import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG
from hltm_assets.partitions import KeyRange, ranges_around, sibling_ranges
from hltm_assets.runner import dagster_instance, run_index
from hltm_resources.config import Settings
from hltm_resources.indexing import indexer as indexer_module
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.indexing.loading import load_snapshot
from hltm_resources.indexing.plan import split_changed
from hltm_resources.models import NodeInfo
from hltm_resources.stores import database
from hltm_resources.stores.memory_rows import INVALIDATED, NodeState
from tests.conftest import write_tree

# -- which ranges run -----------------------------------------------------------------------
ORDER = ["a1", "a2", "a3", "b1", "b2", "b3", "c1"]  # children of a, b, c, in path order
PARENT = {k: k[0] for k in ORDER}


@pytest.mark.parametrize(
    "keys,ranges",
    [
        ([], []),
        (["a2"], [KeyRange("a2", "a2", ("a2",))]),
        # Scattered in one parent: one range, its unchanged child a2 inside.
        (["a3", "a1"], [KeyRange("a1", "a3", ("a1", "a3"))]),
        # Two parents: a range each, never reaching into the other's children...
        (["a1", "b3"], [KeyRange("a1", "a1", ("a1",)), KeyRange("b3", "b3", ("b3",))]),
        # ... unless the ranges touch: then they are one run (a full build: one per level).
        (["a1", "a3", "b1", "b3"], [KeyRange("a1", "b3", ("a1", "a3", "b1", "b3"))]),
        (ORDER, [KeyRange("a1", "c1", tuple(ORDER))]),
    ],
)
def test_one_range_per_parent_of_the_keys(keys, ranges):
    assert sibling_ranges(keys, ORDER, {k: PARENT[k] for k in keys}) == ranges


@pytest.mark.parametrize(
    "gap,ranges",
    [
        # a1 and b3 have four partitions between them: two runs with a smaller gap ...
        (3, [KeyRange("a1", "a1", ("a1",)), KeyRange("b3", "b3", ("b3",))]),
        # ... one run spanning them (the four left as they are) with a gap of four or more.
        (4, [KeyRange("a1", "b3", ("a1", "b3"))]),
    ],
)
def test_ranges_of_nearby_parents_are_one_run(gap, ranges):
    assert sibling_ranges(["a1", "b3"], ORDER, PARENT, gap=gap) == ranges


def test_a_range_longer_than_most_partitions_is_cut_into_runs_of_at_most_that_many():
    # A full build of the level (one range) in runs of at most three partitions each, cutting
    # through parent a's children as well: what a run holds grows with its partitions.
    assert sibling_ranges(ORDER, ORDER, PARENT, most=3) == [
        KeyRange("a1", "a3", ("a1", "a2", "a3")),
        KeyRange("b1", "b3", ("b1", "b2", "b3")),
        KeyRange("c1", "c1", ("c1",)),
    ]
    # A cut range starts at its first key: the partitions a gap spans are not run on their own.
    assert sibling_ranges(["a1", "b3"], ORDER, PARENT, gap=4, most=3) == [
        KeyRange("a1", "a1", ("a1",)),
        KeyRange("b3", "b3", ("b3",)),
    ]
    assert sibling_ranges(["a1"], ORDER, PARENT, recorded=["a3", "b1"], most=2) == [
        KeyRange("a1", "a1", ("a1",)),
        KeyRange("a3", "b1", (), ("a3", "b1")),
    ]


def test_a_node_whose_children_were_recorded_is_recorded_not_built():
    assert sibling_ranges(["a1"], ORDER, PARENT, recorded=["b2"]) == [
        KeyRange("a1", "a1", ("a1",)),
        KeyRange("b2", "b2", (), ("b2",)),
    ]
    assert sibling_ranges(["a1"], ORDER, PARENT, recorded=["b2"], gap=3) == [
        KeyRange("a1", "b2", ("a1",), ("b2",))
    ]


def test_a_failed_range_is_split_around_its_failed_keys_keeping_what_it_records():
    span = KeyRange("a1", "c1", ("a1", "b1", "c1"), ("a3", "b3"))
    assert ranges_around(span, {"b1"}, ORDER) == [
        KeyRange("a1", "a3", ("a1",), ("a3",)),
        KeyRange("b3", "c1", ("c1",), ("b3",)),
    ]


def test_the_top_level_is_one_range():
    assert sibling_ranges(["a1", "c1"], ORDER, {"a1": None, "c1": None}) == [
        KeyRange("a1", "c1", ("a1", "c1"))
    ]


# -- which nodes of a range are built -------------------------------------------------------
NODE = NodeInfo("project:p", "project", "p", "P", "seat:s", "a/s/p")


def _state(parent="seat:s", path="a/s/p", input_hash="h1") -> NodeState:
    return NodeState("project:p", "project", parent, path, input_hash, "m", 0)


@pytest.mark.parametrize(
    "state,current,built",
    [
        (None, "h1", True),  # no memory yet
        (_state(input_hash=INVALIDATED), "h1", True),  # emptied by a deletion below it
        (_state(parent="seat:t", path="a/t/p"), "h1", True),  # moved
        (_state(), "h2", True),  # inputs changed
        (_state(), "h1", False),  # memory current
    ],
)
def test_a_node_in_a_range_is_built_when_the_plan_would_build_it(state, current, built):
    states = {} if state is None else {NODE.node_id: state}
    changed, unchanged = split_changed([NODE], states, lambda node: current)
    assert (changed, unchanged) == (([NODE], []) if built else ([], [NODE]))


# -- a real tree through Dagster --------------------------------------------------------------
SEATS = {"a1": "a", "a2": "a", "b1": "b", "b2": "b"}  # seat -> account
PROJECTS = [f"{seat}-{i}" for seat in SEATS for i in range(1, 6)]  # five projects a seat
#: Scattered edits in two seats of two accounts: no two edited projects are neighbours.
EDITED = ["a1-1", "a1-3", "a1-5", "b2-2", "b2-4"]
LEVELS = ("project", "seat", "account")


def snapshot(directory: Path, edited: tuple[str, ...] = (), noted: tuple[str, ...] = ()) -> Path:
    """The tree, the ``edited`` projects moved from Dublin to Lisbon (their seats' and accounts'
    memories change too: they count locations), the ``noted`` ones with a line of prose more
    (their own memory changes, their seat's does not)."""
    docs = [
        (
            f"d-{p}",
            p,
            f"Title: Engineer\nLocation: {'Lisbon' if p in edited else 'Dublin'}"
            + ("\nThe team meets on Mondays." if p in noted else ""),
        )
        for p in PROJECTS
    ]
    projects = [(p, p.split("-")[0], f"Project {p}") for p in PROJECTS]
    return write_tree(directory, SEATS, projects, docs)


def spied(settings: Settings, fail: str | None = None) -> tuple[Indexer, list[str]]:
    """An Indexer that records the node of every engine call (and fails on ``fail``)."""
    indexer = Indexer(settings)
    calls: list[str] = []
    build_leaf, aggregate = indexer.agents.build_leaf, indexer.agents.aggregate

    def leaf(node, docs, hints):
        calls.append(node.node_id)
        if node.raw_id == fail:
            raise RuntimeError(f"engine failed on {node.node_id}")
        return build_leaf(node, docs, hints)

    def parent(node, children, hints):
        calls.append(node.node_id)
        return aggregate(node, children, hints)

    indexer.agents.build_leaf, indexer.agents.aggregate = leaf, parent
    return indexer, calls


def memory_hashes(settings: Settings) -> dict[str, tuple[str, str]]:
    with database.connect(settings.duckdb_path, read_only=True) as con:
        rows = con.execute("SELECT node_id, input_hash, memory_hash FROM mem_nodes").fetchall()
    return {node: (inputs, memory) for node, inputs, memory in rows}


@pytest.fixture
def built(tmp_path) -> Settings:
    """A home with the tree indexed through Dagster (every node new: one range per level)."""
    settings = Settings(home=tmp_path / "home")
    load_snapshot(settings, snapshot(tmp_path / "v1"))
    first = run_index(settings)
    assert not first.failed and first.runs == 3  # one range per level: they all touch
    return settings


def test_scattered_edits_cost_runs_per_touched_seat_and_rebuild_exactly_them(built, tmp_path):
    load_snapshot(built, snapshot(tmp_path / "v2", edited=tuple(EDITED)))
    indexer, calls = spied(built)
    result = run_index(built, indexer=indexer)

    assert not result.failed
    seats = {"seat:a1", "seat:b2"}
    accounts = {"account:a", "account:b"}
    # A run per touched seat (its projects), per touched account (its seats), one for the
    # accounts; a run per block of neighbouring edits would be five for the projects alone.
    assert result.runs <= 2 * len(seats) + len(accounts)
    assert sorted(calls) == sorted([f"project:{p}" for p in EDITED] + [*seats, *accounts])
    assert result.built == {"project": len(EDITED), "seat": len(seats), "account": len(accounts)}
    with dagster_instance(built) as instance:
        runs = instance.get_runs(limit=result.runs)  # newest first: this index's
    assert all(run.tags[ONLY_CHANGED_TAG] == "true" for run in runs)

    fresh = Settings(home=tmp_path / "fresh")
    load_snapshot(fresh, snapshot(tmp_path / "v2-fresh", edited=tuple(EDITED)))
    assert run_index(fresh, full=True).built["project"] == len(PROJECTS)
    assert memory_hashes(built) == memory_hashes(fresh)


def test_a_full_build_in_runs_of_at_most_n_partitions_stores_what_one_run_a_level_stores(
    built, tmp_path, monkeypatch
):
    monkeypatch.setattr(runner, "RUN_PARTITIONS_MOST", 6)
    cut = Settings(home=tmp_path / "cut")
    load_snapshot(cut, snapshot(tmp_path / "v1-cut"))
    result = run_index(cut, full=True)

    # 20 projects in runs of at most 6, then the 4 seats and the 2 accounts in a run each.
    assert not result.failed and result.runs == 4 + 1 + 1
    assert result.built == {"project": 20, "seat": 4, "account": 2}
    with dagster_instance(cut) as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(job_name=level_job_name("project")))
        materialized = instance.get_materialized_partitions(dg.AssetKey("project_memory"))
    assert len(runs) == 4 and materialized == set(PROJECTS)
    assert memory_hashes(cut) == memory_hashes(built)


def test_a_plan_reads_the_documents_of_a_few_leaves_at_a_time_and_plans_the_same(
    built, tmp_path, monkeypatch
):
    load_snapshot(built, snapshot(tmp_path / "v2", edited=tuple(EDITED)))
    whole = Indexer(built).plan()
    read = indexer_module.read_documents
    asked: list[int] = []

    def counted(con, schema, leaf_ids):
        asked.append(len(leaf_ids))
        return read(con, schema, leaf_ids)

    monkeypatch.setattr(indexer_module, "HASHED_LEAVES", 3)
    monkeypatch.setattr(indexer_module, "read_documents", counted)
    few = Indexer(built).plan()

    assert max(asked) == 3 and sum(asked) == len(PROJECTS)
    assert sorted(few.keys("project")) == sorted(EDITED)
    assert {lv: few.keys(lv) for lv in LEVELS} == {lv: whole.keys(lv) for lv in LEVELS}


def test_untouched_seats_between_touched_ones_are_recorded_so_automation_stays_quiet(
    built, tmp_path
):
    """The edits in seats a1 and b2 are one range run over the projects of a1 to b2: the
    projects of a2 and b1 in between are recorded as current, so their seats are recorded
    too (not rebuilt), or Dagster's automation would see them older than their children."""
    defs = build_definitions(built)
    with dagster_instance(built) as instance:
        before = dg.evaluate_automation_conditions(defs, instance)
    load_snapshot(built, snapshot(tmp_path / "v2", edited=tuple(EDITED)))
    indexer, calls = spied(built)
    result = run_index(built, indexer=indexer)

    assert not result.failed and result.runs == 3  # one range per level
    assert "seat:a2" not in calls and "seat:b1" not in calls
    with dagster_instance(built) as instance:
        seat_run = instance.get_runs(filters=dg.RunsFilter(job_name=level_job_name("seat")))[0]
        after = dg.evaluate_automation_conditions(defs, instance, cursor=before.cursor)
    assert (
        seat_run.tags[ASSET_PARTITION_RANGE_START_TAG],
        seat_run.tags[ASSET_PARTITION_RANGE_END_TAG],
    ) == ("a1", "b2")
    assert after.total_requested == 0


def single_key_runs(settings: Settings, level: str = "project") -> set[str]:
    with dagster_instance(settings) as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(job_name=level_job_name(level)))
    return {
        run.tags[ASSET_PARTITION_RANGE_START_TAG]
        for run in runs
        if run.tags[ASSET_PARTITION_RANGE_START_TAG] == run.tags[ASSET_PARTITION_RANGE_END_TAG]
    }


def test_a_failed_range_is_run_again_around_its_failed_node_only(built, tmp_path):
    load_snapshot(built, snapshot(tmp_path / "v2", edited=("a1-1", "a1-3")))
    indexer, calls = spied(built, fail="a1-3")
    result = run_index(built, indexer=indexer)

    assert result.failed == ["project:a1-3"]
    # a1-1 was stored by the failed range run; the run recording it finds it current.
    assert calls.count("project:a1-1") == 1 and result.built["project"] == 1
    assert calls.count("project:a1-3") == 1  # not tried again: it would fail again
    assert single_key_runs(built) == {"a1-1"}  # not the unchanged a1-2, not the failed a1-3


def test_one_failed_node_of_a_first_build_costs_runs_not_a_run_per_partition(tmp_path):
    settings = Settings(home=tmp_path / "home")
    load_snapshot(settings, snapshot(tmp_path / "v1"))
    indexer, calls = spied(settings, fail="a2-2")
    result = run_index(settings, indexer=indexer)

    assert result.failed == ["project:a2-2", "seat:a2", "account:a"]  # its ancestors wait
    assert calls.count("project:a2-2") == 1
    assert result.built["project"] == len(PROJECTS) - 1
    # The range of all 20 projects failed; the parts before and after a2-2 were run again.
    with dagster_instance(settings) as instance:
        project_runs = instance.get_runs(filters=dg.RunsFilter(job_name=level_job_name("project")))
    assert len(project_runs) == 3
    assert Indexer(settings).plan().keys("project") == ["a2-2"]  # the others are current


def test_a_range_run_that_crashes_is_run_again_in_halves(built, tmp_path):
    load_snapshot(built, snapshot(tmp_path / "v2", edited=tuple(PROJECTS)))
    indexer, calls = spied(built)
    build_leaf = indexer.agents.build_leaf

    def crashing(node, docs, hints):
        if node.raw_id == "b1-2":
            raise KeyError("a bug, not a node's bad input")  # ends the run: no node failure
        return build_leaf(node, docs, hints)

    indexer.agents.build_leaf = crashing
    with dagster_instance(built) as instance:
        before = len(instance.get_runs(filters=dg.RunsFilter(job_name=level_job_name("project"))))
    result = run_index(built, indexer=indexer)

    assert [f for f in result.failed if f.startswith("project:")] == ["project:b1-2"]
    assert result.built["project"] == len(PROJECTS) - 1
    # One range of 20 keys, then halves of the part that crashes (10, 5, 3 or 2, 1): two runs
    # a halving, where a run per key would be 20 more.
    with dagster_instance(built) as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(job_name=level_job_name("project")))
    assert len(runs) - before <= 1 + 2 * 5
    assert "b1-2" in single_key_runs(built)


def test_a_partition_materialized_from_dagster_is_rebuilt_even_when_current(built):
    indexer, calls = spied(built)
    job = build_definitions(built, indexer=indexer).resolve_job_def(level_job_name("project"))

    def materialize(tags: dict) -> dict:
        with dagster_instance(built) as instance:
            run = job.execute_in_process(instance=instance, partition_key="a2-3", tags=tags)
        meta = run.get_asset_materialization_events()[0].materialization.metadata
        return {"nodes_built": meta["batch"].value["nodes_built"], "status": meta["status"].value}

    # From the UI (no tag): rebuilt, though its memory is current.
    assert materialize({}) == {"nodes_built": 1, "status": "built"}
    assert calls == ["project:a2-3"]
    # With the tag hltm index sets: left as it is.
    assert materialize({ONLY_CHANGED_TAG: "true"}) == {"nodes_built": 0, "status": "unchanged"}
    assert calls == ["project:a2-3"]


def test_a_parent_rebuilt_to_the_same_memory_leaves_its_own_parent(built, tmp_path):
    load_snapshot(built, snapshot(tmp_path / "v2", noted=("a1-2",)))
    plan = Indexer(built).plan()
    assert plan.counts() == {"leaves": 1, "seats": 1, "accounts": 1, "purged": 0}
    before = memory_hashes(built)
    indexer, calls = spied(built)
    result = run_index(built, indexer=indexer)

    # The plan cannot know the seat's new memory; once the seat is built it is the same, so
    # the account's inputs are those it was built from: it is left as it is.
    assert calls == ["project:a1-2", "seat:a1"]
    assert result.built == {"project": 1, "seat": 1, "account": 0}
    after = memory_hashes(built)
    assert after["seat:a1"][1] == before["seat:a1"][1]  # its memory; its inputs changed
    assert after["account:a"] == before["account:a"]
    assert after["project:a1-2"] != before["project:a1-2"]
    assert Indexer(built).plan().empty
