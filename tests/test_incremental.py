"""Lossless incremental indexing: exactly the changed leaves and their ancestors are rebuilt,
and the result equals a full rebuild."""

import shutil

import pytest

from hltm_resources.config import Settings
from hltm_resources.indexing.checks import check_level
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.indexing.loading import load_snapshot
from hltm_resources.indexing.verify import verify
from hltm_resources.stores import database
from query.evaluation.data.sample_world import evolve, generate_world, write_snapshot
from tests.conftest import build_all, stored_vectors, write_jsonl


@pytest.fixture(scope="module")
def medium():
    return generate_world(seed=5, accounts=2, seats_per_account=3, projects_per_seat=(6, 9))


@pytest.fixture
def home(tmp_path, medium):
    settings = Settings(home=tmp_path / "home")
    load_snapshot(settings, write_snapshot(medium, tmp_path / "v1"))
    build_all(settings)
    return settings


def ancestors(world, project_ids):
    seat_of = {p["project_id"]: p["seat_id"] for p in world.projects}
    account_of = {s["seat_id"]: s["account_id"] for s in world.seats}
    seats = {seat_of[p] for p in project_ids}
    return seats, {account_of[s] for s in seats}


def test_v2_builds_exactly_changed_and_added_leaves_and_their_ancestors(home, medium, tmp_path):
    v2, changes = evolve(medium, seed=9, edit=0.08, delete=0.04, add=0.06)
    assert changes["edited"] and changes["deleted"] and changes["added"]
    load_snapshot(home, write_snapshot(v2, tmp_path / "v2"))
    plan = Indexer(home).plan()
    leaves = set(changes["edited"]) | set(changes["added"])
    assert set(plan.keys("project")) == leaves
    seats_a, accounts_a = ancestors(v2, leaves)
    seats_d, accounts_d = ancestors(medium, changes["deleted"])
    assert set(plan.keys("seat")) == seats_a | seats_d
    assert set(plan.keys("account")) == accounts_a | accounts_d
    counts = build_all(home)
    assert counts["leaves"] == len(leaves)
    assert Indexer(home).plan().empty
    report = verify(home)
    assert report.ok, (report.differences, report.vector_mismatches)
    assert report.identical == report.nodes


def test_a_moved_project_rebuilds_old_and_new_ancestor_paths(home, medium, tmp_path):
    project = dict(medium.projects[0])
    old_seat = project["seat_id"]
    old_account = next(s["account_id"] for s in medium.seats if s["seat_id"] == old_seat)
    new = next(s for s in medium.seats if s["account_id"] != old_account)
    project["seat_id"] = new["seat_id"]
    snap = tmp_path / "moved"
    shutil.copytree(tmp_path / "v1", snap)
    write_jsonl(snap / "projects.jsonl", [project] + [dict(p) for p in medium.projects[1:]])
    load_snapshot(home, snap)
    plan = Indexer(home).plan()
    assert plan.keys("project") == [project["project_id"]]
    assert plan.build["project"][0].reason.startswith("moved from")
    assert set(plan.keys("seat")) == {old_seat, new["seat_id"]}
    assert set(plan.keys("account")) == {old_account, new["account_id"]}
    build_all(home)
    assert verify(home).ok


def test_deleting_the_last_project_of_a_seat_and_an_empty_seat(home, medium, tmp_path):
    seat = medium.seats[0]["seat_id"]
    keep = [dict(p) for p in medium.projects if p["seat_id"] != seat]
    snap = tmp_path / "emptied"
    shutil.copytree(tmp_path / "v1", snap)
    write_jsonl(snap / "projects.jsonl", keep)
    write_jsonl(
        snap / "documents.jsonl",
        [d for d in medium.documents if d["project_id"] in {p["project_id"] for p in keep}],
    )
    seats = [dict(s) for s in medium.seats] + [
        {
            "seat_id": "brand-new-empty",
            "account_id": medium.accounts[0]["account_id"],
            "name": "Nobody Yet",
        }
    ]
    write_jsonl(snap / "seats.jsonl", seats)
    load_snapshot(home, snap)
    plan = Indexer(home).plan()
    assert set(plan.keys("seat")) == {seat, "brand-new-empty"}
    assert plan.keys("project") == []
    build_all(home)
    for level in ("project", "seat", "account"):
        assert check_level(home, level).passed
    with database.connect(home.duckdb_path, read_only=True) as con:
        concise = con.execute(
            "SELECT concise FROM memory_summaries WHERE node_id = ?", [f"seat:{seat}"]
        ).fetchone()[0]
    assert "no projects" in concise
    assert verify(home).ok


