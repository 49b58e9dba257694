"""Question understanding: what a question asks, read against its scope's own keys and values
(pure functions, hand-written vocabularies; no model, no store)."""

import pytest

from hltm_resources.engines.base import ScopeVocabulary
from hltm_resources.engines.understanding import analyze
from hltm_resources.schema import DEFAULT_SCHEMA

VOCAB = ScopeVocabulary(
    {
        "title": [
            "Backend Engineer",
            "Frontend Engineer",
            "Machine Learning Engineer",
            "Site Reliability Engineer",
            "Data Engineer",
            "Clinical Data Analyst",
            "Product Manager",
        ],
        "seniority": ["Senior", "Mid-Senior level", "Junior", "Mid-level", "Lead", "Staff"],
        "location": ["New York, New York", "Lisbon, Portugal", "Toronto, Canada", "Seattle"],
        "workplace_type": ["remote", "hybrid", "on-site"],
        "skill": ["Go", "gRPC", "Kubernetes", "Python", "SQL", "PostgreSQL", "GraphQL"],
        "rejection_reason": ["no visa sponsorship available", "salary expectations too high"],
        "hiring_manager": ["Zofia Eriksen"],
    },
    ("project_count",),
)
NAMES = {"seat:kaito": "Kaito Fischer", "seat:priya": "Priya Varga", "account:nw": "Northwind"}


def read(question: str, scope: str = "seat:kaito"):
    level = scope.split(":", 1)[0]
    return analyze(question, VOCAB, DEFAULT_SCHEMA, level, NAMES, scope)


def read_in(vocab: ScopeVocabulary, question: str, level: str = "account"):
    """``question`` analyzed at a node of ``level`` whose memory holds ``vocab``."""
    return analyze(question, vocab, DEFAULT_SCHEMA, level, {}, f"{level}:a")


def constraints(a) -> set[str]:
    return {f"{m.key}: {m.value}" for m in a.constraints}


@pytest.mark.parametrize(
    "question,form,asked,wanted",
    [
        # One fact at a leaf: what is asked, nothing filtered.
        ("Where is this role located?", "fact", "location", set()),
        ("Where's this one based?", "fact", "location", set()),
        ("What's the work arrangement on this search?", "fact", "workplace_type", set()),
        ("Who's the hiring manager for this search?", "fact", "hiring_manager", set()),
    ],
)
def test_a_one_fact_question_at_a_leaf_asks_for_its_attribute(question, form, asked, wanted):
    a = read(question, "project:p3")
    assert (a.form, a.asked_key, constraints(a)) == (form, asked, wanted)


@pytest.mark.parametrize(
    "question,wanted",
    [
        ("Which roles are senior?", {"seniority: Senior"}),
        ("Which of Kaito's openings are senior-level?", {"seniority: Senior"}),
        ("Which searches are for frontend engineers?", {"title: Frontend Engineer"}),
        ("Which of my openings need SQL?", {"skill: SQL"}),
        ("Which roles list SQL as a requirement?", {"skill: SQL"}),
        (
            "Which SRE searches are remote?",
            {"title: Site Reliability Engineer", "workplace_type: remote"},
        ),
        (
            "Show me the junior data engineering searches.",
            {"seniority: Junior", "title: Data Engineer"},
        ),
    ],
)
def test_a_list_question_names_values_by_identity_not_by_likeness(question, wanted):
    a = read(question)
    assert a.form == "list" and a.level == "project"
    # "senior" is Senior, not Mid-Senior level; "frontend" is Frontend, not Backend; SQL is
    # not PostgreSQL; "SRE" and "data engineering" name their titles.
    assert constraints(a) == wanted


def test_a_question_for_recruiters_lists_the_level_above_the_leaves():
    a = read("Which recruiters hire Frontend Engineers?", "account:nw")
    assert (a.form, a.level, constraints(a)) == ("list", "seat", {"title: Frontend Engineer"})


