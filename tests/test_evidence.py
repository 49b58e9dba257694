"""Evidence is never lost: every document is searchable at its leaf, and a leaf is verified
against each constraint by its facets or by its evidence. Small hand-written fixtures, one per
failure mode an extractor alone has: a value only in a feedback note, an export key no alias
table knows, a negation, a paraphrased question, a knowledge update."""

from pathlib import Path

import numpy as np
import pytest

from hltm_resources.config import Settings
from hltm_resources.engines.aliases import value_aliases
from hltm_resources.engines.base import ScopeVocabulary
from hltm_resources.engines.extractive.questions import parse_question
from hltm_resources.indexing.evidence import leaf_passages, natural_key, pack, units
from hltm_resources.indexing.indexer import context_vectors
from hltm_resources.indexing.loading import load_and_build
from hltm_resources.models import Document
from hltm_resources.stores import database
from query import Memory
from query.verification import (
    LeafFacts,
    Passage,
    evidence_source,
    leaf_values,
    states,
    tokenize,
)
from tests.conftest import write_jsonl

# -- passages --------------------------------------------------------------------------------


def test_documents_become_passages_in_turn_order_with_their_context():
    docs = [
        Document(f"c:D1:{n}", "s1", "turn", f"Speaker: turn number {n}.", "2023")
        for n in (10, 2, 1)
    ]
    passages = leaf_passages(docs)
    assert [p.doc_id for p in passages] == ["c:D1:1", "c:D1:2", "c:D1:10"]
    assert [p.passage_id for p in passages] == ["c:D1:1#0", "c:D1:2#0", "c:D1:10#0"]
    middle = passages[1]
    assert (
        middle.context == "Speaker: turn number 1. Speaker: turn number 2. Speaker: turn number 10."
    )
    assert natural_key("D1:2") < natural_key("D1:10")


def test_a_context_vector_joins_a_passage_with_its_neighbours_in_the_same_leaf():
    vectors = np.eye(3, dtype=np.float32)
    ctx = context_vectors(vectors, ["a", "a", "b"])
    assert np.allclose(np.linalg.norm(ctx, axis=1), 1.0)
    assert ctx[0, 1] > 0 and ctx[1, 0] > 0  # neighbours in leaf a
    assert ctx[1, 2] == 0 and ctx[2, 1] == 0  # never across leaves
    assert ctx[1, 1] > ctx[1, 0]  # a passage weighs more than a neighbour


def test_exports_are_cut_into_key_value_lines_and_prose_into_sentences():
    assert units('{"job": {"title": "Nurse", "skills": ["Triage", "BLS"]}}') == [
        "job.title: Nurse",
        "job.skills: Triage, BLS",
    ]
    assert units("First one. Second one.") == ["First one.", "Second one."]
    assert all(len(p) <= 320 for p in pack(["word " * 200]))


# -- verification, pure --------------------------------------------------------------------


def passage(text: str, kind: str = "brief", doc: str = "d1") -> Passage:
    return Passage(doc, kind, tuple(tokenize(text)))


@pytest.mark.parametrize(
    "text,value,stated",
    [
        ("This role is not remote.", "remote", False),
        ("Kubernetes is not required for this one.", "Kubernetes", False),
        ("The sister team uses PyTorch, which is not part of this role.", "PyTorch", False),
        ("We will not consider hybrid.", "hybrid", False),
        ("Don't forget Excel - it's required.", "Excel", True),
        ("Must-have skills: Terrafrom and Go.", "Terraform", True),  # a typo
        ("The team sits in our Lisbon office.", "Lisbon, Portugal", True),  # a variant
        ("Not Go, but Python and Rust.", "Python", True),
    ],
)
def test_a_passage_states_a_value_unless_negated(text, value, stated):
    assert states(passage(text), "skill" if value[0].isupper() else "workplace_type", value) is (
        stated
    )


def test_a_note_on_a_candidate_states_a_skill_only_where_the_role_needs_it():
    needs = passage("Heads-up: the hiring manager now also wants Terraform.", "feedback")
    knows = passage("Candidate also knows Terraform, nice to see.", "feedback")
    assert states(needs, "skill", "Terraform")
    assert not states(knows, "skill", "Terraform")
    # What a note says about candidates (why one was rejected) is stated as such.
    reason = passage("Passed on Ana after the onsite - notice period too long.", "feedback")
    assert states(reason, "rejection_reason", "notice period too long")


def test_a_one_value_key_takes_the_role_description_over_notes_on_candidates():
    brief = passage("The team sits in our Lisbon office.", "brief", "brief")
    note = passage("Candidate is based in Madrid, happy to relocate.", "feedback", "note")
    rivals = ["Madrid, Spain", "Lisbon, Portugal"]
    assert evidence_source([brief, note], "location", "Lisbon, Portugal", rivals[:1]) == "brief"
    assert evidence_source([brief, note], "location", "Madrid, Spain", rivals[1:]) is None


