"""Time: what is true now, and what was true then.

Every leaf fact carries when it became true and, once a later document states another value
(or says it no longer holds), when it stopped. Questions, summaries and support counts use
what holds now; ``ask(..., as_of=DATE)`` answers with what held then, at any scope; the
superseded facts are history, kept with their documents as provenance; forgetting the
document that replaced a value makes the older value current again, with no trace left.

The home is hand-written, one seat (ana) of account acme:

- p1, Data Engineer: Dublin, on-site (10 Jan); "moves from Dublin to Berlin" (2 Mar).
- p2, Registered Nurse: Dublin, on-site (15 Jan); "now hybrid" (1 Apr); "now fully remote"
  (20 May): a preference that changes twice.
- p3, Pastry Chef: Dublin (1 Feb).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import duckdb
import httpx
import pytest

from hltm_resources.config import Settings
from hltm_resources.dates import AsOfError, instant
from hltm_resources.indexing.loading import load_and_build
from hltm_resources.indexing.verify import verify
from query import Memory
from tests.conftest import write_jsonl
from tests.test_deletion import duckdb_hits
from tests.test_live import hltm, service
from tests.test_server import mcp_http, tool_text

DOCUMENTS = [
    (
        "d1",
        "p1",
        '{"job_title": "Data Engineer", "office_location": "Dublin", "workplace_type": "On-site"}',
        "2026-01-10",
    ),
    ("d2", "p1", "Update: the role moves from Dublin to Berlin.", "2026-03-02"),
    (
        "d3",
        "p2",
        '{"job_title": "Registered Nurse", "office_location": "Dublin", "workplace_type": '
        '"On-site"}',
        "2026-01-15",
    ),
    ("d4", "p2", "The role is now hybrid.", "2026-04-01"),
    ("d5", "p2", "Change of plan: the role is now fully remote.", "2026-05-20"),
    ("d6", "p3", '{"job_title": "Pastry Chef", "office_location": "Dublin"}', "2026-02-01"),
]
WHERE = "Where is the role located?"
HOW = "Is the role remote, hybrid or on-site?"


def snapshot(directory: Path, documents=DOCUMENTS) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    write_jsonl(directory / "accounts.jsonl", [{"account_id": "acme", "name": "Acme"}])
    write_jsonl(
        directory / "seats.jsonl", [{"seat_id": "ana", "account_id": "acme", "name": "Ana"}]
    )
    write_jsonl(
        directory / "projects.jsonl",
        [
            {"project_id": p, "seat_id": "ana", "name": n, "updated_at": "2026-01-01"}
            for p, n in (("p1", "Data Engineer"), ("p2", "Nurse"), ("p3", "Pastry Chef"))
        ],
    )
    write_jsonl(
        directory / "documents.jsonl",
        [
            {"doc_id": d, "project_id": p, "kind": "note", "text": t, "updated_at": at}
            for d, p, t, at in documents
        ],
    )
    return directory


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Settings:
    base = tmp_path_factory.mktemp("time")
    settings = Settings(home=base / "home")
    load_and_build(settings, snapshot(base / "snap"))
    return settings


@pytest.fixture(scope="module")
def memory(home):
    with Memory(home, log_queries=False) as mem:
        yield mem


def rows(settings: Settings, sql: str, *params) -> list[tuple]:
    con = duckdb.connect(str(settings.duckdb_path), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


# -- a move with dates ----------------------------------------------------------------------


def test_a_move_answers_the_new_city_now_and_the_old_one_as_of_before_it(memory):
    now = memory.ask(WHERE, "project:p1")
    # (quoting the document that moved it, which names both)
    assert now.answer.startswith("Berlin"), now.answer
    before = memory.ask(WHERE, "project:p1", as_of="2026-02-01")
    assert "Dublin" in before.answer and "Berlin" not in before.answer, before.answer
    assert before.references == ["project:p1"] and before.as_of == "2026-02-01T23:59:59"
    # The reason names the fact, its document and its validity.
    (reason,) = before.reasons["project:p1"]
    assert reason == {
        "by": "fact",
        "key": "location",
        "value": "Dublin",
        "source_ids": ["d1"],
        "valid_from": "2026-01-10",
        "valid_to": "2026-03-02",
    }
    on_the_day = memory.ask(WHERE, "project:p1", as_of="2026-03-02")
    assert "Berlin" in on_the_day.answer and "Dublin" not in on_the_day.answer


def test_the_views_hold_the_current_fact_with_its_start_and_the_old_one_as_history(home):
    assert rows(
        home,
        "SELECT value, valid_from, valid_to FROM memory_facets "
        "WHERE node_id = 'project:p1' AND key = 'location'",
    ) == [("Berlin", "2026-03-02", None)]
    assert rows(
        home,
        "SELECT value, source_ids, valid_from, valid_to FROM memory_facet_history "
        "WHERE node_id = 'project:p1'",
    ) == [("Dublin", ["d1"], "2026-01-10", "2026-03-02")]


# -- a preference that changes twice --------------------------------------------------------


def test_a_preference_that_changes_twice_is_answered_for_each_period(memory, home):
    for as_of, expected in (
        ("2026-02-15", "on-site"),
        ("2026-04-15", "hybrid"),
        (None, "remote"),
    ):
        answer = memory.ask(HOW, "project:p2", as_of=as_of).answer
        assert expected in answer.lower(), (as_of, answer)
        others = {"on-site", "hybrid", "remote"} - {expected}
        assert not any(o in answer.lower() for o in others), (as_of, answer)
        # It asks which of three, not whether: no "Yes" or "No" (a value no document of the
        # tree holds now, hybrid, is still read as one of the three).
        assert not answer.startswith(("Yes", "No")), answer
    assert rows(
        home,
        "SELECT value, valid_from, valid_to FROM memory_facet_history "
        "WHERE node_id = 'project:p2' ORDER BY valid_from",
    ) == [("on-site", "2026-01-15", "2026-04-01"), ("hybrid", "2026-04-01", "2026-05-20")]


# -- parents: current counts now, the leaves' validity as of a date -------------------------


def test_parents_count_current_values_and_as_of_counts_what_the_leaves_held_then(memory, home):
    support = dict(
        rows(
            home,
            "SELECT value, support FROM memory_facets "
            "WHERE node_id = 'seat:ana' AND key = 'location'",
        )
    )
    assert support == {"Dublin": 2, "Berlin": 1}  # p1 moved: history does not count
    summary = rows(home, "SELECT detailed FROM memory_summaries WHERE node_id = 'seat:ana'")
    assert "Dublin" in summary[0][0]

    then = memory.ask("Where are the jobs located?", "seat:ana", as_of="2026-02-15").answer
    assert "Dublin (3 of 3)" in then and "Berlin" not in then, then
    now_listed = memory.ask("Which projects are in Dublin?", "seat:ana")
    assert set(now_listed.references) == {"project:p2", "project:p3"}, now_listed.answer
    then_listed = memory.ask("Which projects are in Dublin?", "seat:ana", as_of="2026-02-15")
    assert set(then_listed.references) == {"project:p1", "project:p2", "project:p3"}, (
        then_listed.answer
    )
    # Before p3's first document, p3 held nothing yet.
    early = memory.ask("Which projects are in Dublin?", "account:acme", as_of="2026-01-20")
    assert set(early.references) == {"project:p1", "project:p2"}, early.answer


# -- dates nothing is known at, and dates that are no dates ---------------------------------


def test_as_of_a_date_before_any_document_says_nothing_is_known_then(memory):
    for scope in ("project:p1", "seat:ana", "account:acme"):
        result = memory.ask(WHERE, scope, as_of="2025-12-01")
        assert result.answer.startswith("Nothing is known"), result.answer
        assert "2026-01-10" in result.answer  # and from when something is
        assert result.references == []


def test_an_as_of_that_is_no_date_is_refused_saying_what_to_send(memory):
    for bad in ("next tuesday", "2026-13-01", "", 20260301):
        with pytest.raises(AsOfError, match="as_of must be a date such as 2026-03-02"):
            memory.ask(WHERE, "project:p1", as_of=bad)


def test_dates_are_read_in_the_forms_sources_write_them():
    assert instant("2026-03-02") == "2026-03-02"
    assert instant("2026-03-02T09:30:00Z") == "2026-03-02T09:30:00"
    assert instant("2023/05/20 (Sat) 02:21") == "2023-05-20T02:21"  # LongMemEval
    assert instant("1:56 pm on 8 May, 2023") == "2023-05-08T13:56"  # LoCoMo
    assert instant("May 8, 2023") == "2023-05-08"
    assert instant("someday") == "" and instant("2026-02-30") == ""


# -- questions that name a time ------------------------------------------------------------


def test_a_question_naming_a_month_is_answered_as_of_its_end(memory):
    then = memory.ask("What was the location in February 2026?", "project:p1")
    assert then.as_of == "2026-02-28T23:59:59" and "Dublin" in then.answer, then.answer
    assert "Berlin" not in then.answer
    later = memory.ask("Where was the role located in April 2026?", "project:p1")
    assert "Berlin" in later.answer and "Dublin" not in later.answer, later.answer
    seat = memory.ask("Where were the jobs located in February 2026?", "seat:ana")
    assert "Dublin (3 of 3)" in seat.answer, seat.answer  # "February" is no place


def test_what_changed_since_a_date_lists_each_replacement_with_its_document(memory):
    changed = memory.ask("What changed since March 2026?", "seat:ana")
    for said in (
        "on 2026-03-02, the location of Data Engineer (project:p1) went from Dublin to Berlin (d2)",
        "on 2026-04-01, the workplace type of Nurse (project:p2) went from on-site to hybrid (d4)",
        "on 2026-05-20, the workplace type of Nurse (project:p2) went from hybrid to remote (d5)",
    ):
        assert said in changed.answer, changed.answer
    assert set(changed.references) == {"project:p1", "project:p2"}
    quiet = memory.ask("What changed since June 2026?", "seat:ana")
    assert quiet.answer.startswith("Nothing in Ana (seat:ana) changed since 2026-06-01")


def test_when_a_fact_began_is_answered_with_its_validity(memory):
    moved = memory.ask("When did the role move to Berlin?", "project:p1")
    assert "Berlin since 2026-03-02, still so (d2)" in moved.answer, moved.answer
    assert "Dublin since 2026-01-10 until 2026-03-02 (d1)" in moved.answer
    remote = memory.ask("When did the role become remote?", "project:p2")
    assert "remote since 2026-05-20, still so (d5)" in remote.answer, remote.answer
    # At the seat, the leaves where it changed.
    seat = memory.ask("When did the location change?", "seat:ana")
    assert seat.references == ["project:p1"], seat.answer


def test_time_words_about_no_attribute_memory_keeps_are_asked_as_any_question(memory):
    plain = memory.ask("What did the notes say in May 2026?", "project:p2")
    assert plain.as_of is None and not plain.answer.startswith("As of"), plain.answer


def test_the_time_a_question_names_is_read_with_the_year_counted_back_from_today():
    from datetime import date

    from hltm_resources.dates import time_asked

    today = date(2026, 12, 7)
    assert time_asked("What was the location in March?", today).moment == "2026-03-31T23:59:59"
    assert time_asked("Where was it on 2 March?", today).moment == "2026-03-02T23:59:59"
    assert time_asked("Where was it at the start of March?", today).moment.startswith("2026-03-01")
    assert time_asked("Where was it in December?", date(2026, 11, 1)).moment.startswith(
        "2025-12-31"
    )
    assert time_asked("What changed since May 2026?", today).kind == "since"
    assert time_asked("When did the role become remote?", today).kind == "when"
    for timeless in (
        "Where is the role located?",
        "Which roles may need Python?",  # "may" is a verb here
        "Which searches had a start date before June 2025?",  # a comparison of dates
        "Is the role remote, hybrid or on-site?",
    ):
        assert time_asked(timeless, today) is None, timeless


def test_a_time_counted_back_from_when_the_question_is_asked_puts_its_passages_first(tmp_path):
    books = [
        ("b1", "p1", "I finished reading Dune today, what a book.", "2023-01-10"),
        ("b2", "p1", "I finished reading Emma today, what a book.", "2023-01-31"),
    ]
    settings = Settings(home=tmp_path / "home")
    load_and_build(settings, snapshot(tmp_path / "snap", books))
    question = "Which book did I finish a week ago?"
    with Memory(settings, log_queries=False) as mem:
        for asked_at, first in (("2023-02-07", "b2"), ("2023/01/17 (Tue) 09:00", "b1")):
            found = mem.retrieve(question, "seat:ana", asked_at=asked_at).context.evidence
            assert found[0].source_ids == (first,), (asked_at, found)
        # Asked when nothing is dated a week before: the order of relevance stands.
        plain = mem.retrieve(question, "seat:ana").context.evidence
        late = mem.retrieve(question, "seat:ana", asked_at="2024-06-01").context.evidence
        assert [e.source_ids for e in late] == [e.source_ids for e in plain]


def test_the_days_a_question_counts_back_are_read_from_when_it_is_asked():
    from hltm_resources.dates import time_window

    asked = "2023/07/01 (Sat) 13:38"
    assert time_window("Which book did I finish a week ago?", asked) == ("2023-06-22", "2023-06-26")
    assert time_window("What did I cook a couple of days ago?", asked) == (
        "2023-06-28",
        "2023-06-30",
    )
    assert time_window("What did I eat yesterday?", asked) == ("2023-06-30", "2023-06-30")
    # A span asked for is no time to look at; nor is a question that names none.
    assert time_window("How many weeks ago did I meet my aunt?", asked) is None
    assert time_window("Which book did I finish?", asked) is None
    assert time_window("Which book did I finish a week ago?", "someday") is None


# -- forgetting the document that replaced a value ------------------------------------------


def test_forgetting_the_superseding_document_makes_the_old_value_current_with_no_trace(
    tmp_path,
):
    settings = Settings(home=tmp_path / "home")
    load_and_build(settings, snapshot(tmp_path / "snap"))
    done = hltm(settings.home, "forget", "d2")
    assert done.returncode == 0, done.stderr
    with Memory(settings, log_queries=False) as mem:
        answer = mem.ask(WHERE, "project:p1").answer
        assert "Dublin" in answer and "Berlin" not in answer, answer
    assert rows(
        settings,
        "SELECT value, valid_from, valid_to FROM memory_facets "
        "WHERE node_id = 'project:p1' AND key = 'location'",
    ) == [("Dublin", "2026-01-10", None)]
    assert rows(settings, "SELECT * FROM memory_facet_history WHERE node_id = 'project:p1'") == []
    assert duckdb_hits(settings.duckdb_path, "Berlin") == []
    # Incremental equals a full rebuild of what is left.
    report = verify(settings)
    assert report.ok, report

    # And a home built from the documents without d2 holds the same memory of p1.
    rebuilt = Settings(home=tmp_path / "rebuilt")
    load_and_build(rebuilt, snapshot(tmp_path / "snap2", [d for d in DOCUMENTS if d[0] != "d2"]))
    same = (
        "SELECT key, value, valid_from FROM memory_facets WHERE node_id = 'project:p1' ORDER BY 1"
    )
    assert rows(settings, same) == rows(rebuilt, same)


# -- the API and the CLI ----------------------------------------------------------------------


async def recall_as_of(url: str) -> None:
    """The MCP ``recall`` tool with ``as_of``, through the SDK's own client."""
    async with mcp_http(url) as client:
        then = await client.call_tool(
            "recall", {"question": WHERE, "scope": "project:p1", "as_of": "2026-02-01"}
        )
        assert not then.is_error and "Dublin" in tool_text(then), tool_text(then)
        bad = await client.call_tool(
            "recall", {"question": WHERE, "scope": "project:p1", "as_of": "soon"}
        )
        assert bad.is_error and "as_of must be a date" in tool_text(bad)