@pytest.mark.parametrize(
    "question,wanted,words",
    [
        # A value that modifies another noun is not a constraint on the role.
        ("Which candidate reached the onsite interview?", set(), ("on-site",)),
        ("Who is the hiring lead on the Lisbon search?", {"location: Lisbon, Portugal"}, ()),
        ("Which candidate had strong GraphQL depth?", set(), ("GraphQL",)),
    ],
)
def test_a_value_in_another_role_is_no_constraint(question, wanted, words):
    a = read(question)
    assert constraints(a) == wanted
    assert set(words) <= set(a.context_words)
    assert a.form == "fact"


def test_a_fact_no_key_holds_is_asked_by_its_words():
    a = read("What's the budget owner of Kaito's Lisbon backend search?")
    assert a.form == "fact" and a.asked_key is None and a.asked_phrase == "budget owner"
    assert constraints(a) == {"location: Lisbon, Portugal", "title: Backend Engineer"}


def test_initials_and_other_inflections_name_a_value():
    a = read("Who's the HM on the ML engineering search?")
    assert a.asked_key == "hiring_manager" and a.answer_type == "person"
    assert constraints(a) == {"title: Machine Learning Engineer"}


def test_counts_distributions_and_why():
    assert read("How many of Kaito's searches are hybrid?").form == "count"
    how = read("How many recruiters have SRE searches?", "account:nw")
    assert (how.form, how.level) == ("count", "seat")
    spread = read("Where are the jobs usually located?")
    assert (spread.form, spread.asked_key) == ("distribution", "location")
    why = read("Why was Uma Byrne turned down?")
    assert (why.form, why.mentions) == ("why", ("Uma Byrne",))


def test_a_recruiter_named_narrows_the_answer_to_their_searches():
    a = read("How many remote roles does Priya have?", "account:nw")
    assert (a.form, a.within, constraints(a)) == ("count", "seat:priya", {"workplace_type: remote"})


def test_a_reason_said_in_other_words_is_that_reason():
    a = read("In how many searches was someone turned down because we couldn't sponsor a visa?")
    assert constraints(a) == {"rejection_reason: no visa sponsorship available"}


def test_options_of_one_key_are_what_is_asked():
    a = read("Is this position hybrid, remote or on-site?", "project:p3")
    assert a.asked_key == "workplace_type" and not a.constraints
    assert set(a.options) == {"hybrid", "remote", "on-site"}


def test_a_negated_value_excludes_the_leaves_holding_it():
    a = read("Which searches need Kubernetes but are not in Toronto?", "account:nw")
    assert constraints(a) == {"skill: Kubernetes"}
    assert [f"{m.key}: {m.value}" for m in a.excluded] == ["location: Toronto, Canada"]
    a = read("Which of Kaito's roles are not remote?", "seat:kaito")
    assert (a.form, constraints(a)) == ("list", set())
    assert [m.value for m in a.excluded] == ["remote"]
    a = read("Which searches don't require Kubernetes?", "account:nw")
    assert [m.value for m in a.excluded] == ["Kubernetes"] and not a.constraints


def test_values_named_as_alternatives_are_the_options_of_what_is_asked():
    a = read("How many of Kaito's searches are Staff or Lead level?", "account:nw")
    assert (a.form, a.asked_key, a.options) == ("count", "seniority", ("Staff", "Lead"))
    # About one search named by its values, the options ask a fact about it.
    a = read("Is Kaito's senior backend search remote or hybrid?", "seat:kaito")
    assert (a.form, a.asked_key, a.options) == ("fact", "workplace_type", ("remote", "hybrid"))
    assert constraints(a) == {"seniority: Senior", "title: Backend Engineer"}


@pytest.mark.parametrize(
    "question,asked",
    [
        ("Who is the most frequent hiring manager at Northwind?", "hiring_manager"),
        ("Where are most of Kaito's roles based?", "location"),
    ],
)
def test_a_distribution_names_its_attribute_outright(question, asked):
    a = read(question, "account:nw")
    assert (a.form, a.asked_key, a.asked_by) == ("distribution", asked, "")


def test_initials_stand_for_words_written_apart_and_never_for_a_person():
    a = read("Which ML searches are hybrid?", "account:nw")
    assert constraints(a) == {"title: Machine Learning Engineer", "workplace_type: hybrid"}
    # "ML" is not "Mid-level" (one word) nor Zofia Eriksen's initials.
    assert not any(m.key in ("seniority", "hiring_manager") for m in a.constraints)