def test_export_keys_no_alias_table_knows_are_recognized_by_their_values():
    values = {
        "title": ["Data Engineer", "Biostatistician"],
        "location": ["Lisbon, Portugal", "Berlin, Germany"],
        "vacancy_name": ["Senior Data Engineer", "Lead Biostatistician"],
        "hiring_country": ["Portugal", "Germany"],
        "owner_name": ["Ana Silva", "Jonas Berg"],
    }
    assert value_aliases(values) == {"vacancy_name": "title", "hiring_country": "location"}


def test_an_export_key_listing_values_is_recognized_by_its_items():
    values = {"skill": ["Go", "AWS", "Python"], "toolkit": ["Go; AWS; Terraform", "Python, SQL"]}
    assert value_aliases(values) == {"toolkit": "skill"}
    listed = LeafFacts([], {"skill": ["Go; AWS; Terraform"]}, [])
    assert leaf_values(listed, "skill", ["Go", "AWS", "Terraform"]) == ["Go", "AWS", "Terraform"]


def test_a_flattened_path_naming_a_canonical_key_is_that_key():
    values = {"data_attributes_skill_tags": ["Excel"], "data_attributes_headline": ["Buyer"]}
    assert value_aliases(values) == {"data_attributes_skill_tags": "skill"}


def test_unknown_keys_holding_the_same_values_are_one_key():
    values = {
        "grounds": ["failed the technical assessment", "accepted a competing offer"],
        "main_concern": ["failed the technical assessment", "notice period too long"],
        "owner": ["Ana Silva", "Jonas Berg"],
    }
    assert value_aliases(values) == {"main_concern": "grounds"}


def test_a_country_alone_does_not_name_a_city():
    country = LeafFacts([], {"location": ["Germany"]}, [])
    assert leaf_values(country, "location", ["Berlin, Germany", "Germany"]) == ["Germany"]


def test_a_city_and_its_country_in_a_question_narrow_one_constraint():
    vocab = ScopeVocabulary({"location": ["Toronto", "Canada", "Toronto, Canada", "Lisbon"]})
    parsed = parse_question("Backend Engineer searches in Toronto, Canada?", vocab)
    assert parsed.kind == "retrieval"
    assert [m.value for m in parsed.micro if m.key == "location"] == ["Toronto, Canada"]
    listed = parse_question("Are they in Toronto or Lisbon?", vocab)
    assert listed.target_keys == ("location",)


def test_a_name_no_facet_holds_becomes_a_constraint_checked_in_the_evidence():
    vocab = ScopeVocabulary({"title": ["Data Engineer"], "skill": ["Go"]})
    parsed = parse_question("Which of my searches need User Research?", vocab)
    assert [(m.key, m.value) for m in parsed.micro if m.value] == [("mention", "User Research")]
    placed = parse_question("Which Data Engineer searches are in Tallinn?", vocab)
    assert ("location", "Tallinn") in [(m.key, m.value) for m in placed.micro]
    # The capital of a question's first word is not a name; a value that names the leaves
    # themselves (an export's ``type: jobs``) is not a constraint.
    typed = ScopeVocabulary({"title": ["Data Engineer"], "data_type": ["jobs"]})
    parsed = parse_question("Pull up the Data Engineer jobs.", typed)
    assert [(m.key, m.value) for m in parsed.micro if m.value] == [("title", "Data Engineer")]


def test_a_leaf_counts_a_value_its_facets_missed_but_its_evidence_states():
    known = ["Terraform", "Go", "Python"]
    facts = LeafFacts(
        [],
        {"skill": ["Go"]},
        [passage("Update: Terraform is now a must-have for this role.", "feedback")],
    )
    assert leaf_values(facts, "skill", known) == ["Go", "Terraform"]
    city = LeafFacts([], {"location": ["Berlin", "Germany"]}, [])
    assert leaf_values(city, "location", ["Berlin", "Berlin, Germany"]) == ["Berlin, Germany"]


# -- end to end on a hand-written snapshot ------------------------------------------------


