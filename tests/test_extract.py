"""Facet extraction and leaf reconciliation (pure functions, no model)."""

import json

import pytest

from hltm_resources.engines.base import Hints
from hltm_resources.engines.extractive.agents import ExtractiveAgents
from hltm_resources.engines.extractive.documents import (
    document_changes,
    document_facets,
    feedback_event,
    reconcile,
)
from hltm_resources.engines.vocabulary import canonical_key, same_value_key
from hltm_resources.indexing.evidence import leaf_passages
from hltm_resources.models import Document, NodeInfo


def doc(text, kind="requisition", doc_id="d1", updated="2026-01-01"):
    return Document(doc_id, "p1", kind, text, updated)


def later(text, kind="email"):
    """A note written a month after ``doc``'s default date, about the same leaf."""
    return doc(text, kind=kind, doc_id="d2", updated="2026-02-01")


def facets_of(*docs):
    raw = [f for d in docs for f in (*document_facets(d), *document_changes(d))]
    return {(f.key, f.value) for f in reconcile(raw)}


@pytest.mark.parametrize(
    "raw,canonical",
    [
        ("Job Title", "title"),
        ("office_location", "location"),
        ("workplaceType", "workplace_type"),
        ("posting_categories_location", "location"),
        ("Required Skills", "skill"),
        ("Management Level", "seniority"),
        ("Remote Type", "workplace_type"),
        ("requirements_skills", "skill"),
        ("Favourite Colour", "favourite_colour"),
    ],
)
def test_keys_are_normalized_onto_canonical_keys(raw, canonical):
    assert canonical_key(raw) == canonical


def test_flat_json_export():
    text = json.dumps(
        {
            "job_title": "Senior Data Engineer",
            "office_location": "Dublin, Ireland",
            "workplace": "Hybrid",
            "required_skills": ["Python", "P&L Management"],
            "req_id": "R-1",
            "created_at": "2026-01-01",
        }
    )
    got = facets_of(doc(text))
    assert ("title", "Data Engineer") in got
    assert ("seniority", "Senior") in got
    assert ("location", "Dublin, Ireland") in got
    assert ("workplace_type", "hybrid") in got
    # JSON array items are never split, even when they contain '&' or '/'.
    assert ("skill", "P&L Management") in got
    assert not any(k in ("req_id", "created_at") for k, _ in got)


def test_nested_json_export():
    text = json.dumps(
        {
            "posting": {
                "text": "Biostatistician",
                "categories": {"location": "Berlin, Germany", "level": "Lead"},
                "workplaceType": "remote",
            },
            "requirements": {"skills": ["R", "SAS"]},
        }
    )
    got = facets_of(doc(text))
    assert {
        ("title", "Biostatistician"),
        ("location", "Berlin, Germany"),
        ("seniority", "Lead"),
        ("workplace_type", "remote"),
        ("skill", "R"),
        ("skill", "SAS"),
    } <= got


def test_key_value_lines():
    text = (
        "Job Posting Title: Store Manager\nPrimary Location: Austin, Texas\n"
        "Remote Type: On-site\nRequired Skills: Merchandising, Scheduling and Retail POS"
    )
    got = facets_of(doc(text))
    assert {
        ("title", "Store Manager"),
        ("location", "Austin, Texas"),
        ("workplace_type", "on-site"),
        ("skill", "Merchandising"),
        ("skill", "Scheduling"),
        ("skill", "Retail POS"),
    } <= got


def test_prose_brief_states_facets_explicitly():
    text = (
        "We're hiring a senior frontend engineer to join our team based in Lisbon, Portugal. "
        "The role is fully remote. Must-have skills: TypeScript, React and Next.js."
    )
    got = facets_of(doc(text, kind="brief"))
    assert ("title", "Frontend Engineer") in got
    assert ("location", "Lisbon, Portugal") in got
    assert ("workplace_type", "remote") in got
    assert ("skill", "Next.js") in got


def test_hiring_manager_is_not_a_title():
    got = facets_of(doc("The hiring manager wants a shortlist soon.", kind="brief"))
    assert not any(k == "title" for k, _ in got)


@pytest.mark.parametrize(
    "text,rejected,reason",
    [
        (
            "Candidate: Ana Silva\nDecision: Rejected\nReason: notice period too long",
            True,
            "notice period too long",
        ),
        (
            "Debrief for Omar Haddad: we decided not to move forward because of weak system design "
            "skills.",
            True,
            "weak system design skills",
        ),
        (
            "Interview feedback for Wen Zhang. Rejected due to salary expectations too high.",
            True,
            "salary expectations too high",
        ),
        ("Candidate: Lena Novak\nDecision: Advanced\nNotes: strong SQL depth", False, None),
    ],
)
def test_feedback_decisions_and_reasons(text, rejected, reason):
    event = feedback_event(doc(text, kind="feedback"))
    assert event is not None
    assert event.rejected is rejected
    assert event.reason == reason


def test_conflicts_prefer_structured_then_latest():
    req_old = doc(
        json.dumps({"job_title": "Data Engineer", "location": "Dublin"}),
        doc_id="d1",
        updated="2026-01-01",
    )
    req_new = doc(
        json.dumps({"job_title": "Data Engineer", "location": "Lisbon"}),
        doc_id="d2",
        updated="2026-02-01",
    )
    brief = doc("The role is based in Paris.", kind="brief", doc_id="d3", updated="2026-03-01")
    got = facets_of(req_old, req_new, brief)
    assert ("location", "Lisbon") in got
    assert not {("location", "Dublin"), ("location", "Paris")} & got


def test_multi_valued_keys_union_with_provenance():
    a = doc(
        "Candidate: A B\nDecision: Rejected\nReason: no visa sponsorship available",
        kind="feedback",
        doc_id="f1",
    )
    b = doc(
        "Candidate: C D\nDecision: Rejected\nReason: notice period too long",
        kind="feedback",
        doc_id="f2",
    )
    facets = reconcile([f for d in (a, b) for f in document_facets(d)])
    reasons = {f.value: f.source_ids for f in facets if f.key == "rejection_reason"}
    assert reasons == {"no visa sponsorship available": ("f1",), "notice period too long": ("f2",)}


def test_leaf_memory_is_deterministic_and_complete():
    node = NodeInfo("project:p1", "project", "p1", "Data Platform", "seat:s1", "a/s1/p1")
    docs = [
        doc(json.dumps({"job_title": "ML Engineer", "city": "Berlin"}), doc_id="d1"),
        doc(
            "Candidate: X Y\nDecision: Rejected\nReason: culture add concerns",
            kind="feedback",
            doc_id="d2",
        ),
    ]
    one = ExtractiveAgents().build_leaf(node, docs, Hints())
    two = ExtractiveAgents().build_leaf(node, list(reversed(docs)), Hints())
    assert one.canonical() == two.canonical()
    assert one.facets and one.qa and one.summary.concise
    assert all(set(q.source_ids) <= {"d1", "d2"} for q in one.qa)
    assert "Berlin" in one.summary.concise


def test_leaf_without_documents_still_has_every_view():
    node = NodeInfo("project:p9", "project", "p9", "Empty", "seat:s1", "a/s1/p9")
    memory = ExtractiveAgents().build_leaf(node, [], Hints())
    assert memory.facets and memory.qa and memory.summary.concise


