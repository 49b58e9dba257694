"""The serving path: scope isolation, scoring, answers with citations, batch, query log."""

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hltm_resources.embedding import Embedder
from hltm_resources.errors import ScopeError
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.indexing.loading import load_snapshot
from hltm_resources.stores import database
from query import Memory
from query.batch import answer_batch
from query.evaluation.data.sample_world import make_queries
from query.evaluation.metrics import prf
from query.retrieval import facet_scores, qa_scores
from tests.conftest import write_jsonl


@pytest.fixture(scope="module")
def mem(built_home):
    return Memory(built_home, log_queries=False)


def subtree(world, scope):
    level, raw = scope.split(":", 1)
    nodes = {scope}
    for s in world.seats:
        if level == "account" and s["account_id"] == raw:
            nodes.add(f"seat:{s['seat_id']}")
    for p in world.projects:
        acct = next(s["account_id"] for s in world.seats if s["seat_id"] == p["seat_id"])
        if (
            (level == "account" and acct == raw)
            or (level == "seat" and p["seat_id"] == raw)
            or (level == "project" and p["project_id"] == raw)
        ):
            nodes.add(f"project:{p['project_id']}")
    return nodes


def all_scopes(world):
    return (
        [f"account:{a['account_id']}" for a in world.accounts]
        + [f"seat:{s['seat_id']}" for s in world.seats]
        + [f"project:{p['project_id']}" for p in world.projects]
    )


def all_values(world):
    out = set()
    for t in world.truth.values():
        out |= {t.title, t.location, t.workplace_type, *t.skills, *t.rejection_reasons}
    return sorted(out)