def test_the_leaf_as_subject_is_not_the_attribute_asked():
    a = read("What does this role require?", "project:p3")
    assert a.asked_key != "title"


@pytest.mark.parametrize(
    "question,wanted,excluded",
    [
        # An exclusion reaches every value listed after it.
        (
            "Which searches are Senior level (not Staff, Lead or Junior)?",
            {"seniority: Senior"},
            {"seniority: Staff", "seniority: Lead", "seniority: Junior"},
        ),
        (
            "Which searches are for a Data Engineer, as opposed to a Backend Engineer?",
            {"title: Data Engineer"},
            {"title: Backend Engineer"},
        ),
        (
            "Which roles are hybrid rather than remote?",
            {"workplace_type: hybrid"},
            {"workplace_type: remote"},
        ),
    ],
)
def test_values_a_question_sets_aside_are_excluded_not_required(question, wanted, excluded):
    a = read(question)
    assert a.form == "list" and constraints(a) == wanted
    assert {f"{m.key}: {m.value}" for m in a.excluded} == excluded


def test_which_leaves_hold_either_of_two_values_is_a_list_of_both():
    a = read("Which searches are remote or hybrid?")
    assert (a.form, a.level, a.asked_key) == ("list", "project", "workplace_type")
    assert set(a.options) == {"remote", "hybrid"}


def test_a_value_that_says_which_role_stays_a_constraint_whatever_follows_it():
    a = read("When is the backend engineer supposed to start?")
    assert constraints(a) == {"title: Backend Engineer"} and not a.context_words


def test_the_scope_and_the_nodes_above_it_are_named_not_looked_for():
    a = analyze(
        "When is Priya's backend engineer in Lisbon supposed to start?",
        VOCAB,
        DEFAULT_SCHEMA,
        "project",
        {"project:p3": "Backend (Lisbon)", "seat:priya": "Priya Varga", "account:nw": "Northwind"},
        "project:p3",
        {"seat:priya", "account:nw"},
    )
    assert a.within is None and not a.mentions
    # A node named by its id ("Tallyfin" for account:tallyfin named "Tally Financial").
    b = analyze(
        "Which Tallyfin roles are remote?",
        VOCAB,
        DEFAULT_SCHEMA,
        "account",
        {"account:tallyfin": "Tally Financial"},
        "account:tallyfin",
    )
    assert not b.mentions and constraints(b) == {"workplace_type: remote"}


def test_the_word_for_the_leaves_is_no_part_of_a_title():
    vocab = ScopeVocabulary(
        {
            "title": ["Staff Software Engineer, Search & Recommendations", "Product Designer"],
            "location": ["Dublin, Ireland"],
        },
        (),
    )
    a = read_in(vocab, "Which searches are based in Dublin?")
    assert constraints(a) == {"location: Dublin, Ireland"}


def test_a_word_of_a_keys_name_is_no_value():
    vocab = ScopeVocabulary(
        {"seniority": ["Senior", "Manager (M1)"], "hiring_manager": ["Amara Okafor"]}, ()
    )
    a = read_in(vocab, "Which searches is Amara Okafor the hiring manager for?")
    assert constraints(a) == {"hiring_manager: Amara Okafor"}


def test_a_question_for_a_date_by_its_noun_asks_for_a_date():
    a = read("What's the start date on the Lisbon backend search?")
    assert a.form == "fact" and a.answer_type == "date"


def test_a_measure_asks_for_a_number_and_a_verb_is_no_agent_noun():
    vocab = ScopeVocabulary(
        {"title": ["Customer Support Team Lead"], "seniority": ["Lead", "Manager (M1)"]}, ()
    )
    a = analyze(
        "How big a team should the new lead already have managed?",
        vocab,
        DEFAULT_SCHEMA,
        "project",
        {},
        "project:p1",
    )
    assert a.answer_type == "number" and a.asked_phrase == "team"
    assert "seniority: Manager (M1)" not in constraints(a)


def test_a_yes_no_question_over_a_seat_asks_the_value_after_the_roles_noun():
    a = read("Is the Lisbon backend search remote?")
    assert constraints(a) == {"location: Lisbon, Portugal", "title: Backend Engineer"}
    assert (a.asked_key, a.options, a.yes_no) == ("workplace_type", ("remote",), True)