def test_prose_that_states_no_facet_is_kept_as_evidence_not_as_qa():
    node = NodeInfo("project:s1", "project", "s1", "session 1", "seat:c1", "a/c1/s1")
    turn = "Caroline: I went to a support group yesterday and it was really powerful."
    docs = [
        doc(turn, kind="turn", doc_id="s1:0"),
        doc("Melanie: Wow, that's cool! " * 40, kind="turn", doc_id="s1:1"),
        doc(json.dumps({"job_title": "ML Engineer"}), doc_id="s1:2"),
    ]
    qa = ExtractiveAgents().build_leaf(node, docs, Hints()).qa
    # The engine's QA pairs are what it recognized; the turns themselves are evidence.
    assert not any(q.source_ids == ("s1:0",) for q in qa)
    passages = leaf_passages(docs)
    assert passages[0].text == turn and passages[0].doc_id == "s1:0"
    assert {p.doc_id for p in passages} == {"s1:0", "s1:1", "s1:2"}


# -- memory states only what the documents say ---------------------------------------------


@pytest.mark.parametrize(
    "text,key,value",
    [
        ("The role is not based in Toronto.", "location", "Toronto"),
        ("We are not hiring a Data Scientist for this one.", "title", "Data Scientist"),
        ("This role is not remote.", "workplace_type", "remote"),
        ("Kubernetes is not required.", "skill", "Kubernetes"),
    ],
)
def test_a_negated_statement_is_never_stored_as_a_fact(text, key, value):
    got = facets_of(doc(text, kind="brief"))
    assert (key, value) not in got


def test_a_brief_that_negates_one_city_and_states_another_keeps_only_the_stated_one():
    brief = doc(
        "Home base is New York. The role is not based in Toronto. Candidates need Go.",
        kind="brief",
    )
    export = doc(
        json.dumps(
            {
                "job": {
                    "role_name": "Backend Engineer",
                    "offices": [
                        {"name": "New York", "region": "New York", "country": "United States"}
                    ],
                }
            }
        ),
        doc_id="d0",
    )
    got = facets_of(export, brief)
    assert {v for k, v in got if k == "location"} == {"New York, New York"}


@pytest.mark.parametrize(
    "export,wanted",
    [
        # The head of a flattened path names the attribute; its generic tail does not count.
        ({"job": {"role_name": "Backend Engineer"}}, ("title", "Backend Engineer")),
        ({"job": {"techStack": [{"name": "Go"}, {"name": "Redis"}]}}, ("skill", "Redis")),
        ({"data": {"attributes": {"skillTags": [{"label": "SQL"}]}}}, ("skill", "SQL")),
        # The parts of a place in one object (or sharing a prefix) are one location.
        (
            {"offices": [{"name": "Lisbon", "country": "Portugal"}]},
            ("location", "Lisbon, Portugal"),
        ),
        (
            {"hiringCity": "Austin", "hiringState": "Texas", "hiringCountry": "United States"},
            ("location", "Austin, Texas"),
        ),
        # A field no name explains is read by the form of its values.
        ({"tier": "Senior"}, ("seniority", "Senior")),
        ({"presence": "Work from home"}, ("workplace_type", "remote")),
        ({"presence": "Hybrid (2-3 office days)"}, ("workplace_type", "hybrid")),
        ({"headline": "Mid-level Frontend Engineer"}, ("title", "Frontend Engineer")),
    ],
)
def test_export_fields_are_read_by_name_shape_and_values(export, wanted):
    assert wanted in facets_of(doc(json.dumps(export)))


def test_a_part_someone_plays_is_not_a_title_and_a_team_member_is_not_a_department():
    export = {"hiringTeam": [{"member": "Chen Larsen", "capacity": "Hiring Manager"}]}
    got = facets_of(doc(json.dumps(export)))
    assert not any(k in ("title", "department") for k, _ in got)
    assert ("hiring_manager", "Chen Larsen") in got


def test_a_list_of_labelled_values_is_read_as_fields_named_by_their_labels():
    export = {
        "requisition_id": "R-1",
        "fields": [
            {"label": "Job title", "value": "Staff Data Engineer"},
            {"label": "Location", "value": "London, United Kingdom; Amsterdam, Netherlands"},
            {"label": "Work model", "value": "Hybrid"},
            {"label": "Openings", "value": "2"},
            {"label": "Internal name", "value": "Bastion"},
        ],
        "hiring_team": [
            {"role": "hiring manager", "name": "Amara Okafor"},
            {"role": "recruiter", "name": "Priya Raman"},
        ],
    }
    got = facets_of(doc(json.dumps(export)))
    assert {
        ("title", "Data Engineer"),
        ("seniority", "Staff"),
        ("location", "London, United Kingdom"),
        ("location", "Amsterdam, Netherlands"),
        ("workplace_type", "hybrid"),
        ("headcount", "2"),
        ("code_name", "Bastion"),
        ("hiring_manager", "Amara Okafor"),
        ("recruiter", "Priya Raman"),
    } <= got
    assert not any(k.startswith("fields") or v == "Recruiter" for k, v in got)


def test_two_fields_that_do_not_label_each_other_stay_two_fields():
    got = facets_of(doc(json.dumps({"skills": [{"name": "Python", "level": "Senior"}]})))
    assert ("skill", "Python") in got and ("python", "Senior") not in got


@pytest.mark.parametrize(
    "export,absent,present",
    [
        # A sum of money is a salary, whatever its field is called.
        (
            "Title: Product Manager\nBand: €75,000–€88,000",
            ("seniority", "€75,000–€88,000"),
            ("salary_range", "€75,000–€88,000"),
        ),
        # A flag named after a value states it, or nothing.
        ('{"title": "Data Engineer", "remote": "no"}', ("workplace_type", "no"), None),
        (
            '{"title": "Data Engineer", "remote": true}',
            ("workplace_type", "yes"),
            ("workplace_type", "remote"),
        ),
        (
            '{"title": "Data Engineer", "skills": [{"name": "Go", "required": true}]}',
            ("skill", "yes"),
            ("skill", "Go"),
        ),
    ],
)
def test_a_value_whose_form_contradicts_its_field_name_is_read_by_its_form(export, absent, present):
    got = facets_of(doc(export))
    assert absent not in got
    assert present is None or present in got


def test_a_parenthesis_is_part_of_its_list_item():
    got = facets_of(
        doc(
            "Must have: strong Python, Spark (PySpark is fine, Scala not needed), Airflow.\n"
            "Required: Java or Kotlin; payment integrations (Adyen, Stripe)",
            kind="brief",
        )
    )
    skills = {v for k, v in got if k == "skill"}
    assert {"Spark", "Java", "Kotlin", "payment integrations (Adyen, Stripe)"} <= skills
    assert not any("(" in s and ")" not in s or ")" in s and "(" not in s for s in skills)


def test_a_location_is_stored_without_its_qualifier_and_headers_are_no_facts():
    got = facets_of(
        doc("Title: iOS Engineer\nLocation: Madrid, Spain (remote within Spain)"),
        doc("From: Olu Adeyemi\nTo: Ciara Byrne\nSubject: offer\n\nAll set.", "email", "d2"),
    )
    assert ("location", "Madrid, Spain") in got
    assert not any(k in ("from", "to", "subject") for k, _ in got)


def test_one_shared_value_does_not_make_a_list_of_tags_a_known_attribute():
    export = doc(json.dumps({"title": "Data Engineer", "tags": ["data", "python", "hybrid"]}))
    brief = doc("Hybrid, 3 days in the Dublin office.", kind="brief", doc_id="d2")
    got = facets_of(export, brief)
    assert {v for k, v in got if k == "workplace_type"} == {"hybrid"}
    assert ("tags", "python") in got