def test_a_crash_between_a_leaf_and_its_ancestors_is_repaired(home, medium, tmp_path):
    v2, changes = evolve(medium, seed=4, edit=0.1, delete=0.0, add=0.0)
    load_snapshot(home, write_snapshot(v2, tmp_path / "v2"))
    indexer = Indexer(home)
    indexer.build("project", indexer.plan().keys("project"))  # then the process "dies"
    plan = Indexer(home).plan()
    seats, accounts = ancestors(v2, changes["edited"])
    assert plan.keys("project") == []
    assert set(plan.keys("seat")) == seats and set(plan.keys("account")) == accounts
    assert all(i.reason == "inputs changed" for i in plan.build["seat"])
    assert not verify(home).ok  # stale parents are reported, by node
    build_all(home)
    assert verify(home).ok


def test_verify_names_a_node_whose_memory_was_tampered_with(home, medium):
    node = f"seat:{medium.seats[1]['seat_id']}"
    with database.connect(home.duckdb_path) as con:
        con.execute(
            "UPDATE mem_facets SET value = value || ' (edited)' WHERE node_id = ? AND ord = 0",
            [node],
        )
    report = verify(home)
    assert not report.ok
    assert report.differences == {node: "differs in facets"}
    assert node in report.vector_mismatches


def test_a_rebuilt_node_embeds_only_texts_it_had_no_vector_for(home, medium, tmp_path):
    before = stored_vectors(home)
    v2, changes = evolve(medium, seed=4, edit=0.1, delete=0.0, add=0.0)
    load_snapshot(home, write_snapshot(v2, tmp_path / "v2"))
    indexer = Indexer(home)
    rebuilt = {i.node_id for items in indexer.plan().build.values() for i in items}
    embedded = indexer.embedder.texts
    indexer.build_all()
    embedded = indexer.embedder.texts - embedded

    after = stored_vectors(home)
    texts_of_rebuilt = {text for (_, node, text) in after if node in rebuilt}
    had_vectors = {text for (_, node, text) in before if node in rebuilt}
    assert 0 < embedded <= len(texts_of_rebuilt - had_vectors) < len(texts_of_rebuilt)
    # ... and the memory is what a fresh build of v2 stores, vectors included, bit for bit.
    fresh = Settings(home=tmp_path / "fresh")
    load_snapshot(fresh, tmp_path / "v2")
    build_all(fresh)
    assert after == stored_vectors(fresh)


def test_an_incremental_home_ranks_evidence_as_a_rebuilt_one(home, medium, tmp_path):
    """Same rows, same answers: how the tables were written (deletes, appends, fragments)
    never changes a ranking, the evidence's word search included."""
    from query import Memory

    v2, _ = evolve(medium, seed=9, edit=0.08, delete=0.04, add=0.06)
    load_snapshot(home, write_snapshot(v2, tmp_path / "v2"))
    build_all(home)
    fresh = Settings(home=tmp_path / "fresh")
    load_snapshot(fresh, tmp_path / "v2")
    build_all(fresh)

    questions = [
        "Which candidates were turned down for salary expectations?",
        "Which roles need Kubernetes and Terraform?",
        "Are these jobs remote or on-site?",
    ]

    def rankings(settings):
        with Memory(settings, log_queries=False) as mem:
            scopes = sorted(n for n, entry in mem.catalog().items() if entry[0] != "project")
            return {
                (scope, q): [
                    (e.node_id, e.text, e.score) for e in mem.retrieve(q, scope).context.evidence
                ]
                for scope in scopes
                for q in questions
            }

    incremental, rebuilt = rankings(home), rankings(fresh)
    scopes = {scope for scope, _ in incremental}
    assert len(scopes) >= 5 and all(incremental.values())
    assert incremental == rebuilt