def test_leaves_that_have_an_attribute_hold_any_value_of_it():
    vocab = ScopeVocabulary({"title": ["Backend Engineer"], "code_name": ["Copperline"]}, ())
    a = read_in(vocab, "How many searches have a code name?")
    assert (a.form, a.holding, a.constraints) == ("count", ("code_name",), ())
    b = read_in(vocab, "Which searches have had a candidate withdraw?")
    assert b.holding == ()


def test_one_role_named_in_full_is_one_title_not_two():
    vocab = ScopeVocabulary(
        {
            "title": ["Backend Engineer (Shipment Tracking)", "Backend Engineer - TMS Platform"],
            "seniority": ["Staff", "Senior"],
        }
    )
    a = read_in(
        vocab, "What base range are we offering for the Staff backend engineer on the TMS platform?"
    )
    titles = {m.value for m in a.constraints if m.key == "title"}
    assert titles == {"Backend Engineer - TMS Platform"}


def test_a_word_of_a_title_outside_the_scope_names_nothing_in_it():
    vocab = ScopeVocabulary(
        {"title": ["Data Engineer", "Clinical Data Analyst", "Backend Engineer - TMS Platform"]},
        outside={"title": frozenset({"Backend Engineer - TMS Platform"})},
    )
    a = read_in(vocab, "Who's the hiring manager for the research platform data engineer?")
    assert constraints(a) == {"title: Data Engineer"}


@pytest.mark.parametrize(
    "question,asked",
    [
        ("Is sponsorship available?", "visa_sponsorship"),
        ("Can we sponsor a visa for the Lisbon backend search?", "visa_sponsorship"),
    ],
)
def test_a_question_about_sponsorship_asks_for_it(question, asked):
    vocab = ScopeVocabulary({**VOCAB.values, "visa_sponsorship": ["yes", "no"]})
    a = analyze(question, vocab, DEFAULT_SCHEMA, "project", NAMES, "project:p3")
    assert a.asked_key == asked


def test_saying_no_to_an_offer_names_no_sponsorship():
    vocab = ScopeVocabulary({**VOCAB.values, "visa_sponsorship": ["yes", "no"]})
    a = analyze(
        "Why did Chloe Marchand say no to our offer?",
        vocab,
        DEFAULT_SCHEMA,
        "seat",
        NAMES,
        "seat:kaito",
    )
    assert not any(c.key == "visa_sponsorship" for c in a.constraints)


@pytest.mark.parametrize(
    "question,wanted,form",
    [
        ("How many searches are hiring more than one person?", "headcount: more than 1", "count"),
        ("number of searches with at least 2 openings?", "headcount: at least 2", "count"),
        ("how many of our reqs are paid in pounds?", "currency: GBP", "count"),
    ],
)
def test_a_bound_on_hires_and_a_currency_are_constraints(question, wanted, form):
    vocab = ScopeVocabulary({**VOCAB.values, "headcount": ["1", "2"], "currency": ["EUR", "GBP"]})
    a = analyze(question, vocab, DEFAULT_SCHEMA, "account", NAMES, "account:nw")
    assert (a.form, constraints(a)) == (form, {wanted})


def test_how_many_hires_asks_for_the_number_a_role_hires():
    vocab = ScopeVocabulary({**VOCAB.values, "headcount": ["1", "2"]})
    a = analyze(
        "Lisbon data engineer: how many hires?",
        vocab,
        DEFAULT_SCHEMA,
        "account",
        NAMES,
        "account:nw",
    )
    assert (a.form, a.answer_type) == ("fact", "number")


@pytest.mark.parametrize(
    "question,asked",
    [
        ("Why did we turn down the Lisbon candidate?", "rejection_reason"),
        ("Why did Chloe say no to our offer?", "rejection_reason"),
        ("why did this go from 2 seats to 1?", None),
        ("why isn't this tied to Madrid any more?", None),
    ],
)
def test_a_why_about_a_candidate_asks_for_reasons_one_about_the_role_does_not(question, asked):
    a = read(question, "project:p3")
    assert (a.form, a.asked_key) == ("why", asked)