QUESTION_TEMPLATES = [
    "Which of my searches were for {v} roles?",
    "Which openings required {v}?",
    "In which searches did we reject someone because of {v}?",
    "Where are the jobs located?",
    "What roles does this recruiter hire for most often?",
    "{v}",
    "Tell me about {v} and more",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_nothing_outside_the_scope_is_ever_retrieved_or_cited(mem, world, data):
    scope = data.draw(st.sampled_from(all_scopes(world)))
    value = data.draw(st.sampled_from(all_values(world)))
    template = data.draw(st.sampled_from(QUESTION_TEMPLATES))
    question = template.format(v=value)
    allowed = subtree(world, scope)
    result = mem.ask(question, scope=scope)
    assert set(result.references) <= allowed
    retrieved = result.retrieved
    assert retrieved.node_ids() <= allowed
    for node in retrieved.facets:
        assert all(f.node_id == node.node_id for f in node.facets)


@pytest.mark.parametrize(
    "scope",
    [
        "seat:x' OR '1'='1",
        "seat:a/../b",
        "account:%",
        "project:p1; DROP TABLE mem_nodes",
        "seat:a_b' --",
        "team:s1",
        "seat",
        "",
        None,
        "seat:" + "a" * 300,
        "seat:a\nb",
    ],
)
def test_injection_looking_scopes_are_rejected_before_any_store(tmp_path, scope):
    # A home that does not exist: a store access would raise NoMemoryError instead.
    from hltm_resources.config import Settings

    with pytest.raises(ScopeError, match="scope rejected"):
        Memory(Settings(home=tmp_path / "nothing")).retrieve("where?", scope=scope)
    assert not (tmp_path / "nothing").exists()


def test_unknown_scope_says_what_exists(mem, world):
    with pytest.raises(ScopeError, match=r"not in the tree; known seats: seat:"):
        mem.retrieve("where?", scope="seat:does-not-exist")


# -- scores against hand-computed values ------------------------------------------------------


def test_facet_score_formula_by_hand():
    micro = np.array([[1.0, 0.0], [0.0, 1.0]])
    facets = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    nodes = ["a", "a", "b"]
    s1, best = facet_scores(micro, facets, nodes, k=1)
    # a: micro 1 -> max(1, .6) = 1; micro 2 -> max(0, .8) = .8; mean = .9
    assert s1["a"] == pytest.approx(0.9)
    # b: micro 1 -> 0; micro 2 -> 1; mean = .5
    assert s1["b"] == pytest.approx(0.5)
    assert best["a"] == pytest.approx([1.0, 0.8])
    s2, _ = facet_scores(micro, facets, nodes, k=2)
    # a: (1 + .6) + (.8 + 0) over k * |F_q| = 4 -> .6 ; b has one facet: (0 + 1) / 4
    assert s2["a"] == pytest.approx(0.6)
    assert s2["b"] == pytest.approx(0.25)


def test_qa_score_is_the_best_question():
    assert qa_scores([0.2, 0.9, 0.4], ["a", "a", "b"]) == {"a": 0.9, "b": 0.4}


class KeywordEmbedder(Embedder):
    """A test double for the model: counts of four keywords, L2-normalized."""

    model_id = "keywords-test"
    dim = 5
    WORDS = ("dublin", "lisbon", "python", "kubernetes")

    def _embed(self, texts):
        out = []
        for t in texts:
            low = t.lower()
            v = np.array([low.count(w) for w in self.WORDS] + [0.5], dtype=np.float32)
            out.append(v / np.linalg.norm(v))
        return np.stack(out)


def test_three_scores_on_a_tiny_tree_match_hand_computation(tmp_path):
    from hltm_resources.config import Settings

    snap = tmp_path / "snap"
    snap.mkdir()
    write_jsonl(snap / "accounts.jsonl", [{"account_id": "a", "name": "A"}])
    write_jsonl(snap / "seats.jsonl", [{"seat_id": "s", "account_id": "a", "name": "S"}])
    write_jsonl(
        snap / "projects.jsonl",
        [
            {"project_id": "p1", "seat_id": "s", "name": "One", "updated_at": "2026"},
            {"project_id": "p2", "seat_id": "s", "name": "Two", "updated_at": "2026"},
        ],
    )
    write_jsonl(
        snap / "documents.jsonl",
        [
            {
                "doc_id": "d1",
                "project_id": "p1",
                "kind": "req",
                "updated_at": "2026",
                "text": "Location: Dublin\nSkills: Python",
            },
            {
                "doc_id": "d2",
                "project_id": "p2",
                "kind": "req",
                "updated_at": "2026",
                "text": "Location: Lisbon\nSkills: Kubernetes",
            },
        ],
    )
    settings_ = Settings(home=tmp_path / "home")
    load_snapshot(settings_, snap)
    emb = KeywordEmbedder()
    indexer = Indexer(settings_, embedder=emb)
    for level in ("project", "seat", "account"):
        indexer.build(level, indexer.plan().keys(level))
    mem = Memory(settings_, embedder=emb, log_queries=False)
    r = mem.retrieve(
        "Which openings required Python?", scope="seat:s", k_facet=10, k_qa=50, k_summary=10
    )
    assert [m.text for m in r.context.parsed.micro] == ["skill: Python"]
    q = emb.embed(["skill: Python"])[0]
    question = emb.embed(["Which openings required Python?"])[0]
    with database.connect(settings_.duckdb_path, read_only=True) as con:
        facets = con.execute("SELECT node_id, key, value FROM memory_facets").fetchall()
        qa = con.execute("SELECT node_id, question FROM memory_qa").fetchall()
        summaries = dict(con.execute("SELECT node_id, concise FROM memory_summaries").fetchall())
    for node in r.context.facets:  # s_facet with k=1: the best facet cosine
        texts = [f"{k}: {v}" for n, k, v in facets if n == node.node_id]
        assert node.score == pytest.approx(max(emb.embed(texts) @ q), abs=1e-5)
    by_node: dict = {}
    for item in r.context.qa:
        by_node[item.node_id] = max(by_node.get(item.node_id, -1), item.score)
    for node_id, score in by_node.items():  # s_qa: the best question cosine
        texts = [t for n, t in qa if n == node_id]
        assert score == pytest.approx(max(emb.embed(texts) @ question), abs=1e-5)
    for item in r.context.summaries:  # s_summary: cosine with the one-sentence summary
        assert item.score == pytest.approx(
            float(emb.embed([summaries[item.node_id]])[0] @ question), abs=1e-5
        )
    assert r.context.facets[0].node_id in ("project:p1", "seat:s")
    answer = mem.ask("Which openings required Python?", scope="seat:s")
    assert answer.references == ["project:p1"]


# -- answers ---------------------------------------------------------------------------------


def test_answers_match_the_generators_gold(mem, world):
    queries = make_queries(world, seed=1)
    scores = []
    for q in queries:
        r = mem.ask(q["question"], scope=q["scope"])
        if q["type"] == "retrieval":
            leaves = [x for x in r.references if x.startswith("project:")]
            scores.append(prf(leaves, q["gold_references"])[2])
            if q["probe"]:
                assert r.references == [] and r.answer.startswith("None in scope")
        else:
            top = q["gold_entities"][0]
            assert top.lower() in r.answer.lower(), (q["question"], r.answer)
    assert sum(scores) / len(scores) > 0.95


def test_asks_are_logged(tmp_path, snapshot_dir, built_home):
    m = Memory(built_home, log_queries=True)
    seat = "seat:" + next(iter(["northwind-0-r01"]))
    r = m.ask("Where are the jobs usually located?", scope=seat, query_id="log-test-1")
    with database.connect(built_home.duckdb_path, read_only=True) as con:
        row = con.execute(
            "SELECT scope, question, references_, latency_ms, matched_keys "
            "FROM query_log WHERE query_id = 'log-test-1'"
        ).fetchone()
    assert row[0] == seat and row[1] == "Where are the jobs usually located?"
    assert list(row[2]) == r.references and row[3] > 0 and "location" in row[4]


def test_batch_reports_bad_lines_and_answers_the_rest(tmp_path, built_home, world):
    seat = f"seat:{world.seats[0]['seat_id']}"
    lines = [
        json.dumps({"query_id": "a", "scope": seat, "question": "Where are the jobs located?"}),
        "{not json",
        json.dumps({"query_id": "b", "scope": seat}),
        json.dumps({"query_id": "c", "scope": "seat:x' OR 1=1", "question": "hi?"}),
        json.dumps({"query_id": "d", "scope": seat, "question": "Which openings required SQL?"}),
    ]
    queries = tmp_path / "q.jsonl"
    queries.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    summary = answer_batch(built_home, queries, out, memory=Memory(built_home, log_queries=False))
    answers = [json.loads(x) for x in out.read_text().splitlines()]
    assert [a["query_id"] for a in answers] == ["a", "d"]
    assert set(answers[0]) == {
        "query_id",
        "answer",
        "references",
        "latency_ms",
        "llm_calls",
        "tokens",
    }
    assert [p.split(":")[1] for p in summary["problems"]] == ["2", "3", "4"]
    assert "not valid JSON" in summary["problems"][0] and "question" in summary["problems"][1]


def test_query_module_never_imports_dagster(built_home):
    code = (
        "import sys; from query import Memory; from hltm_resources.config import Settings;"
        f"m = Memory(Settings(home={str(built_home.home)!r}), log_queries=False);"
        "m.catalog(); "
        "bad = sorted(x for x in sys.modules if x.split('.')[0] == 'dagster'); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_warmed_up_memory_answers_as_a_cold_one(built_home):
    from query import Memory

    questions = [("Where are the jobs usually located?", "account:northwind-0")]
    questions += [("Which projects require Python?", "seat:northwind-0-r01")]
    cold = Memory(built_home, log_queries=False)
    warm = Memory(built_home, log_queries=False).warm_up()
    assert warm._embedder is not None and warm._catalog is not None  # loaded before a question
    for question, scope in questions:
        a, b = cold.ask(question, scope=scope).as_dict(), warm.ask(question, scope=scope).as_dict()
        assert {k: v for k, v in a.items() if k != "timings"} == {
            k: v for k, v in b.items() if k != "timings"
        }