def test_an_export_key_is_the_attribute_the_leafs_brief_states_with_the_same_value():
    export = doc(json.dumps({"vacancy": "Backend Engineer"}), doc_id="d0")
    brief = doc("We're hiring a Backend Engineer in Lisbon.", kind="brief", doc_id="d1")
    facets = reconcile([f for d in (export, brief) for f in document_facets(d)])
    title = [f for f in facets if f.key == "title"]
    assert [f.value for f in title] == ["Backend Engineer"]
    assert set(title[0].source_ids) == {"d0", "d1"}
    assert not any(f.key == "vacancy" for f in facets)


def test_a_note_whose_fields_are_unknown_is_read_by_its_values():
    note = doc(
        "Person: Ana Silva\nPhase: Panel\nResult: Not progressing\nWhy: notice period too long",
        kind="feedback",
    )
    event = feedback_event(note)
    assert event is not None and event.rejected and event.reason == "notice period too long"


def test_a_later_sentence_that_states_a_change_stands_over_the_export():
    export = doc("Title: Backend Engineer\nWorkplace: Remote", updated="2026-01-08")
    update = doc(
        "Update from Declan (3 Feb): Marigold is now hybrid, no longer remote.",
        kind="note",
        doc_id="d2",
        updated="2026-02-03",
    )
    aside = doc("Sven Dahl onsite Thursday.", kind="note", doc_id="d3", updated="2026-03-01")
    assert ("workplace_type", "hybrid") in facets_of(export, update, aside)
    assert ("workplace_type", "remote") in facets_of(export, aside)


@pytest.mark.parametrize(
    "text,wanted",
    [
        (
            "We can sponsor a Critical Skills Employment Permit for the right person.",
            ("visa_sponsorship", "yes"),
        ),
        ("We cannot sponsor visas for this one.", ("visa_sponsorship", "no")),
        ("Sorry, sponsorship isn't available for this role.", ("visa_sponsorship", "no")),
        (
            "Niall Doherty is the hiring manager for the Marketplace PM role going forward.",
            ("hiring_manager", "Niall Doherty"),
        ),
        (
            "Alan Whitcombe, Director of Clinical Engineering (hiring manager), wants two.",
            ("hiring_manager", "Alan Whitcombe"),
        ),
        (
            "The hire reports to Thijs Mulder, who leads Research IT and is the hiring manager.",
            ("hiring_manager", "Thijs Mulder"),
        ),
    ],
)
def test_a_brief_states_sponsorship_and_the_hiring_manager_in_prose(text, wanted):
    assert wanted in facets_of(doc(text, kind="brief"))


def test_a_candidate_who_needs_a_visa_says_nothing_of_the_roles_sponsorship():
    got = facets_of(doc("Candidate needs a visa.", "note"))
    assert not any(k == "visa_sponsorship" for k, _ in got)


def test_a_later_note_that_withdraws_sponsorship_stands_over_the_export():
    export = doc("Title: Engineering Manager\nVisa sponsorship: Yes", updated="2026-01-10")
    note = doc(
        "Update (5 Feb): no visa sponsorship for the Keystone EM role.", "note", "d2", "2026-02-05"
    )
    assert ("visa_sponsorship", "no") in facets_of(export, note)


@pytest.mark.parametrize(
    "text",
    [
        "| Field | Value |\n|---|---|\n| Job title | Payroll Specialist |\n| Level | Senior |\n"
        "| Location | Leeds |",
        "req_id,title,seniority,city\nNHG-1,Payroll Specialist,Senior,Leeds",
        "FIELD;VALUE\nTitle;Payroll Specialist\nLevel;Senior\nCity;Leeds",
        "payroll | req 7\n---\ntitle ...... Payroll Specialist\nlevel ...... Senior\n"
        "location ... Leeds",
        "Role :: Payroll Specialist\nSeniority :: Senior\nLocation :: Leeds",
        "POSITION - Payroll Specialist\nBAND/LEVEL - Senior\nSITE - Leeds",
        "## Requisition 7\n- **Title:** Payroll Specialist\n- **Seniority:** Senior\n"
        "- **Location:** Leeds",
        json.dumps(
            {
                "fields": [
                    {"k": "Title", "v": "Payroll Specialist"},
                    {"k": "Grade", "v": "Senior"},
                    {"k": "Site", "v": "Leeds"},
                ]
            }
        ),
        '<?xml version="1.0"?>\n<requisition id="R7"><title>Payroll Specialist</title>'
        '<grade band="P3">Senior</grade><site city="Leeds">Wellington Place</site>'
        "</requisition>",
        "<html><body><h3>Requisition R7</h3><table><tr><th>Job title</th>"
        "<td>Payroll Specialist</td></tr><tr><th>Level</th><td>Senior</td></tr>"
        "<tr><th>Location</th><td>Leeds</td></tr></table></body></html>",
        "<h2>Req 7</h2>\n<dl><dt>Title</dt><dd>Payroll Specialist</dd><dt>Level</dt>"
        "<dd>Senior</dd><dt>Location</dt><dd>Leeds</dd></dl>",
        "Field\tValue\nTitle\tPayroll Specialist\nLevel\tSenior\nLocation\tLeeds",
        "Req Title.........: Payroll Specialist\nLevel.............: Senior\n"
        "Work Location(s)..: Leeds",
        "OPEN REQS (fixed width export)\nREQ#   TITLE                 LEVEL   LOCATION\n"
        "-----  --------------------  ------  --------\n"
        "00422  Payroll Specialist    Senior  Leeds",
        "Role title:  Payroll Specialist\nLevel:  [ ] Junior [x] Senior\nLocation:  Leeds",
    ],
)
def test_an_export_is_read_whatever_layout_it_is_written_in(text):
    got = facets_of(doc(text))
    assert {("title", "Payroll Specialist"), ("seniority", "Senior"), ("location", "Leeds")} <= got


def test_a_line_led_by_a_name_and_a_hyphen_is_no_field():
    note = "Joana Ribeiro - final round with Ines.\nBeatriz Santos - portfolio review."
    assert not any(k.startswith(("joana", "beatriz")) for k, _ in facets_of(doc(note, "note")))


def test_a_bare_number_is_no_title():
    got = facets_of(doc("Title: Data Engineer\nPositions: 1\nLevel: Senior"))
    assert ("headcount", "1") in got and ("title", "1") not in got


def test_an_offer_states_the_candidates_visa_not_the_roles():
    req = doc("Title: Biomedical Engineer\nSponsorship: Yes - Skilled Worker visa")
    offer = doc(
        "Offer - Biomedical Engineer\nTo: Aisha Bello\nVisa: not required (settled)",
        "offer",
        "d2",
        "2026-03-01",
    )
    assert ("visa_sponsorship", "Yes - Skilled Worker visa") in facets_of(req, offer)


@pytest.mark.parametrize(
    "text,wanted",
    [
        (
            "Title: Nurse Specialist\nLevel: senior specialist, reports to microbiology, no team",
            ("seniority", "Senior"),
        ),
        (
            "Title: Nurse Specialist\nPosts: 2 (Rotterdam x1, Utrecht x1), on-site",
            ("headcount", "2"),
        ),
        (
            '[{"field": "Functie / Role", "answer": "Nurse Specialist"}, '
            '{"field": "Niveau / Level", "answer": "Senior"}]',
            ("seniority", "Senior"),
        ),
    ],
)
def test_a_value_is_what_its_field_can_hold(text, wanted):
    assert wanted in facets_of(doc(text))