def test_a_value_of_the_key_asked_about_is_an_option_to_check_not_a_filter():
    a = read("What level is the Lisbon backend engineer? Senior?", "account:nw")
    assert a.asked_key == "seniority" and a.options == ("Senior",)
    assert constraints(a) == {"location: Lisbon, Portugal", "title: Backend Engineer"}


@pytest.mark.parametrize(
    "question,wanted",
    [
        ("Which searches are in Portland, Oregon?", {"location: Portland, OR"}),
        ("Which searches are in Portland?", {"location: Portland"}),
    ],
)
def test_a_city_of_two_regions_is_named_by_its_region_or_stands_for_both(question, wanted):
    vocab = ScopeVocabulary(
        {"location": ["Portland, Maine", "Portland, OR"], "title": ["Engineer"]}
    )
    a = read_in(vocab, question)
    assert constraints(a) == wanted


def test_a_question_asked_inside_a_sentence_and_a_key_by_its_short_name():
    vocab = ScopeVocabulary({**VOCAB.values, "hiring_manager": ["Zofia Eriksen", "Aoife Byrne"]})
    a = analyze(
        "Lisbon backend search, now that Zofia is leaving who do I send feedback to as HM?",
        vocab,
        DEFAULT_SCHEMA,
        "seat",
        NAMES,
        "seat:kaito",
    )
    assert (a.asked_key, a.answer_type) == ("hiring_manager", "person")


def test_a_date_is_looked_for_in_what_notes_say_of_it():
    a = read("What's the start-by date?", "project:p3")
    assert (a.answer_type, a.asked_phrase) == ("date", "start by")


@pytest.mark.parametrize(
    "question,wanted",
    [
        ("Which searches is Declan Moran still hiring manager on?", "hiring_manager: Declan Moran"),
        ("my searches where Aoife is the hiring manager?", "hiring_manager: Aoife"),
        ("which of mine have Davide as HM (not just on the panel)?", "hiring_manager: Davide"),
    ],
)
def test_a_person_named_with_the_part_they_play_is_a_value_of_it(question, wanted):
    a = read(question, "seat:kaito")
    assert (a.form, constraints(a)) == ("list", {wanted})


def test_a_code_name_names_its_searches_and_a_key_word_is_no_title_part():
    vocab = ScopeVocabulary(
        {
            "title": ["Level Designer", "AI Programmer"],
            "seniority": ["Lead", "Senior"],
            "code_name": ["Nightjar", "Halcyon"],
        }
    )
    a = read_in(vocab, "what's the base band on the Nightjar AI programmer?", "seat")
    assert constraints(a) == {"code_name: Nightjar", "title: AI Programmer"}
    b = read_in(vocab, "which searches are lead level?")
    assert constraints(b) == {"seniority: Lead"}


@pytest.mark.parametrize(
    "question,asked",
    [
        ("salary band?", "salary_range"),
        ("pay range on the Lisbon backend search?", "salary_range"),
        ("HSE advisor, Hamburg side – what's the euro range?", "salary_range"),
        # A word or two that say which value, a typed "whats", the name after the role's
        ("current salary band pls - did it change after round 1?", "salary_range"),
        ("whats the hiring manager on this", "hiring_manager"),
        ("the Lisbon backend search - salary band?", "salary_range"),
    ],
)
def test_a_question_that_is_the_name_of_what_it_asks(question, asked):
    assert read(question, "project:p3").asked_key == asked


def test_a_distribution_over_a_key_named_in_two_words():
    vocab = ScopeVocabulary({"workplace_type": ["hybrid", "remote"], "skill": ["Maya", "Python"]})
    a = read_in(vocab, "what's the most common work setup across our searches?")
    assert (a.form, a.asked_key) == ("distribution", "workplace_type")


