"""The public benchmarks (LoCoMo, LongMemEval_S): loaders, snapshots, ranking, a tiny run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hltm_resources.config import Settings
from hltm_resources.engines.base import ContextItem, NodeContext, ParsedQuery, RetrievedContext
from hltm_resources.stores.sot import read_snapshot
from query.evaluation.data import public
from query.evaluation.reports.public import markdown
from query.evaluation.runners import public as public_runs

# The public datasets are read where they lie, never copied: HLTM_PUBLIC_DATA, else the
# checkout's sibling ../shared/data, else this workplace's /work/shared/data.
_DATA_DIRS = [Path(p) for p in [os.environ.get("HLTM_PUBLIC_DATA")] if p] + [
    Path(__file__).resolve().parents[2] / "shared" / "data",
    Path("/work/shared/data"),
]
DATA = next((p for p in _DATA_DIRS if p.is_dir()), _DATA_DIRS[0])
LOCOMO_DEV = DATA / "locomo" / "locomo_dev.json"
LONGMEMEVAL_DEV = DATA / "longmemeval" / "longmemeval_s_dev.json"


def _turn(speaker: str, dia: str, text: str, **extra: str) -> dict:
    return {"speaker": speaker, "dia_id": dia, "text": text, **extra}


def locomo_fixture() -> list[dict]:
    conversation = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            _turn("Ana", "D1:1", "I adopted a puppy named Biscuit last week."),
            _turn("Ben", "D1:2", "Lovely! I started pottery classes in Dublin."),
            _turn("Ana", "D1:3", "Look at this.", blip_caption="a photo of a small brown dog"),
        ],
        "session_2_date_time": "10:00 am on 9 June, 2023",
        "session_2": [
            _turn("Ben", "D2:1", "My pottery teacher moved to Cork."),
            _turn("Ana", "D2:2", "Biscuit learned to sit yesterday."),
        ],
        # A date key without a session, as in conv-26: it must not become a project.
        "session_3_date_time": "3:00 pm on 1 July, 2023",
    }
    qa = [
        {
            "question": "What is the name of Ana's puppy?",
            "answer": "Biscuit",
            "evidence": ["D1:1"],
            "category": 4,
        },
        {
            "question": "Where did Ben start pottery classes?",
            "answer": "Dublin",
            "evidence": ["D1:2; D2:1"],
            "category": 1,
        },
        {
            "question": "When did Biscuit learn to sit?",
            "answer": "8 June 2023",
            "evidence": ["D:2:02", "D8:6; D9:17"],
            "category": 2,
        },
        {
            "question": "What is Ben's dog called?",
            "adversarial_answer": "Biscuit",
            "evidence": ["D1:1"],
            "category": 5,
        },
    ]
    return [
        {
            "sample_id": "conv-1",
            "conversation": conversation,
            "qa": qa,
            "observation": {},
            "session_summary": {},
            "event_summary": {},
        }
    ]


def _session(*pairs: tuple[str, str, bool]) -> list[dict]:
    return [{"role": r, "content": c, "has_answer": h} for r, c, h in pairs]


def longmemeval_fixture() -> list[dict]:
    shared = _session(
        ("user", "I bought a red bike for commuting.", True),
        ("assistant", "Great choice for commuting!", False),
    )
    other = _session(
        ("user", "Recommend a pasta recipe.", False),
        ("assistant", "Try carbonara with eggs and pecorino.", False),
    )
    return [
        {
            "question_id": "q1",
            "question_type": "single-session-user",
            "question": "What colour is my bike?",
            "question_date": "2023/06/01 (Thu) 10:00",
            "answer": "red",
            "answer_session_ids": ["answer_s1"],
            "haystack_session_ids": ["answer_s1", "sess 2/x", "sess 2/x"],
            "haystack_dates": [
                "2023/05/01 (Mon) 09:00",
                "2023/05/02 (Tue) 09:00",
                "2023/05/03 (Wed) 09:00",
            ],
            "haystack_sessions": [shared, other, other],
        },
        {
            "question_id": "q2_abs",
            "question_type": "single-session-user",
            "question": "What colour is my car?",
            "question_date": "2023/06/01 (Thu) 10:00",
            "answer": "You did not mention a car.",
            "answer_session_ids": [],
            "haystack_session_ids": ["answer_s1", "s9"],
            "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/04 (Thu) 09:00"],
            "haystack_sessions": [shared, other],
        },
        {
            "question_id": "q3",
            "question_type": "multi-session",
            "question": "What pasta did you recommend?",
            "question_date": "2023/06/02 (Fri) 10:00",
            "answer": "carbonara",
            "answer_session_ids": ["s9"],
            "haystack_session_ids": ["s9", "answer_s1"],
            "haystack_dates": ["2023/05/04 (Thu) 09:00", "2023/05/01 (Mon) 09:00"],
            "haystack_sessions": [other, shared],
        },
    ]


def _write(tmp_path: Path, name: str, records: list[dict]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


# -- loaders ----------------------------------------------------------------------------------


def test_locomo_loader_builds_a_valid_snapshot(tmp_path):
    data = public.load_locomo(_write(tmp_path, "locomo.json", locomo_fixture()))
    snap = read_snapshot(public.write_public_snapshot(data, tmp_path / "snap"))
    assert [a["account_id"] for a in snap.rows("accounts.jsonl")] == ["locomo"]
    assert [s["seat_id"] for s in snap.rows("seats.jsonl")] == ["conv-1"]
    assert [p["project_id"] for p in snap.rows("projects.jsonl")] == ["conv-1-s1", "conv-1-s2"]
    assert "8 May, 2023" in snap.rows("projects.jsonl")[0]["name"]
    docs = {d["doc_id"]: d for d in snap.rows("documents.jsonl")}
    assert list(docs) == ["conv-1:D1:1", "conv-1:D1:2", "conv-1:D1:3", "conv-1:D2:1", "conv-1:D2:2"]
    assert docs["conv-1:D1:1"]["text"] == "Ana: I adopted a puppy named Biscuit last week."
    assert docs["conv-1:D1:3"]["text"].endswith("[image: a photo of a small brown dog]")
    assert docs["conv-1:D2:1"]["updated_at"] == "10:00 am on 9 June, 2023"
    assert {d["kind"] for d in snap.rows("documents.jsonl")} == {"turn"}
    by_q = {q.question: q for q in data.questions}
    assert by_q["Where did Ben start pottery classes?"].gold == ("D1:2", "D2:1")
    # "D:2:02" normalizes to D2:2; "D8:6; D9:17" are two unknown ids, counted and skipped.
    assert by_q["When did Biscuit learn to sit?"].gold == ("D2:2",)
    assert data.malformed_evidence == 2
    assert by_q["What is Ben's dog called?"].skip == "adversarial"
    assert all(q.scope == "seat:conv-1" for q in data.questions)


def test_longmemeval_loader_builds_a_valid_snapshot(tmp_path):
    data = public.load_longmemeval(_write(tmp_path, "lme.json", longmemeval_fixture()))
    snap = read_snapshot(public.write_public_snapshot(data, tmp_path / "snap"))
    assert [s["seat_id"] for s in snap.rows("seats.jsonl")] == ["q1", "q2_abs", "q3"]
    projects = [p["project_id"] for p in snap.rows("projects.jsonl")]
    assert len(projects) == len(set(projects)) == 7
    # Unsafe characters are replaced, a session listed twice gets a distinct project.
    assert projects[:3] == ["q1-answer_s1", "q1-sess-2-x", "q1-sess-2-x-2"]
    assert data.original_session["q1-sess-2-x-2"] == "sess 2/x"
    assert (
        len({d["doc_id"] for d in snap.rows("documents.jsonl")})
        == len(snap.rows("documents.jsonl"))
        == 14
    )
    q1, q2, q3 = data.questions
    assert q1.gold == ("answer_s1",) and q1.gold_turns == ("q1-answer_s1:0",)
    assert q2.skip == "abstention"
    assert q3.scope == "seat:q3" and q3.group == "multi-session"


def test_limit_counts_samples(tmp_path):
    lme = _write(tmp_path, "lme.json", longmemeval_fixture())
    assert [q.qid for q in public.load_longmemeval(lme, limit=1).questions] == ["q1"]
    # Round-robin over question types: the second pick is the next type, not the next line.
    data = public.load_longmemeval(lme, limit=2)
    assert [c[0] for c in data.conversations] == ["q1", "q3"] and len(data.questions) == 2
    locomo = public.load_locomo(_write(tmp_path, "locomo.json", locomo_fixture() * 2), limit=1)
    assert len(locomo.conversations) == 1 and len(locomo.questions) == 4


def test_loaders_say_what_is_wrong(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.json"):
        public.load_locomo(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="locomo layout"):
        public.load_locomo(_write(tmp_path, "wrong.json", longmemeval_fixture()))
    with pytest.raises(ValueError, match="longmemeval layout"):
        public.load_longmemeval(_write(tmp_path, "wrong2.json", locomo_fixture()))


def test_safe_id_keeps_ids_valid_and_unique():
    used: set[str] = set()
    assert public.safe_id("a/b c", used) == "a-b-c"
    assert public.safe_id("a/b c", used) == "a-b-c-2"
    assert public.safe_id("..x..y", used) == "x.y"
    assert len(public.safe_id("z" * 300)) == 128
    assert public.safe_id("conv-1:D1:3 ", doc=True) == "conv-1:D1:3-"


# -- ranking ----------------------------------------------------------------------------------


def _item(view: str, node: str, level: str, score: float, sources: tuple[str, ...]):
    return ContextItem(view, node, level, score, "text", source_ids=sources)


def test_hltm_ranking_fuses_views_with_evidence_leading(tmp_path):
    data = public.load_locomo(_write(tmp_path, "locomo.json", locomo_fixture()))
    ev1 = _item("evidence", "project:conv-1-s1", "project", 0.05, ("conv-1:D1:2",))
    ev2 = _item("evidence", "project:conv-1-s2", "project", 0.04, ("conv-1:D2:1",))
    facet = _item("facet", "project:conv-1-s2", "project", 0.9, ("conv-1:D2:2",))
    seat = _item("facet", "seat:conv-1", "seat", 0.95, ("project:conv-1-s1",))
    summary = _item("summary", "project:conv-1-s1", "project", 0.99, ("conv-1:D1:3", "conv-1:D1:1"))
    qa = _item("qa", "project:conv-1-s2", "project", 0.7, ("conv-1:D2:1", "conv-1:D2:2"))
    ctx = RetrievedContext(
        "seat:conv-1",
        "q",
        ParsedQuery("summary", ()),
        [
            NodeContext("project:conv-1-s2", "project", "s2", 0.9, 1, (facet,)),
            NodeContext("seat:conv-1", "seat", "c", 0.95, 2, (seat,)),
        ],
        [qa],
        [summary],
        [ev1, ev2],
    )
    # Evidence leads; a turn that QA agrees on moves up; facets and QA follow at lower
    # weight; a summary's whole session and a parent's children are not turns it found.
    assert public_runs.hltm_ranked_docs(ctx, data) == ["conv-1:D2:1", "conv-1:D1:2", "conv-1:D2:2"]


# -- end to end -------------------------------------------------------------------------------


def _check_scores(out: dict, benchmark: str) -> None:
    assert set(out.scores) == {"hltm", "flat_rag"}
    for row in out.scores.values():
        assert row["questions"] > 0
        ratios = {k: v for k, v in row.items() if "recall@" in k or k.startswith("token_f1")}
        assert {"recall@5", "recall@10"} <= set(ratios)
        assert all(0.0 <= v <= 1.0 for v in ratios.values()), ratios
        assert row["latency_p50_ms"] >= 0 and row["context_tokens@10"] >= 0
    assert "| hltm |" in markdown(out) and "| flat_rag |" in markdown(out)
    assert benchmark in markdown(out)


def test_run_public_locomo_end_to_end(tmp_path):
    path = _write(tmp_path, "locomo.json", locomo_fixture())
    settings = Settings(home=tmp_path / "home")
    out = public_runs.run_public(settings, "locomo", path)
    _check_scores(out, "locomo")
    row = out.scores["hltm"]
    assert row["questions"] == 3 and row["adversarial_skipped"] == 1
    assert row["malformed_evidence"] == 2 and "token_f1" in row
    assert "58.8%" in markdown(out)
    assert {"recall@10_cat1", "recall@10_cat2", "recall@10_cat4"} <= set(row)
    # Same data file and limit: the built memory is reused.
    marker = tmp_path / "home" / "eval" / "locomo-all" / "public-data.txt"
    assert marker.is_file()
    _, _, rebuilt = public_runs.prepare(settings, "locomo", path)
    assert rebuilt is False


def test_run_public_longmemeval_end_to_end(tmp_path):
    path = _write(tmp_path, "lme.json", longmemeval_fixture())
    out = public_runs.run_public(
        Settings(home=tmp_path / "home"), "longmemeval", path, show_progress=True
    )
    _check_scores(out, "longmemeval")
    row = out.scores["flat_rag"]
    assert row["questions"] == 2 and row["abstention_skipped"] == 1
    assert {"turn_recall@5", "recall@5_multi-session", "context_tokens@25"} <= set(row)
    assert (tmp_path / "home" / "eval" / "longmemeval-all" / "public-data.txt").is_file()


def test_unknown_benchmark(tmp_path):
    with pytest.raises(ValueError, match="unknown benchmark"):
        public_runs.run_public(Settings(home=tmp_path), "nope", tmp_path / "x.json")


# -- the shared datasets (skipped when absent) ----------------------------------------------


@pytest.mark.skipif(not LOCOMO_DEV.is_file(), reason=f"{LOCOMO_DEV} is absent")
def test_locomo_dev_loads_as_a_valid_snapshot(tmp_path):
    data = public.load_locomo(LOCOMO_DEV)
    snap = read_snapshot(public.write_public_snapshot(data, tmp_path / "snap"))
    assert len(snap.rows("seats.jsonl")) == 5 and "conv-26" in {
        s["seat_id"] for s in snap.rows("seats.jsonl")
    }
    assert len(snap.rows("documents.jsonl")) == len(data.doc_text)
    # conv-26 has date keys for sessions 20-35 that hold no turns: no project for them.
    assert "conv-26-s20" not in {p["project_id"] for p in snap.rows("projects.jsonl")}
    assert len(data.questions) == 999


@pytest.mark.skipif(not LONGMEMEVAL_DEV.is_file(), reason=f"{LONGMEMEVAL_DEV} is absent")
def test_longmemeval_dev_loads_as_a_valid_snapshot(tmp_path):
    data = public.load_longmemeval(LONGMEMEVAL_DEV, limit=3)
    snap = read_snapshot(public.write_public_snapshot(data, tmp_path / "snap"))
    assert len(snap.rows("seats.jsonl")) == 3 and len(data.questions) == 3
    for q in data.questions:
        sessions = {
            data.original_session[p["project_id"]]
            for p in snap.rows("projects.jsonl")
            if p["seat_id"] == q.scope.split(":", 1)[1]
        }
        assert set(q.gold) <= sessions