def test_a_heading_ending_in_a_key_word_is_no_field():
    note = doc(
        "Customs Compliance Manager - interviews with Pieter Janssens\nKoen: final round.", "note"
    )
    assert not any(k == "hiring_manager" for k, _ in facets_of(note))


def test_a_chat_of_names_and_sentences_is_prose_not_an_export():
    chat = doc(
        "Iris: ok. if Ravi is good we're done with the second FE seat\n"
        "Omar: Iris, Daan starts 1 April and the role is now fully remote for everyone\n"
        "Iris: great, thanks Omar, let's close the posting once Ravi signs",
        "chat",
    )
    got = facets_of(chat)
    assert not any(k in ("iris", "omar") for k, _ in got)
    assert ("workplace_type", "remote") in got  # its sentences are read as prose


def test_digits_that_end_an_identifier_are_no_number():
    from hltm_resources.text import NUMBER_WORDS, number_pattern

    found = number_pattern(NUMBER_WORDS).findall("requisition_id: TF-R-0427 Openings: 2, v2")
    assert found == ["2"]


@pytest.mark.parametrize(
    "a,b",
    [
        ("Rotterdam", "Rotterdam HQ"),
        ("Rotterdam", "Rotterdam - Northmere Maasstad Hospital"),
        ("Manchester", "St Aldhelm's Hospital, Manchester"),
        ("Leeds", "Northmere Leeds General, Leeds"),
    ],
)
def test_a_place_is_its_city_whatever_site_or_facility_is_named_with_it(a, b):
    from hltm_resources.engines.vocabulary import same_value_key

    assert same_value_key("location", a) == same_value_key("location", b)
    assert same_value_key("location", "Leeds") != same_value_key("location", "Manchester")


def test_an_occupation_under_a_department_name_is_a_title():
    got = facets_of(doc("Function :: Night Shift Dispatcher\nLevel :: Medior\nDepot :: Venlo"))
    assert ("title", "Night Shift Dispatcher") in got


@pytest.mark.parametrize("label", ["Code name", "Internal name", "Project code", "codeName"])
def test_a_code_name_is_one_key_whatever_the_export_calls_it(label):
    got = facets_of(doc(json.dumps({"title": "Data Engineer", label: "Bastion"})))
    assert ("code_name", "Bastion") in got


def test_a_role_named_beside_the_hiring_manager_is_no_person():
    text = "We are hiring a Senior Data Engineer; the hiring manager wants Spark."
    assert not any(k == "hiring_manager" for k, _ in facets_of(doc(text, "brief")))


def test_a_role_open_in_two_cities_in_a_fixed_width_table_holds_both():
    table = (
        "REQ#   TITLE                 LOCATION                 HC\n"
        "-----  --------------------  -----------------------  --\n"
        "00422  Visual Merchandiser   London (Oxford St)        1\n"
        "00422  Visual Merchandiser   Manchester (Market St)    1"
    )
    got = facets_of(doc(table))
    assert {("location", "London"), ("location", "Manchester")} <= got


@pytest.mark.parametrize(
    "text,wanted",
    [
        (
            json.dumps({"compensation": {"currency": "EUR", "min": 62000, "max": 72000}}),
            ("salary_range", "EUR 62000-72000"),
        ),
        (json.dumps({"baseMin": 95000, "baseMax": 110000}), ("salary_range", "95000-110000")),
        ("salary_min=38000\nsalary_max=45000\ncurrency=EUR", ("salary_range", "EUR 38000-45000")),
    ],
)
def test_a_range_given_as_a_low_and_a_high_field_is_one_value(text, wanted):
    assert wanted in facets_of(doc(text))


def test_a_time_in_a_chat_is_no_field():
    chat = "Joost van Dam 16:40\nKees, Sara + Nadia signed.\nKees Bakker 16:52\ntop."
    assert not any(k.startswith(("joost", "kees")) for k, _ in facets_of(doc(chat, "chat")))


def test_a_field_named_by_what_does_not_hold_states_nothing():
    brief = doc(
        "Hiring manager: Marloes Kuipers\nPosts: 2\nNot possible: visa sponsorship, remote work"
    )
    req = doc("Title: IPC Nurse\nArrangement: On-site", doc_id="d0")
    got = facets_of(req, brief)
    assert ("workplace_type", "on-site") in got and ("workplace_type", "remote") not in got


@pytest.mark.parametrize(
    "later,wanted",
    [
        (
            "Quick update: we're dropping the on-site requirement for this role. It is now "
            "hybrid - three days in the Utrecht office.",
            ("workplace_type", "hybrid"),
        ),
        (
            "Fine - we'll allow hybrid for the two posts. Please change the ad from on-site to "
            "hybrid.",
            ("workplace_type", "hybrid"),
        ),
        ("We've decided to make the role fully remote.", ("workplace_type", "remote")),
        ("Headcount on the night dispatch req goes from 2 to 3.", ("headcount", "3")),
        (
            "Comp update: Femke got approval to lift the band to EUR 66,000 - 76,000.",
            ("salary_range", "EUR 66,000 - 76,000"),
        ),
        ("Change of plan: both seats move to the Limerick office.", ("location", "Limerick")),
    ],
)
def test_a_later_statement_of_a_change_stands_over_the_export(later, wanted):
    export = doc(
        "Title: Data Engineer\nLocation: Cork\nWorkplace: On-site\nHeadcount: 2\n"
        "Salary: EUR 62,000 - 72,000"
    )
    note = doc(later, "email", "d2", "2026-02-01")
    got = facets_of(export, note)
    assert wanted in got
    assert len([k for k, _ in got if k == wanted[0]]) == 1


def test_a_level_glossed_in_a_known_word_is_that_level():
    assert ("seniority", "Mid-level") in facets_of(
        doc("Title: Dispatcher\nLevel: Medior (mid-level)")
    )


def test_an_offer_restating_the_role_does_not_rename_it():
    req = doc("Title: Clinical Data Analyst\nLevel: Senior")
    offer = doc(
        "Candidate: Eva\nRole: Clinical Data Analyst (Senior), Quality, Utrecht\nStart: 1 May",
        "offer",
        "d5",
        "2026-03-01",
    )
    assert ("title", "Clinical Data Analyst") in facets_of(req, offer)


@pytest.mark.parametrize(
    "value,city",
    [
        ("Rotterdam - Northmere Maasstad Hospital", "Rotterdam"),
        ("St Aldhelm's Hospital, Manchester", "Manchester"),
        ("Berlin HQ, Germany", "Berlin"),
        ("Rotterdam, Northmere Maasstad research campus", "Rotterdam"),
    ],
)
def test_a_place_is_named_by_its_city_without_its_site(value, city):
    from hltm_resources.engines.vocabulary import names_a_site, place_name

    assert names_a_site(value) and place_name(value) == city
    assert not names_a_site("Toronto, Canada")


def test_a_question_in_a_chat_states_nothing_and_none_says_no():
    export = doc("Title: Payroll Specialist\nvisa_sponsorship: none")
    chat = doc(
        "Priya: and sponsorship?\nBeth: can't do it for this band", "chat", "d2", "2026-02-01"
    )
    assert ("visa_sponsorship", "none") in facets_of(export, chat)