def test_a_bound_on_pay_is_a_bound_on_the_top_of_the_range_no_name():
    vocab = ScopeVocabulary({"salary_range": ["$140-155k"], "currency": ["USD", "CHF"]})
    a = read_in(vocab, "which of my reqs top out above $150k", "seat")
    assert (a.form, constraints(a), tuple(a.mentions)) == (
        "list",
        {"salary_range: above 150000 USD"},
        (),
    )
    b = analyze("searches paying over 90,000 EUR?", vocab, DEFAULT_SCHEMA, "seat", {}, "seat:s")
    assert constraints(b) == {"salary_range: over 90000 EUR"}
    c = read_in(vocab, "which searches hire more than 2 people?", "seat")
    assert constraints(c) == {"headcount: more than 2"}  # a number of people is no pay


def test_a_currency_named_with_its_country_is_no_place():
    vocab = ScopeVocabulary({"currency": ["USD", "CHF"], "location": ["Basel, Swiss Alps"]})
    a = read_in(vocab, "how many searches are paid in Swiss francs", "seat")
    assert constraints(a) == {"currency: CHF"}


def test_a_required_skill_asked_apart_from_a_nice_to_have():
    vocab = ScopeVocabulary({"skill": ["Python"], "preferred_skill": ["Python"]})
    question = "how many of my searches have Python as a must-have (not nice-to-have)?"
    a = read_in(vocab, question, "seat")
    assert constraints(a) == {"skill: Python"}
    b = analyze("which searches have Python as a nice-to-have?", vocab, DEFAULT_SCHEMA, "seat")
    assert constraints(b) == {"preferred_skill: Python"}


@pytest.mark.parametrize(
    "question,wanted",
    [
        ("List the roles where people have to be on site full time.", {"workplace_type: on-site"}),
        ("which searches are remote every day?", {"workplace_type: remote"}),
    ],
)
def test_an_arrangement_said_with_how_often_is_a_constraint(question, wanted):
    vocab = ScopeVocabulary({"workplace_type": ["on-site", "remote", "hybrid"]})
    a = read_in(vocab, question)
    assert (a.form, constraints(a)) == ("list", wanted)


def test_asking_whether_a_role_has_an_attribute_asks_for_it():
    vocab = ScopeVocabulary({"code_name": ["Selkie"], "headcount": ["2"]})
    a = analyze("does this have a project code name?", vocab, DEFAULT_SCHEMA, "project", {}, "p")
    assert a.asked_key == "code_name"
    b = read_in(vocab, "Aberdeen search – how many heads now?")
    assert b.asked_key == "headcount"


def test_a_word_of_one_value_is_not_read_again_as_another():
    vocab = ScopeVocabulary(
        {"title": ["Data Analyst II (Player Insights)"], "seniority": ["Analyst", "L3"]}
    )
    a = read_in(vocab, "player insights analyst: who's HM now?", "seat")
    assert constraints(a) == {"title: Data Analyst II (Player Insights)"}


def test_how_many_asks_for_a_number_whatever_its_noun_ends_in():
    vocab = ScopeVocabulary({"hiring_manager": ["Gareth Pryce"], "headcount": ["3"]})
    a = analyze("How many site managers are we hiring now?", vocab, DEFAULT_SCHEMA, "project")
    assert (a.answer_type, a.asked_key) == ("number", None)  # the number key, by meaning


def test_who_is_recruiting_asks_for_the_recruiters_and_who_manages_for_the_manager():
    vocab = ScopeVocabulary({"location": ["Madrid, Spain"], "hiring_manager": ["Ana Ruiz"]})
    a = analyze(
        "Who on the team is recruiting for roles in Madrid?", vocab, DEFAULT_SCHEMA, "account"
    )
    assert (a.form, a.level) == ("list", "seat")
    b = analyze("Who is hiring manager for the Madrid role?", vocab, DEFAULT_SCHEMA, "account")
    assert (b.form, b.asked_key) == ("fact", "hiring_manager")


def test_a_currency_named_in_its_own_letters():
    vocab = ScopeVocabulary({"currency": ["PLN", "EUR"]})
    a = read_in(vocab, "Which searches pay in złoty?")
    assert constraints(a) == {"currency: PLN"}


def test_a_country_the_scope_has_places_in_is_a_constraint_and_outside_excludes_it():
    vocab = ScopeVocabulary({"location": ["Stockholm, SE", "Oslo Gardermoen, Norge", "Roma"]})
    a = read_in(vocab, "Which searches are based outside Sweden?", "seat")
    assert [f"{m.key}: {m.value}" for m in a.excluded] == ["location: Sweden"]
    a = read_in(vocab, "Which roles are in Italy?", "seat")
    assert constraints(a) == {"location: Italy"}