def snapshot(directory: Path) -> Path:
    """One recruiter, five projects, written the way other people write them."""
    directory.mkdir(parents=True, exist_ok=True)
    write_jsonl(directory / "accounts.jsonl", [{"account_id": "acme", "name": "Acme"}])
    write_jsonl(
        directory / "seats.jsonl", [{"seat_id": "ana", "account_id": "acme", "name": "Ana"}]
    )
    projects = [
        ("p1", "Platform SRE"),
        ("p2", "Data Engineer Lisbon"),
        ("p3", "Data Engineer remote"),
        ("p4", "Data Engineer office"),
        ("p5", "Nurse"),
    ]
    write_jsonl(
        directory / "projects.jsonl",
        [
            {"project_id": p, "seat_id": "ana", "name": n, "updated_at": "2026-05-01"}
            for p, n in projects
        ],
    )
    docs = [
        # p1: a skill only in a feedback note.
        (
            "p1",
            "req",
            "requisition",
            '{"job_title": "Site Reliability Engineer", '
            '"office_location": "Berlin, Germany", "required_skills": ["Go", "Linux"]}',
        ),
        ("p1", "fb", "feedback", "Heads-up: the hiring manager now also wants Terraform."),
        # p2: the location under an export key no alias table knows.
        (
            "p2",
            "req",
            "requisition",
            '{"vacancyName": "Data Engineer", "hiringCity": "Lisbon", '
            '"required_skills": ["Python"]}',
        ),
        # p3: remote; p4: explicitly not remote.
        (
            "p3",
            "req",
            "requisition",
            '{"job_title": "Data Engineer", "office_location": "Lisbon, Portugal", '
            '"workplace": "remote", "required_skills": ["Python", "Terraform"]}',
        ),
        (
            "p4",
            "req",
            "requisition",
            '{"job_title": "Data Engineer", "office_location": '
            '"Berlin, Germany", "required_skills": ["SQL"]}',
        ),
        ("p4", "brief", "brief", "This role is not remote: three days a week in the office."),
        ("p4", "debrief", "feedback", "After the debrief the team wants Kubernetes as well."),
        # p5: a knowledge update, the location moved from Dublin to Lisbon.
        (
            "p5",
            "req-old",
            "requisition",
            '{"job_title": "Registered Nurse", "office_location": "Dublin, Ireland"}',
        ),
        (
            "p5",
            "req-new",
            "requisition",
            '{"job_title": "Registered Nurse", "office_location": "Lisbon, Portugal"}',
        ),
    ]
    dated = {"req-old": "2025-01-01"}
    write_jsonl(
        directory / "documents.jsonl",
        [
            {
                "doc_id": f"{p}-{d}",
                "project_id": p,
                "kind": k,
                "text": t,
                "updated_at": dated.get(d, "2026-05-01"),
            }
            for p, d, k, t in docs
        ],
    )
    return directory


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    root = tmp_path_factory.mktemp("evidence")
    settings = Settings(home=root / "home")
    load_and_build(settings, snapshot(root / "snapshot"))
    with Memory(settings, log_queries=False) as mem:
        yield mem


def cited(memory, question: str) -> list[str]:
    return sorted(memory.ask(question, scope="seat:ana").references)


def test_a_skill_stated_only_in_a_feedback_note_is_found(memory):
    # Terraform is a value of another project's export: recognized in p1's note too.
    assert cited(memory, "Which openings required Terraform?") == ["project:p1", "project:p3"]


def test_a_location_under_an_unknown_export_key_is_found(memory):
    assert cited(memory, "Which of my Data Engineer searches were in Lisbon?") == [
        "project:p2",
        "project:p3",
    ]


def test_a_value_only_a_note_states_and_no_facet_holds_is_found(memory):
    assert cited(memory, "Which of my searches need Kubernetes?") == ["project:p4"]


def test_a_negated_value_is_not_a_match(memory):
    assert cited(memory, "Which openings are remote?") == ["project:p3"]


def test_a_paraphrased_summary_question_is_understood_by_meaning(memory):
    answer = memory.ask("Which cities does most of the hiring happen in?", scope="seat:ana")
    assert "Lisbon, Portugal (3 of 5)" in answer.answer
    assert answer.references == ["seat:ana"]


def test_a_summary_question_naming_a_value_of_its_own_key_gets_the_key_s_distribution(memory):
    # "mostly remote?" is not "which openings are remote": every workplace is counted.
    answer = memory.ask("Are these jobs mostly remote?", scope="seat:ana")
    assert answer.parsed["target_keys"] == ["workplace_type"]
    assert "remote (1 of 5)" in answer.answer
    assert answer.references == ["seat:ana"]


def test_a_knowledge_update_prefers_the_latest_statement(memory):
    assert cited(memory, "Which searches were in Dublin?") == []
    assert "project:p5" in cited(memory, "Which of my searches were in Lisbon, Portugal?")


def test_every_document_is_in_the_evidence_view_and_table(memory):
    settings = memory.settings
    with database.connect(settings.duckdb_path, read_only=True) as con:
        docs = {r[0] for r in con.execute("SELECT doc_id FROM sot_documents").fetchall()}
        held = {r[0] for r in con.execute("SELECT doc_id FROM memory_evidence").fetchall()}
    assert held == docs
    rows = memory.vectors.scan("evidence", ["source_ids"])
    assert {s[0] for s in rows.column("source_ids").to_pylist()} == docs


def test_xml_and_html_exports_are_read_as_the_fields_a_person_reads():
    from hltm_resources.indexing.evidence import units

    xml = '<?xml version="1.0"?><req><title>Analytics Engineer</title><grade>Mid</grade></req>'
    html = "<table><tr><th>Job</th><td>Data Platform Lead</td></tr></table>"
    assert units(xml) == ["req.title: Analytics Engineer", "req.grade: Mid"]
    assert units(html) == ["Job: Data Platform Lead"]