def test_some_days_in_the_office_is_hybrid():
    got = facets_of(doc("Location stays Amsterdam (Zuidas), 3 days in office.", "note"))
    assert ("workplace_type", "hybrid") in got


def test_a_building_beside_a_city_is_part_of_the_place_not_an_arrangement():
    text = json.dumps(
        {"job": {"location": {"city": "Amsterdam", "building": "Group Office, Zuidas"}}}
    )
    got = facets_of(doc(text))
    assert ("location", "Amsterdam") in got
    assert not any(k == "workplace_type" for k, _ in got)


def test_a_reason_is_one_sentence_not_a_list():
    note = doc(
        "1) Lars Houtman\nDecision: REJECT\nReason: he needs a visa sponsored from April and "
        "this role has no sponsorship. Femke would have hired him otherwise.",
        "feedback",
    )
    reasons = {v for k, v in facets_of(note) if k == "rejection_reason"}
    assert reasons == {"he needs a visa sponsored from April and this role has no sponsorship"}


@pytest.mark.parametrize(
    "pay,currency",
    [("55–68 k€ brutos", "EUR"), ("£28,000 - £31,000", "GBP"), ("$140,000–$165,000", "USD")],
)
def test_a_pay_range_states_its_currency(pay, currency):
    assert ("currency", currency) in facets_of(doc(f"Title: Analyst\nSalary: {pay}"))


def test_a_head_count_a_later_note_states_stands():
    export = doc("Title: iOS Engineer\nHeadcount: 1")
    note = doc(
        "Good news: a second seat got approved, so we're now hiring 2.", "email", "d2", "2026-03-01"
    )
    assert ("headcount", "2") in facets_of(export, note)


@pytest.mark.parametrize(
    "text,wanted",
    [
        ("Ubicación / Location:   Barcelona\nNº de vacantes / Headcount:   3", ("headcount", "3")),
        (
            "FIELD        | VALUE\n-------------|------\nPosition     | Actuarial Analyst\n"
            "Headcount    | 3",
            ("title", "Actuarial Analyst"),
        ),
        (
            "Modalità di lavoro / Work mode:  ibrido (3 giorni in ufficio)\nLevel: Sr",
            ("workplace_type", "hybrid"),
        ),
        (
            "Modalidad / Work model:  Híbrido (2 días/semana en oficina)\nLevel: Sr",
            ("seniority", "Senior"),
        ),
        (
            "Role: Product Manager\nBase: London (Shoreditch office), hybrid 2 days\n1 hire\n"
            "£85-95k base",
            ("salary_range", "£85-95k"),
        ),
        ("Title: Data Engineer\nApproved by: CFO office, 12/01/2024", ("title", "Data Engineer")),
    ],
)
def test_labels_in_any_language_and_loose_exports_are_read(text, wanted):
    got = facets_of(doc(text))
    assert wanted in got
    assert not any(k == "workplace_type" and v == "on-site" for k, v in got)


def test_openings_listed_per_city_add_up_and_both_cities_stand():
    xml = (
        "<JobRequisition><Title>Platform Engineer</Title><Locations>"
        '<Location primary="true"><City>Dublin</City><Site>Grand Canal Dock</Site>'
        "<Openings>1</Openings></Location><Location><City>Amsterdam</City><Site>Zuidas</Site>"
        "<Openings>1</Openings></Location></Locations></JobRequisition>"
    )
    got = facets_of(doc(xml))
    assert {("location", "Dublin"), ("location", "Amsterdam"), ("headcount", "2")} <= got


@pytest.mark.parametrize(
    "later,wanted",
    [
        (
            "Oliver wants this role on-site five days a week, so please change it from hybrid.",
            ("workplace_type", "on-site"),
        ),
        (
            "So this role is now fully remote, anywhere in Spain — not tied to Madrid any more.",
            ("workplace_type", "remote"),
        ),
    ],
)
def test_a_change_away_from_a_value_and_a_negation_set_off_by_a_dash(later, wanted):
    export = doc("Title: QA Engineer\nWorkplace: Hybrid")
    assert wanted in facets_of(export, doc(later, "email", "d2", "2026-02-01"))


def test_a_message_quoting_an_earlier_one_states_only_its_own_words():
    export = doc("Title: Data Engineer\nHeadcount: 2")
    reply = doc(
        "Chiara, bad news: finance has frozen the second seat. We go ahead with 1 hire only "
        "for now.\n\n> On 19 Feb 2024, Chiara wrote:\n> we have two finalists for the two seats",
        "email",
        "d3",
        "2026-02-20",
    )
    assert ("headcount", "1") in facets_of(export, reply)


@pytest.mark.parametrize(
    "raw,canonical",
    [
        ("JobTtl", "title"),
        ("HMgr", "hiring_manager"),
        ("PrimLoc", "location"),
        ("numOpenings_int", "headcount"),
        ("wrkMdl", "workplace_type"),
        ("niceHave_skills", "preferred_skill"),
    ],
)
def test_abbreviated_field_names_are_read_in_full(raw, canonical):
    from hltm_resources.engines.extractive.exports import field_key
    from hltm_resources.text import snake_key

    assert field_key((snake_key(raw),)) == canonical


@pytest.mark.parametrize(
    "level,wanted",
    [
        ("L5 – Lead", "Lead"),
        ("Senior (G7)", "Senior"),
        ("L3 (Intermediate)", "Mid-level"),
        ("Senior Associate", "Senior Associate"),
    ],
)
def test_a_level_beside_its_grade_code_is_that_level(level, wanted):
    assert ("seniority", wanted) in facets_of(doc(f"Title: Analyst\nLevel: {level}"))


def test_a_range_written_as_an_inline_mapping_is_one_value():
    yaml = "job:\n  title: PV Design Engineer\n  salary: {currency: USD, min: 90000, max: 110000}"
    assert ("salary_range", "USD 90000-110000") in facets_of(doc(yaml))


def test_a_greeting_names_the_reader_not_the_hiring_manager():
    note = doc("Hi Priya, quick one: the hiring manager wants two more screens.", "email")
    assert not any(k == "hiring_manager" for k, _ in facets_of(note))


def test_a_job_ad_and_a_brief_in_bullets_name_the_role_and_its_hires():
    ad = doc(
        "Concept Artist (12-month contract)\n\nWe are looking for two Concept Artists to join "
        "our Guildford art team. This is an on-site role.",
        "brief",
    )
    bullets = doc(
        "Here's what I need:\n- Community Manager, intermediate (L3)\n- Remote, anywhere in "
        "Canada\n- CAD 60,000 – 72,000",
        "email",
        "d2",
    )
    assert {("title", "Concept Artist"), ("headcount", "2")} <= facets_of(ad)
    assert {("title", "Community Manager"), ("salary_range", "CAD 60,000 – 72,000")} <= facets_of(
        bullets
    )


def test_a_manager_named_with_a_role_in_parentheses_is_the_hiring_manager():
    note = doc(
        "I'm moving over to Live Ops, so Meera Iyer (Head of Analytics) will be the hiring "
        "manager from now on.",
        "email",
    )
    assert ("hiring_manager", "Meera Iyer") in facets_of(note)


@pytest.mark.parametrize(
    "a,b,same",
    [
        ("Portland, Maine", "Portland, ME", True),
        ("Portland, ME", "Portland, OR", False),
        ("Austin TX", "Austin, TX", True),
        ("Toronto, Canada", "Toronto, ON", True),
    ],
)
def test_a_city_in_a_region_written_as_its_code_is_the_same_place(a, b, same):
    from hltm_resources.engines.vocabulary import same_place

    assert same_place(a, b) is same