def test_a_currency_named_by_its_country_and_name():
    vocab = ScopeVocabulary({"currency": ["DKK", "NOK", "SEK"]})
    a = read_in(vocab, "Which jobs pay in Danish kroner?")
    assert constraints(a) == {"currency: DKK"}


def test_an_exact_count_of_openings_is_a_bound_on_the_headcount():
    vocab = ScopeVocabulary({"headcount": ["1", "2"], "title": ["Buyer"]})
    for question in (
        "How many searches are for a single opening?",
        "Which roles are for one hire?",
    ):
        a = read_in(vocab, question)
        assert constraints(a) == {"headcount: exactly 1"}, question


def test_countries_asked_for_are_the_places_by_country():
    vocab = ScopeVocabulary({"location": ["Roma, Italia", "Milan"]})
    a = read_in(vocab, "Which country has the most searches?", "seat")
    assert (a.form, a.asked_key) == ("distribution", "country")


def test_a_part_of_a_title_naming_its_head_names_the_title():
    vocab = ScopeVocabulary({"title": ["Head of Data & Analytics", "Data Engineer"]})
    a = read_in(vocab, "Who manages the head of data hire?", "seat")
    assert constraints(a) == {"title: Head of Data & Analytics"}


@pytest.mark.parametrize(
    "question",
    ["What made us switch this role to remote?", "What led to the move to Leeds?", "How come "
     "the band went up?"],
)  # fmt: skip
def test_a_why_asked_in_other_words_asks_for_the_cause_of_a_change(question):
    a = read(question, "project:p1")
    assert (a.form, a.asked_key) == ("why", None), question


@pytest.mark.parametrize(
    "question,said",
    [
        ("Which searches have a band that starts at £60k or higher?", "at least 60000 GBP"),
        ("Which roles have a minimum salary of at least 50k?", "at least 50000"),
        ("Which searches start above €70,000?", "above 70000 EUR"),
    ],
)
def test_a_bound_on_where_the_pay_starts_bounds_the_low_end_in_its_currency(question, said):
    from hltm_resources.engines.understanding import LOW_END, amount_bound

    vocab = ScopeVocabulary({"salary_range": ["£55-65k"], "currency": ["GBP", "EUR"]})
    a = read_in(vocab, question)
    assert constraints(a) == {f"salary_range: {LOW_END} {said}"}, question
    assert amount_bound(a.constraints[0].value).low


def test_a_pay_bound_in_pounds_compares_only_bands_in_pounds():
    from hltm_resources.engines.understanding import Bound
    from query.verification import LeafFacts, _within

    def leaf(pay, currency):
        return LeafFacts([], {"salary_range": [pay], "currency": [currency]}, [])

    at_least_60k = Bound(">=", 60000, low=True, currency="GBP")
    assert _within(leaf("£62,000 - £70,000", "GBP"), "salary_range", at_least_60k)
    assert not _within(leaf("£55,000 - £70,000", "GBP"), "salary_range", at_least_60k)
    assert not _within(leaf("EUR 65,000 - 75,000", "EUR"), "salary_range", at_least_60k)
    assert _within(leaf("65,000 - 75,000", "GBP"), "salary_range", at_least_60k)


def test_what_a_named_role_pays_asks_for_its_pay_and_names_the_role():
    vocab = ScopeVocabulary({"title": ["Pharmacy Technician", "Hospital Pharmacist"]})
    a = read_in(vocab, "What does the pharmacy technician job pay?", "seat")
    assert (a.form, a.asked_key, constraints(a)) == (
        "fact",
        "salary_range",
        {"title: Pharmacy Technician"},
    )


def test_who_as_hiring_manager_asks_for_the_manager_whatever_else_its_words_name():
    vocab = ScopeVocabulary({"title": ["Emergency Nurse"], "department": ["ZNA"]})
    question = "Who do I go to as hiring manager for the emergency department nurses?"
    a = read_in(vocab, question, "seat")
    assert a.asked_key == "hiring_manager"