@pytest.mark.slow
def test_as_of_over_http_mcp_and_the_cli(tmp_path):
    settings = Settings(home=tmp_path / "home")
    load_and_build(settings, snapshot(tmp_path / "snap"))
    cli = hltm(settings.home, "ask", WHERE, "--scope", "project:p1", "--as-of", "2026-02-01")
    assert cli.returncode == 0 and "Dublin" in cli.stdout and "Berlin" not in cli.stdout
    wrong = hltm(settings.home, "ask", WHERE, "--scope", "project:p1", "--as-of", "soon")
    assert wrong.returncode != 0 and "as_of must be a date" in wrong.stderr
    with service(settings.home) as (_, url):
        with httpx.Client(base_url=url, timeout=120) as http:
            asked = http.post(
                "/v1/ask", json={"question": WHERE, "scope": "project:p1", "as_of": "2026-02-01"}
            )
            assert asked.status_code == 200, asked.text
            assert "Dublin" in asked.json()["answer"] and asked.json()["as_of"]
            bad = http.post(
                "/v1/ask", json={"question": WHERE, "scope": "project:p1", "as_of": [2026]}
            )
            assert bad.status_code == 400 and "as_of must be a date" in bad.json()["error"]
            assert "Traceback" not in bad.text
            node = http.get("/v1/nodes/project:p1").json()
            assert node["history"] == [
                {
                    "key": "location",
                    "value": "Dublin",
                    "source_ids": ["d1"],
                    "valid_from": "2026-01-10",
                    "valid_to": "2026-03-02",
                }
            ]
            page = http.get("/node/project:p1").text  # the inspector's page of the node
            assert "Replaced facts (1)" in page and "2026-01-10 until 2026-03-02" in page
            asyncio.run(recall_as_of(url))
            via_cli = hltm(
                settings.home,
                "ask",
                WHERE,
                "--scope",
                "project:p1",
                "--as-of",
                "2026-02-01",
                "--json",
            )
            assert "Dublin" in json.loads(via_cli.stdout)["answer"]