def test_a_heading_names_the_role_and_a_role_label_stays_a_field():
    html = (
        "<h2>Assistant Store Manager – York</h2>\n<dl><dt>Location</dt><dd>York, UK</dd>"
        "<dt>Recruiter</dt><dd>Marcus Oyelaran</dd></dl>"
    )
    got = facets_of(doc(html))
    assert ("title", "Assistant Store Manager") in got
    assert ("recruiter", "Marcus Oyelaran") in got


def test_taking_over_as_hiring_manager_is_a_change():
    export = doc(json.dumps({"HiringManager": "Dr. Alan Whitcombe", "Title": "Radiographer"}))
    email = doc(
        "Hi Priya,\nDr. Whitcombe is going on leave. Nadia Farouk (Radiology Services Manager) "
        "takes over as hiring manager for all four posts.",
        "email",
        "d2",
        "2026-02-02",
    )
    assert ("hiring_manager", "Nadia Farouk") in facets_of(export, email)


def test_xml_with_declared_entities_is_read_as_text_not_expanded():
    from hltm_resources.engines.extractive.exports import xml_tree

    bomb = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa">]><r><title>&a;&a;</title></r>'
    assert xml_tree(bomb) is None
    assert xml_tree("<r><title>Analyst</title></r>") == {"r": {"title": "Analyst"}}


@pytest.mark.parametrize(
    "text,name",
    [
        ("This sits under Project Tailwind (the checkout rebuild).", "Project Tailwind"),
        ("The service is codenamed Atlas internally.", "Atlas"),
        ("Reports to the Project Manager of the site.", None),
    ],
)
def test_a_code_name_in_prose(text, name):
    names = {v for k, v in facets_of(doc(text, "brief")) if k == "code_name"}
    assert names == ({name} if name else set())


def test_a_list_of_one_office_is_one_place_and_a_new_req_line_no_skill():
    first = doc(json.dumps({"job": {"offices": [{"name": "Berlin", "country": "Germany"}]}}))
    later = doc(
        json.dumps({"job": {"offices": [{"name": "New York", "country": "United States"}]}}),
        doc_id="d2",
        updated="2026-02-01",
    )
    got = facets_of(first, later)
    assert [v for k, v in got if k == "location"] == ["New York, United States"]
    brief = doc("New req: Healthcare IT Specialist, mid-level.\nThis is an on-site role.", "brief")
    assert not any(k == "skill" for k, _ in facets_of(brief))


def test_a_code_name_is_never_learned_to_be_a_title():
    from hltm_resources.engines.aliases import value_aliases

    learned = value_aliases({"title": ["Level Designer"], "code_name": ["Nightjar", "Halcyon"]})
    assert "code_name" not in learned


def test_a_field_of_money_in_any_language_is_pay():
    tsv = "Campo\tValor\nPuesto\tStore Manager\nSalario\t34.000–40.000 € brutos/año"
    assert ("salary_range", "34.000–40.000 € brutos/año") in facets_of(doc(tsv))


@pytest.mark.parametrize(
    "later,wanted",
    [
        (
            "Good news – finance signed off on a third seat, so we're now hiring 3 senior "
            "gameplay programmers on this req instead of 2.",
            ("headcount", "3"),
        ),
        (
            "Quick heads-up: Graham Pettifer starts parental leave from 8 April, so Nadia Okafor "
            "(Engine Lead) is taking over as hiring manager for this req from today.",
            ("hiring_manager", "Nadia Okafor"),
        ),
        (
            "I've agreed with HR to move the analyst band to £50,000 – £60,000.",
            ("salary_range", "£50,000 – £60,000"),
        ),
        (
            "Please change the location on the role: it's now Edinburgh, not Glasgow.",
            ("location", "Edinburgh"),
        ),
    ],
)
def test_a_sentence_led_by_a_few_words_is_prose_and_states_its_change(later, wanted):
    export = doc(
        "Title: Analyst\nLocation: Glasgow\nHeadcount: 2\nHiring manager: Graham Pettifer\n"
        "Salary: GBP 45,000 - 55,000"
    )
    email = doc(
        f"From: A\nTo: B\nSubject: update\n\nHi all,\n{later}\nThanks", "email", "d2", "2026-03-01"
    )
    assert wanted in facets_of(export, email)


REQ = doc("Title: Financial Controller\nLocation: Boston, MA\nHeadcount: 2\nHM: Gloria Okafor")


def values(facets, key):
    return {v for k, v in facets if k == key}


@pytest.mark.parametrize(
    "later,key,wanted",
    [
        # A change "from X to Y" is a change of the attribute the leaf holds X for.
        ("The Controller role moves from Boston to Denver, same band.", "location", {"Denver"}),
        ("The role switched from Boston, MA to Austin, TX last week.", "location", {"Austin, TX"}),
        # Neither value is the leaf's: nothing is read ("from Finance to Treasury").
        ("Reporting moved from Finance to Treasury.", "location", {"Boston, MA"}),
        # A value the role no longer has is no longer stated.
        ("It is now fully remote, no longer tied to Boston.", "location", set()),
        # A count of hires a later note gives, however many words name the post.
        ("We can only fill ONE Financial Reporting Controller post now.", "headcount", {"1"}),
        ("Please treat headcount as 1 from today.", "headcount", {"1"}),
        ("New HM: Dr Ana Ruiz takes over from Gloria.", "hiring_manager", {"Dr Ana Ruiz"}),
        # A line of prose wrapped at a width goes on: the change is in its sentence.
        (
            "I'm going on extended leave from next week, so Elena Sarasola will be the hiring\n"
            "manager for the Senior Financial Controller search from now on, as agreed with HR.",
            "hiring_manager",
            {"Elena Sarasola"},
        ),
        ("Please cut the graduate financial controller intake from 2 to 1.", "headcount", {"1"}),
        (
            "The board approved it: the Controller will sit in Denver, not Boston.",
            "location",
            {"Denver"},
        ),
    ],
)
def test_a_later_note_changes_what_the_leaf_holds_it_for(later, key, wanted):
    note = doc(later, kind="email", doc_id="d2", updated="2026-02-01")
    assert values(facets_of(REQ, note), key) == wanted


def test_a_date_is_no_count_of_hires():
    note = doc(
        "Intake - Controller, HM Gloria Okafor - 6 Feb\nFirst US hire for us.", "brief", "d2"
    )
    assert values(facets_of(REQ, note), "headcount") == {"2"}


@pytest.mark.parametrize(
    "text,key,wanted",
    [
        ("Brief. HM = Dr Saoirse Madigan. Start 1 July.", "hiring_manager", "Dr Saoirse Madigan"),
        (
            'Internally the team calls it "Kittiwake" (the project code name).',
            "code_name",
            "Kittiwake",
        ),
        ('{"title": "Scientist", "mgr": "Kenji Aramaki, PhD"}', "hiring_manager", "Kenji Aramaki"),
        (
            "Please raise a req for a Project Manager, Estates. Based at the Cardiff Bay campus.",
            "location",
            "Cardiff Bay",
        ),
        ("Please raise a req for a Project Manager, Estates.", "title", "Project Manager"),
        (
            '{"title": "Scientist", "comp_lo_usd": 110000, "comp_hi_usd": 128000}',
            "salary_range",
            "USD 110000-128000",
        ),
        ("Title: Analyst\nGrade: 7\nLocation: Leeds", "seniority", "Grade 7"),
    ],
)
def test_facts_written_in_abbreviations_quotes_and_codes(text, key, wanted):
    assert wanted in values(facets_of(doc(text)), key)


