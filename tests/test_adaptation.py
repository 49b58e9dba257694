"""Adaptation: templates, support thresholds, the review/approve flow, hints in input hashes."""

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hltm_resources.engines.base import Hints, ScopeVocabulary
from hltm_resources.indexing import adaptation
from hltm_resources.indexing.adaptation import MiningParams, to_template
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.stores import database

ROOT = Path(__file__).resolve().parent.parent
VOCAB = ScopeVocabulary(
    {
        "skill": ["Kubernetes", "Python"],
        "title": ["Data Engineer"],
        "location": ["Dublin, Ireland"],
        "rejection_reason": ["salary expectations too high"],
    }
)


@pytest.mark.parametrize(
    "question,template,keys",
    [
        ("Which openings required Kubernetes?", "which openings required <skill>", ["skill"]),
        ("which openings required python", "which openings required <skill>", ["skill"]),
        (
            "Which of my searches were for Data Engineer roles in Dublin, Ireland?",
            "which of my searches were for <title> roles in <location>",
            ["location", "title"],
        ),
        (
            "In which searches did we reject someone because of salary expectations too high?",
            "in which searches did we reject someone because of <rejection_reason>",
            ["rejection_reason"],
        ),
        ("Where are the jobs usually located?", "where are the jobs usually located", []),
    ],
)
def test_questions_become_templates(question, template, keys):
    got, slots = to_template(question, VOCAB)
    assert got == template
    assert sorted(slots) == sorted(keys)


def log(settings, rows):
    now = datetime.now(UTC).replace(tzinfo=None)
    with database.connect(settings.duckdb_path) as con:
        con.executemany(
            "INSERT INTO query_log VALUES (?, ?, ?, ?, [], 1.0, ?, 'retrieval', 'x')",
            [
                [f"q{i}", now, scope, question, keys]
                for i, (scope, question, keys) in enumerate(rows)
            ],
        )


def test_one_user_asking_many_times_is_not_a_pattern(fresh_home, world):
    seat = f"seat:{world.seats[0]['seat_id']}"
    log(fresh_home, [(seat, "Which openings required Kubernetes?", ["skill"])] * 40)
    proposal = adaptation.mine(fresh_home, MiningParams(min_queries=3, min_scopes=2))
    assert proposal.patterns == [] and proposal.facets == []
    assert proposal.queries == 1


def test_patterns_need_distinct_queries_and_scopes(fresh_home, world, snapshot_dir):
    seats = [f"seat:{s['seat_id']}" for s in world.seats]
    skills = sorted({s for t in world.truth.values() for s in t.skills})
    rows = [(seats[i % 3], f"Which openings required {skills[i]}?", ["skill"]) for i in range(4)]
    rows += [(seats[0], "Which openings required something odd?", [])] * 3  # one scope only
    log(fresh_home, rows)
    strict = adaptation.mine(fresh_home, MiningParams(min_queries=5, min_scopes=2))
    assert strict.patterns == []
    mined = adaptation.mine(fresh_home, MiningParams(min_queries=3, min_scopes=3))
    assert [p["pattern"] for p in mined.patterns] == ["which openings required <skill>"]
    assert mined.patterns[0]["support_queries"] == 4
    assert mined.patterns[0]["support_scopes"] == 3
    assert mined.facets == [{"key": "skill", "support_queries": 4, "support_scopes": 3}]


def test_hints_version_is_part_of_every_input_hash(fresh_home, world):
    base = Indexer(fresh_home, hints=Hints())
    other = Indexer(
        fresh_home, hints=Hints(version=2, patterns=("which openings required <skill>",))
    )
    project = next(iter(base.plan().build["project"]), None)
    assert project is None  # built, nothing to do
    from hltm_resources.stores.sot import read_documents, read_topology

    with database.connect(fresh_home.duckdb_path, read_only=True) as con:
        node = next(iter(read_topology(con, fresh_home.schema).leaves.values()))
        docs = read_documents(con, fresh_home.schema, [node.raw_id])[node.raw_id]
    assert base.leaf_hash(node, docs) != other.leaf_hash(node, docs)
    assert len(other.plan().build["project"]) == len(world.projects)


def hltm(settings, *args):
    proc = subprocess.run(
        [sys.executable, "-m", "hltm_assets.cli", "--home", str(settings.home), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_review_approve_and_rebuild(fresh_home, world):
    seats = [f"seat:{s['seat_id']}" for s in world.seats]
    skills = sorted({s for t in world.truth.values() for s in t.skills})
    log(
        fresh_home,
        [
            (seats[i % len(seats)], f"Which openings required {skills[i]}?", ["skill"])
            for i in range(6)
        ],
    )
    hltm(fresh_home, "adapt", "--min-queries", "3", "--min-scopes", "2")
    review = json.loads(hltm(fresh_home, "adapt", "--review", "--json"))
    assert review["version"] == 1 and review["status"] == "proposed"
    assert review["patterns"][0]["pattern"] == "which openings required <skill>"
    assert review["patterns"][0]["support_queries"] == 6
    assert review["facets"] == [
        {"key": "skill", "support_queries": 6, "support_scopes": min(6, len(seats))}
    ]
    assert (fresh_home.home / "hints" / "v1.json").exists()
    # Proposed is not active: memory is unchanged until approval.
    assert Indexer(fresh_home).plan().empty
    approved = json.loads(hltm(fresh_home, "adapt", "--approve", "1", "--json"))
    assert approved["stale"]["leaves"] == len(world.projects)
    out = json.loads(hltm(fresh_home, "index", "--json"))
    assert out["leaves_built"] == len(world.projects)
    with database.connect(fresh_home.duckdb_path, read_only=True) as con:
        versions = {r[0] for r in con.execute("SELECT hints_version FROM memory_nodes").fetchall()}
        qa = [r[0] for r in con.execute("SELECT question FROM memory_qa").fetchall()]
    assert versions == {1}
    assert any(q.startswith("Which openings required ") for q in qa)
    # Mining the same log again proposes nothing new.
    assert "nothing new" in hltm(fresh_home, "adapt", "--min-queries", "3", "--min-scopes", "2")