def test_a_grade_is_its_code():
    assert same_value_key("seniority", "G7") == same_value_key("seniority", "Grade 7")
    assert same_value_key("seniority", "G7") != same_value_key("seniority", "Grade 6")


def test_a_numbered_form_and_its_blanks_are_read_as_fields():
    form = doc(
        "ACME - REQUISITION FORM\n[1] Position title: ____QC Analyst II____\n"
        "[2] Site: Leeds\n[3] Headcount: 3\n[4] Pay range (USD): $78,000 - $92,000"
    )
    got = facets_of(form)
    assert {("title", "QC Analyst II"), ("location", "Leeds"), ("headcount", "3")} <= got


def test_an_element_named_by_a_field_keeps_its_name_unless_its_label_names_another():
    xml = doc(
        '<job><title>Cloud Engineer</title><location type="remote">United States</location>'
        '<skill type="required">AWS</skill><skill type="preferred">Go</skill></job>'
    )
    got = facets_of(xml)
    assert {("location", "United States"), ("workplace_type", "remote")} <= got
    assert {("skill", "AWS"), ("preferred_skill", "Go")} <= got


@pytest.mark.parametrize(
    "chat",
    [
        "[10:02] Rania: update - 6 shortlisted, Cardiff only 2\n[10:04] Rania: ok, no swap then\n"
        "[10:04] Saoirse: correct, keep them separate",
        "Ewan: Lauren accepted?\nMarcus: yes, £37k, starts 13 May\nEwan: great",
    ],
)
def test_people_taking_turns_in_a_chat_are_no_fields(chat):
    got = facets_of(doc("Title: Web Developer\nSalary: £34,500–£38,000"), doc(chat, "chat", "d2"))
    assert values(got, "salary_range") == {"£34,500–£38,000"}
    assert {k for k, _ in got} <= {"title", "salary_range", "currency"}


def test_openings_counted_per_place_name_the_places():
    brief = doc(
        "Intake\nHiring manager: Dr. Ana Ruiz\nPosts: 2 (Leiden x1, Delft x1), on-site", "brief"
    )
    got = facets_of(doc('{"title": "Nurse", "site": "Leiden - Rijnland Hospital"}'), brief)
    assert {"Leiden", "Delft"} <= values(got, "location") and values(got, "headcount") == {"2"}


def test_a_count_of_heads_after_a_number_and_a_drop_the_same_day():
    email = doc(
        "One of our two design heads moved teams. So the search drops to 1 head.",
        "email",
        "d2",
        "2026-02-01",
    )
    assert values(facets_of(REQ, email), "headcount") == {"1"}


def test_the_ends_of_a_range_in_a_text_export_are_one_range_not_fields():
    got = facets_of(doc("Title: Analyst\nsalary_low: 60000\nsalary_high: 70000\ncurrency: EUR"))
    assert values(got, "salary_range") == {"EUR 60000-70000"}
    assert not {k for k, _ in got} & {"salary_low", "salary_high"}


def test_a_scorecard_rates_a_candidate_not_the_role():
    card = doc(
        "SCORECARD | Candidate: Ana Ruiz\nSlurm / scheduler ops: 5/5\nCommunication: 4/5\n"
        "Recommendation: OFFER",
        "scorecard",
        "d2",
    )
    got = facets_of(REQ, card)
    assert {k for k, _ in got} <= {"title", "location", "headcount", "hiring_manager"}, got


@pytest.mark.parametrize(
    "text",
    [
        "Working fully from home won't be approved.",
        "Hybrid arrangements won't be approved. Distributed role, no desk needed.",
        "They can't work from home on this one.",
    ],
)
def test_an_arrangement_that_will_not_be_allowed_is_not_stated(text):
    export = doc("Title: Nurse\nWorkplace: on-site")
    note = doc(text, "brief", "d2")  # the same day as the export
    assert values(facets_of(export, note), "workplace_type") == {"on-site"}


def test_unable_to_offer_sponsorship_is_no():
    ad = doc("We are hiring a Site Engineer in Dublin. We are unable to offer visa sponsorship.")
    assert values(facets_of(ad), "visa_sponsorship") == {"no"}


def test_a_form_labelled_in_another_language_only_states_its_fields():
    text = (
        "Stilling: Kabinsjef\nSted: Bergen, Norge\nAntall: 3\nLønn: NOK 40 000–46 000\nNivå: Senior"
    )
    assert {("location", "Bergen, Norge"), ("headcount", "3"), ("seniority", "Senior")} <= (
        facets_of(doc(text))
    )


def test_a_forwarded_request_states_what_it_quotes_a_reply_does_not():
    quoted = "> Position: Dispatcher\n> Location: Tromsø\n> Openings: 2\n"
    forwarded = "---------- Forwarded message ---------\nFrom: A\n\nCan you take this?\n\n"
    assert ("location", "Tromsø") in facets_of(doc(forwarded + quoted, kind="email"))
    reply = "Thanks, will do.\n\nOn Mon, 3 Feb 2025, A wrote:\n" + quoted
    assert ("location", "Tromsø") not in facets_of(doc(reply, kind="email"))


@pytest.mark.parametrize(
    "label,value,fact",
    [
        ("Base", "Bergen Flesland (BGO), Norway", ("location", "Bergen Flesland, Norway")),
        ("Base", "NOK 600,000-650,000", ("salary_range", "NOK 600,000-650,000")),
        ("City / Country", "Lyon, France", ("location", "Lyon, France")),
        ("Workplace", "På plats / On-site (shift-based)", ("workplace_type", "on-site")),
        ("salary_eur_year", "48,000 - 55,000", ("currency", "EUR")),
        ("sponsor", "N", ("visa_sponsorship", "no")),
    ],
)
def test_labels_and_values_read_by_what_they_hold(label, value, fact):
    text = f"Title: Ramp Agent\n{label}: {value}\nHeadcount: 2"
    found = facets_of(doc(text))
    key, said = fact
    assert any(k == key and same_value_key(k, v) == same_value_key(k, said) for k, v in found), (
        found
    )


def test_a_change_to_a_new_place_with_its_code_after_it_is_a_change():
    req = doc("Title: Station Manager\nLocation: Aalborg, Denmark")
    note = later("The role moves from Aalborg to Billund (BLL). Nothing else changes.")
    assert ("location", "Billund") in facets_of(req, note)


def test_making_a_role_remote_is_a_change_of_its_arrangement():
    req = doc("Title: Security Engineer\nWorkplace: hybrid")
    note = later("No one local accepted, so we're making the role fully remote across the EU.")
    assert ("workplace_type", "remote") in facets_of(req, note)


def test_an_offer_of_one_sum_leaves_the_band_of_the_role():
    req = doc("Senior Analyst in Oslo. Salary is NOK 50,000–58,000 per month.", kind="brief")
    offer = later("Offer to A. Candidate\nMonthly salary: NOK 55,500", kind="offer")
    assert ("salary_range", "NOK 50,000–58,000") in facets_of(req, offer)


def test_a_name_said_internally_in_quotes_is_the_code_name():
    note = doc('The new clinic is known internally as "Heron"; keep it out of ads.', kind="brief")
    assert ("code_name", "Heron") in facets_of(note)


def test_a_manager_is_the_same_person_with_or_without_their_position():
    assert same_value_key("hiring_manager", "Maja Lund, Cabin Services Manager") == same_value_key(
        "hiring_manager", "Maja Lund"
    )
    assert same_value_key("hiring_manager", "Ana Ruiz, Bo Lee") != same_value_key(
        "hiring_manager", "Ana Ruiz"
    )


def test_arrow_lines_are_fields_and_a_heading_names_the_roles_city():
    arrows = "ROLE >> Sales Director\nBASE >> Lyon, France (not Paris)\nHEADS >> 1"
    assert ("location", "Lyon, France") in facets_of(doc(arrows))
    ad = doc("Payroll Specialist – Leeds (hybrid)\n\nWe are hiring a Payroll Specialist.", "brief")
    assert ("location", "Leeds") in facets_of(ad)


def test_a_writer_who_says_they_are_the_hiring_manager_is_the_hiring_manager():
    mail = (
        "From: Ines Duarte <ines.duarte@example.com>\nSubject: new req\n\n"
        "Can you open a search for a Line Supervisor? I'm the hiring manager."
    )
    assert ("hiring_manager", "Ines Duarte") in facets_of(doc(mail, kind="email"))
    signed = "Position: Buyer\nHiring manager (signature): P. Nowak"
    assert ("hiring_manager", "P. Nowak") in facets_of(doc(signed))


def test_yaml_comments_and_one_line_mappings_are_no_part_of_a_value():
    yaml = (
        "title: Engine Programmer\nlocation: {city: Montreal, province: QC, country: Canada}\n"
        "work_model: hybrid        # 3 studio days\nhiring_manager: Ana Roy    # Tech Director"
    )
    found = facets_of(doc(yaml))
    assert {("location", "Montreal, QC, Canada"), ("hiring_manager", "Ana Roy")} <= found


def test_a_reply_from_the_new_hiring_manager_replaces_the_old_one_not_the_greeting():
    req = doc("Title: Rigging Artist\nHiring manager: Marta Nowak")
    reply = later(
        "From: Jean Roy <jean.roy@example.com>\nSubject: RE: handover\n\nSalut Delphine,\n\n"
        "Confirmed: as of this week I'm the hiring manager for the rigging search."
    )
    assert ("hiring_manager", "Jean Roy") in facets_of(req, reply)


def test_a_candidates_location_in_feedback_is_not_the_roles():
    req = doc("Title: Engine Programmer\nLocation: Montreal, Canada")
    feedback = doc("Candidate: R. O'Connell\nLocation: Seattle, WA, USA", "feedback", "d2")
    assert {v for k, v in facets_of(req, feedback) if k == "location"} == {"Montreal, Canada"}


def test_a_managers_titles_and_position_are_no_part_of_who_they_are():
    for written in ("Prof. Dr. Klaus Berg", "Dr Klaus Berg, chef de service", "K. Berg"):
        assert same_value_key("hiring_manager", written).endswith("berg"), written
    assert same_value_key("hiring_manager", "Prof. Dr. Klaus Berg") == "klaus berg"
    assert ("hiring_manager", "Nadia Bel") in facets_of(doc("HM: Nadia Bel. Offer planned."))


def test_a_reply_answering_the_questions_it_quotes_states_its_answers():
    reply = (
        "From: P. Claes\nSubject: Re: new req\n\nYes, please open it. Answers inline.\n\n"
        "> From: M. Kerkhoff\n> Sent: Mon, 10 Feb 2025 09:05\n>\n"
        "> 3. Band?\n€145,000 – €185,000 per year (gross).\n> 4. Sponsorship?\nYes, via the "
        "kennismigrant route.\n"
    )
    found = facets_of(doc(reply, kind="email"))
    assert ("salary_range", "€145,000 – €185,000 per year (gross)") in found
    assert any(k == "visa_sponsorship" and v.startswith("Yes") for k, v in found), found


def test_handing_a_search_over_to_someone_makes_them_its_hiring_manager():
    req = doc("Title: ED Physician\nHiring manager: Klaus Berg")
    mail = later(
        "I am handing over the ED physician search (2 posts) to Dr. Miriam Okafor, effective"
        " today. The nursing search stays with me."
    )
    assert ("hiring_manager", "Miriam Okafor") in facets_of(req, mail)


def test_the_range_a_band_had_before_is_not_the_range_it_has():
    note = doc(
        "The committee approved a revised band: €76,000 – €90,000 gross per year (was €70,000"
        " – €85,000).",
        kind="email",
    )
    assert {v for k, v in facets_of(note) if k == "salary_range"} == {"€76,000 – €90,000"}


def test_a_csv_under_a_title_line_and_a_persons_fields_are_read_as_they_are():
    export = (
        "Greenhouse export · 2025-01-21\nJob ID;Job Name;Office;Openings;HM\n"
        "48213077;Engine Programmer;Montreal, CA;1;Ana Roy"
    )
    found = facets_of(doc(export))
    assert {("title", "Engine Programmer"), ("location", "Montreal, CA")} <= found
    assert canonical_key("hm_nm") == "hiring_manager" and canonical_key("hm_role") == "hm_role"
    assert canonical_key("loc_cty") == "location"


def test_a_site_and_its_city_in_one_export_is_the_city():
    export = '{"org": {"site": "Sint-Servaas"}, "loc": {"cty": "Maastricht", "ctry": "NL"}}'
    assert {v for k, v in facets_of(doc(export)) if k == "location"} == {"Maastricht"}


def test_a_reply_filling_in_quoted_labels_states_them():
    reply = (
        "From: N. Bel\nSubject: Re: req\n\nFilled in below.\n\n> Hi, I need:\n> - where:\n"
        "Montreal studio, hybrid\n> - pay:\nCAD 95,000–115,000 a year\n"
    )
    found = facets_of(doc(reply, kind="email"))
    assert ("salary_range", "CAD 95,000–115,000 a year") in found, found


def test_a_take_home_exercise_and_a_panelists_aside_say_nothing_of_the_workplace():
    note = doc("- Maxime: take-home excellent. Offer next week.", kind="note")
    assert not any(k == "workplace_type" for k, _ in facets_of(note))
    brief = doc("Panel: Nadia (HM), Agnieszka Kowal (QA, remote from Kraków).", kind="brief")
    assert not any(k == "workplace_type" for k, _ in facets_of(brief))


def test_a_studio_or_a_campus_is_where_the_role_is():
    export = '{"title": "Associate Producer", "where": {"studio": "Brighton", "country": "UK"}}'
    assert ("location", "Brighton, UK") in facets_of(doc(export))


def test_a_scanned_form_with_check_boxes_and_abbreviated_labels_is_a_form():
    scan = (
        "[scan: request.pdf — OCR text]\nNEW IT HIRE REQUEST\n(please fill in in capitals)\n"
        "Position:  NETWORK ENGINEER\nLevel:      [ ] Junior    [X] Medior    [ ] Senior\n"
        "No. of positions:  2\nWorkplace:  [ ] On-site   [X] Hybrid   [ ] Remote\n"
        "Skills:  CISCO (CATALYST), FORTINET FIREWALLS"
    )
    found = facets_of(doc(scan))
    assert {("headcount", "2"), ("seniority", "Mid-level"), ("workplace_type", "hybrid")} <= found
    assert ("skill", "FORTINET FIREWALLS") in found
