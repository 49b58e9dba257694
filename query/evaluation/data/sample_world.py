"""A deterministic recruiting world: accounts, recruiters with latent preferences, projects.

Each project's documents mix a structured requisition export (the account's ATS decides the
format: flat JSON, nested JSON or "Key: value" lines), a prose brief and candidate feedback
notes. The generator keeps the latent truth of every project, so gold answers (top values per
scope, the exact set of matching projects, leakage probes) are computed from it, not from what
any engine extracted.

Two varieties. ``plain`` worlds (the library default) phrase everything one way, the way the
extractive engine reads it. ``adversarial`` worlds (the CLI default) draw every surface choice
from phrasing banks split into a ``dev`` half and a ``heldout`` half
(:mod:`query.evaluation.data.phrasing`): eight ATS export schemas with unfamiliar key names,
values stated only in the brief or only in a feedback note, distractors, negations and typos.
For a seed, all three (plain, dev, held-out) share the same latent truth, so the same gold: only
the documents and the questions' wording differ. Tune on dev, report on held-out.
"""

from __future__ import annotations

import copy
import json
import random
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from hltm_resources.text import join_human
from query.evaluation.data import phrasing as ph
from query.evaluation.data.phrasing import ExportView, article, city

DOMAINS: dict[str, dict[str, list[str]]] = {
    "tech": {
        "Data Engineer": ["Python", "Spark", "Airflow", "SQL", "dbt", "Kafka", "AWS", "Snowflake"],
        "Backend Engineer": [
            "Go",
            "Java",
            "PostgreSQL",
            "Kubernetes",
            "gRPC",
            "AWS",
            "Redis",
            "Microservices",
        ],
        "Machine Learning Engineer": [
            "Python",
            "PyTorch",
            "MLOps",
            "Kubernetes",
            "TensorFlow",
            "Feature Stores",
            "SQL",
            "Ray",
        ],
        "Frontend Engineer": [
            "TypeScript",
            "React",
            "CSS",
            "GraphQL",
            "Next.js",
            "Accessibility",
            "Jest",
            "Figma",
        ],
        "Site Reliability Engineer": [
            "Kubernetes",
            "Terraform",
            "Prometheus",
            "Linux",
            "Go",
            "AWS",
            "Incident Management",
            "Ansible",
        ],
        "Product Manager": [
            "Roadmapping",
            "SQL",
            "A/B Testing",
            "Stakeholder Management",
            "Jira",
            "User Research",
            "Analytics",
            "Agile",
        ],
    },
    "health": {
        "Clinical Data Analyst": [
            "SQL",
            "SAS",
            "R",
            "CDISC",
            "Tableau",
            "Python",
            "GCP",
            "Data Cleaning",
        ],
        "Registered Nurse": [
            "Patient Care",
            "BLS Certification",
            "Epic EHR",
            "Triage",
            "Medication Administration",
            "ICU Experience",
            "Charting",
            "Wound Care",
        ],
        "Biostatistician": [
            "R",
            "SAS",
            "Survival Analysis",
            "Clinical Trials",
            "Python",
            "Bayesian Methods",
            "CDISC",
            "Mixed Models",
        ],
        "Healthcare IT Specialist": [
            "HL7",
            "FHIR",
            "Epic EHR",
            "SQL",
            "Active Directory",
            "ITIL",
            "Networking",
            "Windows Server",
        ],
        "Medical Science Liaison": [
            "Oncology",
            "Scientific Communication",
            "KOL Management",
            "Clinical Trials",
            "CRM",
            "Presentation Skills",
            "Pharmacology",
            "Medical Writing",
        ],
    },
    "retail": {
        "Store Manager": [
            "Team Leadership",
            "Merchandising",
            "P&L Management",
            "Scheduling",
            "Inventory Control",
            "Customer Service",
            "Loss Prevention",
            "Retail POS",
        ],
        "Supply Chain Analyst": [
            "Excel",
            "SQL",
            "SAP",
            "Demand Forecasting",
            "Tableau",
            "Inventory Optimization",
            "Python",
            "Logistics",
        ],
        "E-commerce Marketing Manager": [
            "SEO",
            "Google Analytics",
            "Paid Social",
            "Email Marketing",
            "Shopify",
            "A/B Testing",
            "Copywriting",
            "CRM",
        ],
        "Merchandise Planner": [
            "Excel",
            "Assortment Planning",
            "Open-to-Buy",
            "SAP",
            "Forecasting",
            "Vendor Management",
            "Tableau",
            "Retail Math",
        ],
        "Warehouse Operations Lead": [
            "Forklift Certification",
            "WMS",
            "Lean",
            "Safety Compliance",
            "Team Leadership",
            "Inventory Control",
            "Scheduling",
            "Freight Receiving",
        ],
    },
}
LOCATIONS = [
    "Dublin, Ireland",
    "Lisbon, Portugal",
    "Berlin, Germany",
    "Amsterdam, Netherlands",
    "London, United Kingdom",
    "Toronto, Canada",
    "Austin, Texas",
    "Seattle, Washington",
    "New York, New York",
    "Madrid, Spain",
    "Warsaw, Poland",
    "Singapore",
]
WORKPLACES = ["remote", "hybrid", "on-site"]
SENIORITIES = ["Junior", "Mid-level", "Senior", "Staff", "Lead"]
REJECTION_REASONS = [
    "salary expectations too high",
    "insufficient hands-on experience",
    "weak system design skills",
    "no visa sponsorship available",
    "notice period too long",
    "poor communication in interviews",
    "lacked stakeholder management experience",
    "not willing to relocate",
    "culture add concerns",
    "failed the technical assessment",
    "overqualified for the level",
    "accepted a competing offer",
]
FIRST = [
    "Aoife",
    "Bruno",
    "Chen",
    "Dara",
    "Elif",
    "Farah",
    "Goran",
    "Hana",
    "Ines",
    "Jonas",
    "Kaito",
    "Lena",
    "Mateo",
    "Nadia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tariq",
    "Uma",
    "Viktor",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zofia",
]
LAST = [
    "Byrne",
    "Costa",
    "Dubois",
    "Eriksen",
    "Fischer",
    "Garcia",
    "Haddad",
    "Ivanova",
    "Jansen",
    "Kowalski",
    "Larsen",
    "Moreau",
    "Novak",
    "Okafor",
    "Petrov",
    "Quigley",
    "Rossi",
    "Silva",
    "Tanaka",
    "Ueda",
    "Varga",
    "Walsh",
    "Yilmaz",
    "Zhang",
]
ADJ = [
    "amber",
    "brisk",
    "cobalt",
    "dapper",
    "ember",
    "frosty",
    "gilded",
    "hazel",
    "ivory",
    "jade",
    "keen",
    "lunar",
    "mellow",
    "nimble",
    "onyx",
    "plucky",
    "quartz",
    "rustic",
    "sable",
    "tidal",
]
NOUN = [
    "falcon",
    "harbor",
    "lantern",
    "meadow",
    "orchid",
    "pebble",
    "quill",
    "raven",
    "summit",
    "thicket",
    "violet",
    "willow",
    "yonder",
    "zephyr",
    "beacon",
    "cinder",
    "delta",
    "fjord",
]
ACCOUNTS = [
    ("northwind", "Northwind Analytics", "tech", "flat_json"),
    ("bluefin", "Bluefin Health", "health", "nested_json"),
    ("copperleaf", "Copperleaf Retail", "retail", "kv_lines"),
    ("driftwood", "Driftwood Labs", "tech", "kv_lines"),
    ("evergreen", "Evergreen Care", "health", "flat_json"),
    ("foxglove", "Foxglove Stores", "retail", "nested_json"),
]


@dataclass(frozen=True)
class ProjectTruth:
    """What a project really is; its documents state exactly this."""

    project_id: str
    seat_id: str
    account_id: str
    title: str
    seniority: str
    location: str
    workplace_type: str
    skills: tuple[str, ...]
    rejection_reasons: tuple[str, ...]
    codename: str


#: The snapshot files of the default tree, by row list of :class:`World`.
SNAPSHOT_FILES = ("accounts", "seats", "projects", "documents")


@dataclass
class World:
    """SOT rows plus the latent truth behind them."""

    accounts: list[dict] = field(default_factory=list)
    seats: list[dict] = field(default_factory=list)
    projects: list[dict] = field(default_factory=list)
    documents: list[dict] = field(default_factory=list)
    truth: dict[str, ProjectTruth] = field(default_factory=dict)
    styles: dict[str, str] = field(default_factory=dict)
    prefs: dict[str, dict] = field(default_factory=dict)
    seed: int = 0
    #: Which half of the phrasing banks an adversarial world uses ("dev" or "heldout").
    split: str = "dev"
    #: "plain" (one phrasing, what the engine reads) or "adversarial" (phrasing banks).
    variety: str = "plain"
    #: Adversarial worlds: per project, what the generator hid, negated, distracted, misspelt.
    annotations: dict[str, dict] = field(default_factory=dict)
    #: Per project whose location changed, the location an earlier requisition gave (dated
    #: a year before the project's other documents).
    superseded: dict[str, str] = field(default_factory=dict)

    def seat_account(self) -> dict[str, str]:
        return {s["seat_id"]: s["account_id"] for s in self.seats}

    def counts(self) -> dict[str, int]:
        """Rows per snapshot file (without ``.jsonl``)."""
        return {name: len(getattr(self, name)) for name in SNAPSHOT_FILES}


def _weighted(rng: random.Random, items: list[str], weights: list[float]) -> str:
    return rng.choices(items, weights=weights, k=1)[0]


def _preferences(rng: random.Random, domain: str) -> dict:
    titles = rng.sample(sorted(DOMAINS[domain]), k=3)
    locations = rng.sample(LOCATIONS, k=3)
    reasons = rng.sample(REJECTION_REASONS, k=6)
    return {
        "titles": titles,
        "title_w": [0.6, 0.3, 0.1],
        "locations": locations,
        "location_w": [0.7, 0.24, 0.06],
        "workplace_w": rng.choice([[0.1, 0.75, 0.15], [0.7, 0.2, 0.1], [0.1, 0.2, 0.7]]),
        "seniority_w": rng.choice(
            [[0.1, 0.3, 0.45, 0.1, 0.05], [0.3, 0.45, 0.2, 0.0, 0.05], [0.0, 0.2, 0.45, 0.25, 0.1]]
        ),
        "reasons": reasons,
        "reason_w": [0.35, 0.25, 0.15, 0.1, 0.1, 0.05],
    }


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _requisition(style: str, t: ProjectTruth, rng: random.Random) -> str:
    if style == "flat_json":
        obj = {
            "req_id": f"R-{t.project_id}",
            "job_title": t.title,
            "seniority_level": t.seniority,
            "office_location": t.location,
            "workplace": t.workplace_type,
            "required_skills": list(t.skills),
            "employment_type": "Full-time",
            "hiring_manager": _person(rng),
        }
        return json.dumps(obj)
    if style == "nested_json":
        obj = {
            "id": f"lev-{t.project_id}",
            "posting": {
                "text": t.title,
                "categories": {
                    "location": t.location,
                    "commitment": "Full-time",
                    "level": t.seniority,
                },
                "workplaceType": t.workplace_type,
            },
            "requirements": {"skills": list(t.skills)},
            "owner": {"name": _person(rng)},
        }
        return json.dumps(obj)
    workplace = {"remote": "Remote", "hybrid": "Hybrid", "on-site": "On-site"}[t.workplace_type]
    return "\n".join(
        [
            f"Job Posting Title: {t.title}",
            f"Management Level: {t.seniority}",
            f"Primary Location: {t.location}",
            f"Remote Type: {workplace}",
            f"Required Skills: {', '.join(t.skills)}",
            "Time Type: Full time",
        ]
    )


_BRIEFS = [
    "We're hiring a {sen} {title} to join our team based in {loc}. The role is {wp}. "
    "Must-have skills: {skills}. {code}",
    "Looking for a {sen} {title} located in {loc}; this position is {wp}. "
    "Required skills: {skills}. {code} The hiring manager wants a shortlist within two weeks.",
    "Kickoff notes: the team needs a {sen} {title}. The role is in {loc} and is {wp}. "
    "Candidates need experience with {skills}. {code}",
]


def _brief(t: ProjectTruth, rng: random.Random) -> str:
    wp = {"remote": "fully remote", "hybrid": "hybrid", "on-site": "on-site"}[t.workplace_type]
    template = rng.choice(_BRIEFS)
    return template.format(
        sen=t.seniority.lower(),
        title=t.title,
        loc=t.location,
        wp=wp,
        skills=join_human(list(t.skills)),
        code=f"Internal code name: {t.codename}.",
    )


def _feedback(t: ProjectTruth, reason: str | None, rng: random.Random) -> str:
    name = _person(rng)
    if reason is None:
        skill = rng.choice(t.skills)
        return rng.choice(
            [
                f"Candidate: {name}\nStage: Onsite\nDecision: Advanced\n"
                f"Notes: strong {skill} depth",
                f"Debrief for {name}: strong {skill} background, moving to the final round.",
            ]
        )
    return rng.choice(
        [
            f"Candidate: {name}\nStage: Phone screen\nDecision: Rejected\nReason: {reason}",
            f"Debrief for {name}: we decided not to move forward because of {reason}.",
            f"Interview feedback for {name}. Rejected due to {reason}.",
        ]
    )


def _account_row(account_id: str) -> tuple[str, str, str, str]:
    """The :data:`ACCOUNTS` row an account id was made from (``northwind-0`` -> northwind)."""
    return next(a for a in ACCOUNTS if a[0] == account_id.rsplit("-", 1)[0])


def _plain_documents(
    rng: random.Random, truth: ProjectTruth, style: str, date: str
) -> tuple[list[tuple[str, str, str]], str | None, int]:
    """A project's plain documents (kind, text, updated_at); the superseded location, if any,
    and how many advance notes it has."""
    docs = []
    old_location = None
    if rng.random() < SUPERSEDED_SHARE:
        # An earlier version of the requisition, since superseded (the location changed): a
        # reader that trusts every document equally gets this project wrong.
        old = replace(truth, location=rng.choice([x for x in LOCATIONS if x != truth.location]))
        old_location = old.location
        docs.append(("requisition", _requisition(style, old, rng), _earlier(date)))
    docs += [
        ("requisition", _requisition(style, truth, rng), date),
        ("brief", _brief(truth, rng), date),
    ]
    notes = [_feedback(truth, r, rng) for r in truth.rejection_reasons]
    n_advance = rng.randint(0, 2)
    notes += [_feedback(truth, None, rng) for _ in range(n_advance)]
    rng.shuffle(notes)
    docs += [("feedback", n, date) for n in notes]
    return docs, old_location, n_advance


# -- adversarial worlds ----------------------------------------------------------------------

#: Share of projects whose export comes from the account's other ATS (a migration).
MIGRATED_SHARE = 0.15
#: Share of projects whose export leaves out the location, the workplace type and/or one skill,
#: which only the brief then states.
PROSE_ONLY_SHARE = 0.25
#: Share of projects with one required skill stated only in a feedback note.
FEEDBACK_ONLY_SHARE = 0.20
#: Share of value mentions in prose (of values the export also states) with one typo.
TYPO_SHARE = 0.05
#: Share of briefs with an explicit negation ("this role is not remote").
NEGATION_SHARE = 0.30
#: Share of briefs, and of feedback notes, with a distractor (another city, skill or title).
BRIEF_DISTRACTOR_SHARE = 0.35
NOTE_DISTRACTOR_SHARE = 0.20
#: Chance that a brief restates a value the export already states.
RESTATE_SHARE = 0.6
#: Share of feedback notes written as "Key: value" blocks, and with the candidate's name.
BLOCK_SHARE = 0.4
NAMED_SHARE = 0.75


def _sibling_schema(name: str) -> str:
    """The account's other ATS: the next schema of the same half."""
    half = ph.SCHEMAS[ph.SCHEMA_BY_NAME[name].split]
    names = [s.name for s in half]
    return names[(names.index(name) + 1) % len(names)]


class _Writer:
    """Writes one adversarial project's documents from one half of the phrasing banks."""

    def __init__(self, world: World, truth: ProjectTruth, salt: str = ""):
        self.r = random.Random(f"{world.seed}/{world.split}/{truth.project_id}{salt}")
        self.split = world.split
        self.t = truth
        self.domain = _account_row(truth.account_id)[2]
        self.ann = world.annotations.setdefault(
            truth.project_id,
            {"schema": "", "hidden": [], "negated": [], "distractors": [], "typos": []},
        )
        self.in_export: set[str] = set()

    # -- values ------------------------------------------------------------------------------
    def say(self, value: str) -> str:
        """A prose mention of a truth value: misspelt now and then if the export states it."""
        if value in self.in_export and self.r.random() < TYPO_SHARE:
            bad = ph.typo(value, self.r)
            if bad != value:
                self.ann["typos"].append({"value": value, "typo": bad})
                return bad
        return value

    def other_city(self, avoid: str | None = None) -> str:
        if avoid and avoid != self.t.location:
            return city(avoid)
        return city(self.r.choice([x for x in LOCATIONS if x != self.t.location]))

    def other_title(self) -> str:
        return self.r.choice(sorted(set(DOMAINS[self.domain]) - {self.t.title}))

    def other_skill(self) -> str:
        return self.r.choice(
            [s for s in DOMAINS[self.domain][self.t.title] if s not in self.t.skills]
        )

    def others(self, template: str, where: str, old_location: str | None = None) -> dict:
        """Fill the distractor slots ``template`` uses, and record them."""
        slots: dict[str, str] = {}
        if "{other_city}" in template:
            slots["other_city"] = self.other_city(old_location)
            self.ann["distractors"].append(
                {"attribute": "location", "value": slots["other_city"], "where": where}
            )
        if "other_title}" in template:
            slots["other_title"] = self.other_title()
            slots["a_other_title"] = f"{article(slots['other_title'])} {slots['other_title']}"
            self.ann["distractors"].append(
                {"attribute": "title", "value": slots["other_title"], "where": where}
            )
        if "{other_skill}" in template:
            slots["other_skill"] = self.other_skill()
            self.ann["distractors"].append(
                {"attribute": "skill", "value": slots["other_skill"], "where": where}
            )
        if "{other_team}" in template:
            slots["other_team"] = self.r.choice(ph.OTHER_TEAMS)
        return slots

    # -- feedback ----------------------------------------------------------------------------
    def _templates(self, bank: dict[str, dict[str, tuple[str, ...]]]) -> tuple[str, ...]:
        named = self.r.random() < NAMED_SHARE
        return bank[self.split]["named" if named else "anonymous"]

    def _with_distractor(self, note: str, reason: str | None) -> str:
        if self.r.random() >= NOTE_DISTRACTOR_SHARE:
            return note
        kinds = ["skill", "title"] + ([] if reason == "not willing to relocate" else ["location"])
        template = self.r.choice(ph.NOTE_DISTRACTORS[self.split][self.r.choice(kinds)])
        sentence = template.format(**self.others(template, "feedback"))
        return note + ("\n" if "\n" in note else " ") + sentence

    def rejection(self, reason: str) -> str:
        """A note rejecting a candidate for ``reason`` (stated verbatim)."""
        slots = {
            "name": _person(self.r),
            "stage": self.r.choice(ph.STAGES[self.split]).lower(),
            "reason": reason,
        }
        named = self.r.random() < NAMED_SHARE
        key = "named" if named else "anonymous"
        if self.r.random() < BLOCK_SHARE:
            slots["stage"] = slots["stage"].capitalize()
            note = self.r.choice(ph.REJECT_BLOCKS[self.split][key]).format(**slots)
        else:
            note = self.r.choice(ph.REJECT_PROSE[self.split][key]).format(**slots)
        return self._with_distractor(note, reason)

    def advance(self) -> str:
        """A note advancing a candidate strong in one of the role's skills."""
        template = self.r.choice(self._templates(ph.ADVANCE_NOTES))
        stage = self.r.choice(ph.STAGES[self.split])
        note = template.format(
            name=_person(self.r),
            stage=stage if "\n" in template else stage.lower(),
            skill=self.say(self.r.choice(self.t.skills)),
        )
        return self._with_distractor(note, None)

    # -- brief -------------------------------------------------------------------------------
    def brief(
        self,
        hidden: set[str],
        export_skills: list[str],
        brief_skill: str | None,
        old_location: str | None,
    ) -> str:
        r, t, split = self.r, self.t, self.split
        sen = t.seniority.lower()
        title = self.say(t.title)
        level = sen if sen.endswith("level") else f"{sen} level"
        opener = r.choice(ph.BRIEF_OPENERS[split]).format(
            a_sen=f"{article(sen)} {sen}",
            sen=sen,
            level=level,
            title=title,
            a_title=f"{article(title)} {title}",
        )
        body: list[str] = []
        if "location" in hidden or r.random() < RESTATE_SHARE:
            fits = [
                tpl
                for tpl, where in ph.BRIEF_LOCATIONS[split]
                if where == "any" or t.workplace_type != "remote"
            ]
            template = r.choice(fits)
            if "{city}" in template:
                sentence = template.format(city=self.say(city(t.location)))
            else:
                sentence = template.format(location=self.say(t.location))
            body.append(sentence)
            if "location" in hidden:
                self._hidden("location", t.location, "brief", sentence)
        if "workplace_type" in hidden or r.random() < RESTATE_SHARE:
            sentence = r.choice(ph.BRIEF_WORKPLACES[split][t.workplace_type])
            body.append(sentence)
            if "workplace_type" in hidden:
                self._hidden("workplace_type", t.workplace_type, "brief", sentence)
        if export_skills and r.random() < RESTATE_SHARE:
            listed = join_human([self.say(s) for s in export_skills])
            body.append(r.choice(ph.BRIEF_SKILLS[split]).format(skills=listed))
        if brief_skill:
            sentence = r.choice(ph.BRIEF_EXTRA_SKILL[split]).format(skill=brief_skill)
            sentence = sentence[:1].upper() + sentence[1:]
            body.append(sentence)
            self._hidden("skill", brief_skill, "brief", sentence)
        if r.random() < NEGATION_SHARE:
            body.append(self._negation(old_location))
        if r.random() < BRIEF_DISTRACTOR_SHARE:
            template = r.choice(ph.BRIEF_DISTRACTORS[split])
            body.append(template.format(**self.others(template, "brief", old_location)))
        if r.random() < 0.5:
            body.append(r.choice(ph.BRIEF_CLOSERS[split]))
        body.append(r.choice(ph.BRIEF_CODES[split]).format(code=t.codename))
        r.shuffle(body)
        sep = r.choice((" ", " ", "\n", "\n- "))
        return opener + sep + sep.join(body)

    def _negation(self, old_location: str | None) -> str:
        r, t = self.r, self.t
        bank = ph.BRIEF_NEGATIONS[self.split]
        kind = r.choice(("workplace_type", "skill", "location", "title"))
        if kind == "workplace_type":
            value = r.choice(ph.NEGATABLE_WORKPLACES[t.workplace_type])
            sentence = r.choice(bank[value])
        elif kind == "skill":
            value = self.other_skill()
            sentence = r.choice(bank["skill"]).format(other_skill=value)
        elif kind == "location":
            value = self.other_city(old_location)
            sentence = r.choice(bank["location"]).format(other_city=value)
        else:
            value = self.other_title()
            sentence = r.choice(bank["title"]).format(
                other_title=value, a_other_title=f"{article(value)} {value}"
            )
        sentence = sentence[:1].upper() + sentence[1:]
        self.ann["negated"].append({"attribute": kind, "value": value, "evidence": sentence})
        return sentence

    def _hidden(self, attribute: str, value: str, where: str, evidence: str) -> None:
        self.ann["hidden"].append(
            {"attribute": attribute, "value": value, "where": where, "evidence": evidence}
        )


def _adversarial_documents(
    world: World, t: ProjectTruth, date: str, old_location: str | None, n_advance: int
) -> list[tuple[str, str, str]]:
    """One project's documents in an adversarial world (what a careful reader concludes from
    all of them together is exactly ``t``)."""
    w = _Writer(world, t)
    r, split = w.r, world.split
    primary = world.styles[t.account_id]
    schema = _sibling_schema(primary) if r.random() < MIGRATED_SHARE else primary
    w.ann["schema"] = schema
    # What the export leaves out; a superseded project keeps its location in the export, so
    # that the newest export and the brief agree on it.
    hidden: set[str] = set()
    brief_skill = feedback_skill = None
    if r.random() < PROSE_ONLY_SHARE:
        options = ["workplace_type", "skill"] + ([] if old_location else ["location"])
        hidden = {o for o in options if r.random() < 0.5} or {r.choice(options)}
        if "skill" in hidden:
            brief_skill = r.choice(t.skills)
    if r.random() < FEEDBACK_ONLY_SHARE:
        feedback_skill = r.choice([s for s in t.skills if s != brief_skill])
    export_skills = [s for s in t.skills if s not in (brief_skill, feedback_skill)]
    r.shuffle(export_skills)
    view = ExportView(
        ref=ph.reference(schema, t.project_id, 1),
        title=t.title,
        seniority=t.seniority,
        location=None if "location" in hidden else t.location,
        workplace_type=None if "workplace_type" in hidden else t.workplace_type,
        skills=tuple(export_skills),
        manager=_person(r),
        blank=r.choice(("omit", "omit", "null", "empty")),
    )
    w.in_export = {t.title, *export_skills}
    if view.location:
        w.in_export |= {t.location, city(t.location)}
    docs = []
    if old_location:
        old = replace(view, ref=ph.reference(schema, t.project_id, 0), location=old_location)
        docs.append(("requisition", ph.render_export(schema, old), _earlier(date)))
    docs.append(("requisition", ph.render_export(schema, view), date))
    docs.append(("brief", w.brief(hidden, export_skills, brief_skill, old_location), date))
    notes = [w.rejection(reason) for reason in t.rejection_reasons]
    notes += [w.advance() for _ in range(n_advance)]
    if feedback_skill:
        asides = ph.FEEDBACK_SKILL_ASIDES[split]
        if n_advance and r.random() < 0.5:
            sentence = r.choice(asides).format(skill=feedback_skill)
            i = len(t.rejection_reasons) + r.randrange(n_advance)
            notes[i] += ("\n" if "\n" in notes[i] else " ") + sentence
        else:
            sentence = r.choice(ph.FEEDBACK_SKILL_NOTES[split]).format(skill=feedback_skill)
            notes.append(sentence)
        w._hidden("skill", feedback_skill, "feedback", sentence)
    r.shuffle(notes)
    docs += [("feedback", n, date) for n in notes]
    return docs


def _project(
    rng: random.Random, world: World, seat_id: str, account_id: str, pid: str, day: int
) -> None:
    prefs = world.prefs[seat_id]
    domain = _account_row(account_id)[2]
    title = _weighted(rng, prefs["titles"], prefs["title_w"])
    pool = DOMAINS[domain][title]
    skills = tuple(sorted(rng.sample(pool[:5], k=2) + rng.sample(pool[5:], k=1)))
    reasons = sorted(
        {_weighted(rng, prefs["reasons"], prefs["reason_w"]) for _ in range(rng.randint(1, 3))}
    )
    truth = ProjectTruth(
        project_id=pid,
        seat_id=seat_id,
        account_id=account_id,
        title=title,
        seniority=_weighted(rng, SENIORITIES, prefs["seniority_w"]),
        location=_weighted(rng, prefs["locations"], prefs["location_w"]),
        workplace_type=_weighted(rng, WORKPLACES, prefs["workplace_w"]),
        skills=skills,
        rejection_reasons=tuple(reasons),
        codename=f"{rng.choice(ADJ)}-{rng.choice(NOUN)}-{rng.randint(100, 999)}",
    )
    world.truth[pid] = truth
    date = f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}"
    world.projects.append(
        {
            "project_id": pid,
            "seat_id": seat_id,
            "name": f"{truth.title} ({truth.location.split(',')[0]}) #{pid[-3:]}",
            "updated_at": date,
        }
    )
    # The plain documents draw from ``rng`` in every variety, so that the truth of the next
    # projects (and so the gold) is the same whatever the variety and split.
    plain_style = (
        world.styles[account_id] if world.variety == "plain" else _account_row(account_id)[3]
    )
    docs, old_location, n_advance = _plain_documents(rng, truth, plain_style, date)
    if old_location:
        world.superseded[pid] = old_location
    if world.variety != "plain":
        docs = _adversarial_documents(world, truth, date, old_location, n_advance)
    for i, (kind, text, updated) in enumerate(docs):
        world.documents.append(
            {
                "doc_id": f"{pid}-d{i}",
                "project_id": pid,
                "kind": kind,
                "text": text,
                "updated_at": updated,
            }
        )


SUPERSEDED_SHARE = 0.12


def _earlier(date: str) -> str:
    year, month, day = (int(x) for x in date.split("-"))
    return f"{year - 1}-{month:02d}-{day:02d}"


def generate_world(
    seed: int = 7,
    accounts: int = 3,
    seats_per_account: int = 4,
    projects_per_seat: tuple[int, int] = (8, 14),
    split: str = "dev",
    variety: str = "plain",
) -> World:
    """A world of ``accounts`` x ``seats_per_account`` recruiters; same seed, same world.

    ``variety="plain"`` writes today's documents (``split`` is then ignored);
    ``"adversarial"`` writes them from the ``split`` half ("dev" or "heldout") of the phrasing
    banks. The latent truth, and so the gold, depends on the seed and sizes only.
    """
    if split not in ph.SPLITS:
        raise ValueError(f"split must be one of {ph.SPLITS}, not {split!r}")
    if variety not in ph.VARIETIES:
        raise ValueError(f"variety must be one of {ph.VARIETIES}, not {variety!r}")
    rng = random.Random(seed)
    world = World(seed=seed, split=split, variety=variety)
    schemas = [s.name for s in ph.SCHEMAS[split]]
    # Its own generator: choosing the schemas must not move the truth's random stream.
    random.Random(f"{seed}/{split}/ats").shuffle(schemas)
    n_project = 0
    for a in range(accounts):
        key, name, domain, style = ACCOUNTS[a % len(ACCOUNTS)]
        account_id = f"{key}-{a // len(ACCOUNTS)}" if a >= len(ACCOUNTS) else f"{key}-0"
        world.accounts.append(
            {"account_id": account_id, "name": name if a < len(ACCOUNTS) else f"{name} {a}"}
        )
        world.styles[account_id] = style if variety == "plain" else schemas[a % len(schemas)]
        for s in range(seats_per_account):
            seat_id = f"{account_id}-r{s + 1:02d}"
            world.seats.append({"seat_id": seat_id, "account_id": account_id, "name": _person(rng)})
            world.prefs[seat_id] = _preferences(rng, domain)
            for _ in range(rng.randint(*projects_per_seat)):
                n_project += 1
                _project(rng, world, seat_id, account_id, f"p{n_project:05d}", rng.randint(0, 300))
    return world


def write_snapshot(world: World, directory: str | Path) -> Path:
    """Write the four JSONL files of the SOT contract."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name in SNAPSHOT_FILES:
        rows = getattr(world, name)
        with (directory / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return directory


#: Shares of the leaves held by the few very large accounts of :func:`stream_snapshot` (one
#: large customer alone can hold 30k of 100k projects); the rest are accounts of 100-800.
LARGE_ACCOUNT_SHARES = (0.30, 0.12, 0.06)


def _account_sizes(rng: random.Random, leaves: int) -> list[int]:
    sizes = [int(leaves * share) for share in LARGE_ACCOUNT_SHARES if leaves * share >= 1]
    rest = leaves - sum(sizes)
    while rest > 0:
        size = min(rest, rng.randint(100, 800))
        sizes.append(size)
        rest -= size
    return sizes


def stream_snapshot(
    directory: str | Path,
    leaves: int,
    seed: int = 17,
    projects_per_seat: tuple[int, int] = (20, 36),
    variety: str = "adversarial",
    split: str = "dev",
) -> dict[str, int]:
    """Write a snapshot of exactly ``leaves`` projects without holding the world in memory.

    The tree has a few very large accounts (:data:`LARGE_ACCOUNT_SHARES` of the leaves) and
    many small ones; each seat's rows are written as soon as they are made, so generating
    100k projects takes seconds and little memory. Returns the rows written per file. (No
    latent truth is kept: this feeds speed benchmarks, not evaluations.)
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    world = World(seed=seed, split=split, variety=variety)
    schemas = [s.name for s in ph.SCHEMAS[split]]
    counts = dict.fromkeys(SNAPSHOT_FILES, 0)
    files = {name: (directory / f"{name}.jsonl").open("w", encoding="utf-8") for name in counts}

    def flush() -> None:
        for name in SNAPSHOT_FILES:
            rows = getattr(world, name)
            files[name].writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            counts[name] += len(rows)
            rows.clear()
        world.truth.clear()
        world.prefs.clear()
        world.annotations.clear()

    try:
        n_project = 0
        for a, size in enumerate(_account_sizes(rng, leaves)):
            key, name, domain, style = ACCOUNTS[a % len(ACCOUNTS)]
            account_id = f"{key}-{a // len(ACCOUNTS)}"
            world.accounts.append({"account_id": account_id, "name": f"{name} {a}"})
            world.styles[account_id] = style if variety == "plain" else schemas[a % len(schemas)]
            seat = 0
            while size > 0:
                seat += 1
                seat_id = f"{account_id}-r{seat:04d}"
                world.seats.append(
                    {"seat_id": seat_id, "account_id": account_id, "name": _person(rng)}
                )
                world.prefs[seat_id] = _preferences(rng, domain)
                for _ in range(min(size, rng.randint(*projects_per_seat))):
                    n_project += 1
                    size -= 1
                    _project(
                        rng, world, seat_id, account_id, f"p{n_project:06d}", rng.randint(0, 300)
                    )
                flush()
    finally:
        for fh in files.values():
            fh.close()
    return counts


def evolve(
    world: World, seed: int, edit: float = 0.08, delete: float = 0.04, add: float = 0.06
) -> tuple[World, dict[str, list[str]]]:
    """The next snapshot: some projects edited (a new feedback note), deleted, or added."""
    rng = random.Random(seed)
    new = World(
        list(world.accounts),
        list(world.seats),
        [],
        [],
        {},
        dict(world.styles),
        dict(world.prefs),
        seed,
        world.split,
        world.variety,
    )
    ids = sorted(world.truth)
    n = len(ids)
    deleted = set(rng.sample(ids, k=round(n * delete)))
    edited = set(rng.sample(sorted(set(ids) - deleted), k=round(n * edit)))
    for p in world.projects:
        if p["project_id"] not in deleted:
            new.projects.append(dict(p))
            new.truth[p["project_id"]] = world.truth[p["project_id"]]
            if p["project_id"] in world.annotations:
                new.annotations[p["project_id"]] = copy.deepcopy(world.annotations[p["project_id"]])
    for d in world.documents:
        if d["project_id"] not in deleted:
            new.documents.append(dict(d))
    for pid in sorted(edited):
        truth = new.truth[pid]
        reason = _weighted(
            rng, world.prefs[truth.seat_id]["reasons"], world.prefs[truth.seat_id]["reason_w"]
        )
        n_docs = sum(1 for d in new.documents if d["project_id"] == pid)
        text = _feedback(truth, reason, rng)  # drawn in every variety: same stream
        if new.variety != "plain":
            text = _Writer(new, truth, "/edit").rejection(reason)
        new.documents.append(
            {
                "doc_id": f"{pid}-d{n_docs}",
                "project_id": pid,
                "kind": "feedback",
                "text": text,
                "updated_at": "2026-12-01",
            }
        )
        if reason not in truth.rejection_reasons:
            new.truth[pid] = replace(
                truth, rejection_reasons=tuple(sorted(truth.rejection_reasons + (reason,)))
            )
    top = max(int(p[1:]) for p in ids)
    seat_account = world.seat_account()
    added = []
    for i in range(round(n * add)):
        seat_id = rng.choice([s["seat_id"] for s in world.seats])
        pid = f"p{top + i + 1:05d}"
        _project(rng, new, seat_id, seat_account[seat_id], pid, rng.randint(300, 330))
        added.append(pid)
    return new, {"edited": sorted(edited), "deleted": sorted(deleted), "added": added}


# -- gold ------------------------------------------------------------------------------------

ATTRIBUTES = ("title", "location", "workplace_type", "seniority", "skill", "rejection_reason")


def _values(t: ProjectTruth, attribute: str) -> tuple[str, ...]:
    if attribute == "skill":
        return t.skills
    if attribute == "rejection_reason":
        return t.rejection_reasons
    return (getattr(t, attribute),)


def scope_projects(world: World, scope: str) -> list[ProjectTruth]:
    """The projects under a scope node id."""
    level, raw = scope.split(":", 1)
    field_ = {"account": "account_id", "seat": "seat_id", "project": "project_id"}[level]
    return [t for t in world.truth.values() if getattr(t, field_) == raw]


def value_counts(world: World, scope: str, attribute: str) -> Counter:
    """How many projects under ``scope`` have each value of ``attribute``."""
    counts: Counter = Counter()
    for t in scope_projects(world, scope):
        counts.update(set(_values(t, attribute)))
    return counts


def demo_questions(world: World) -> list[tuple[str, str]]:
    """A handful of summary- and retrieval-style questions at seat and account scope."""
    seat = world.seats[0]["seat_id"]
    account = world.accounts[0]["account_id"]
    mine = scope_projects(world, f"seat:{seat}")
    t = mine[0]
    reason = value_counts(world, f"seat:{seat}", "rejection_reason").most_common(1)[0][0]
    skill = value_counts(world, f"account:{account}", "skill").most_common(1)[0][0]
    return [
        (f"seat:{seat}", "What roles does this recruiter hire for most often?"),
        (f"seat:{seat}", "Where are the jobs usually located?"),
        (f"seat:{seat}", "What are the most common rejection reasons?"),
        (f"seat:{seat}", f"Which of my searches were for {t.title} roles in {t.location}?"),
        (f"seat:{seat}", f"In which searches did we reject someone because of {reason}?"),
        (f"account:{account}", "Are the roles usually remote, hybrid or on-site?"),
        (f"account:{account}", f"Which openings required {skill}?"),
    ]


# -- benchmark queries -----------------------------------------------------------------------

#: Today's summary questions, per attribute (what ``variety="plain"`` asks).
_SUMMARY_QUESTIONS = {attribute: bank[0] for attribute, bank in ph.PLAIN_SUMMARIES.items()}


class _Phrasing:
    """Picks each question's wording: today's for plain worlds, else from the world's half of
    the question banks with its own generator (so the sampled values, drawn from the queries'
    generator, are the same whatever the variety)."""

    def __init__(self, world: World, seed: int):
        self.plain = world.variety == "plain"
        self.split = world.split
        self.rng = random.Random(f"{seed}/{world.split}/questions")

    def question(self, family: str) -> str:
        if self.plain:
            return ph.PLAIN_QUESTIONS[family][0]
        return self.rng.choice(ph.QUESTIONS[self.split][family])

    def summary(self, attribute: str) -> str:
        if self.plain:
            return ph.PLAIN_SUMMARIES[attribute][0]
        return self.rng.choice(ph.SUMMARIES[self.split][attribute])

    def row(self, row: dict, family: str) -> dict:
        """Adversarial rows also name their family and split (plain rows stay as they were)."""
        if not self.plain:
            row["family"] = family
            row["split"] = self.split
        return row


def _gold_distribution(counts: Counter, total: int, limit: int = 3) -> tuple[str, list[str]]:
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    top = ranked[0][1]
    entities = [v for v, c in ranked if c == top or (c >= 2 and c >= top / 2)][:limit]
    answer = "; ".join(f"{v} ({c} of {total} projects)" for v, c in ranked[:limit])
    return answer, entities


def make_queries(world: World, seed: int = 0, per_scope: int = 2) -> list[dict]:
    """Benchmark queries with gold from the latent truth, at every seat and account scope.

    Summary-style: top values with counts. Retrieval-style: the exact set of matching projects.
    Leakage probes: a title or skill that exists only outside the scope (gold: none).
    Adversarial worlds word the questions from their split's half of the question banks; the
    sampled values and the gold are the same as for the plain world of the same seed.
    """
    rng = random.Random(seed)
    phr = _Phrasing(world, seed)
    scopes = [f"seat:{s['seat_id']}" for s in world.seats]
    scopes += [f"account:{a['account_id']}" for a in world.accounts]
    all_titles = {t.title for t in world.truth.values()}
    all_skills = {s for t in world.truth.values() for s in t.skills}
    rows: list[dict] = []
    for scope in scopes:
        projects = sorted(scope_projects(world, scope), key=lambda t: t.project_id)
        if not projects:
            continue
        # Every family draws from ``rng`` in turn: keep this order, the queries depend on it.
        rows += _summary_queries(world, scope, projects, phr)
        rows += _title_location_queries(rng, scope, projects, per_scope, phr)
        rows += _value_queries(rng, scope, projects, per_scope, "skill", phr)
        rows += _value_queries(rng, scope, projects, per_scope, "rejection_reason", phr)
        rows += _title_reason_queries(rng, scope, projects, phr)
        rows += _leakage_probes(rng, scope, projects, all_titles, all_skills, phr)
    return [{"query_id": f"q{i:04d}", **row} for i, row in enumerate(rows, start=1)]


def _query(
    scope: str,
    kind: str,
    question: str,
    answer: str,
    refs: list[str],
    entities: list[str],
    template: str,
    probe: bool = False,
) -> dict:
    """One benchmark query row without its ``query_id``."""
    return {
        "scope": scope,
        "question": question,
        "type": kind,
        "gold_answer": answer,
        "gold_references": refs,
        "gold_entities": entities,
        "template": template,
        "probe": probe,
    }


def _retrieval(
    scope: str, question: str, refs: list[str], entities: list[str], template: str
) -> dict:
    """A retrieval query row whose gold is the exact set of matching projects."""
    return _query(scope, "retrieval", question, f"{len(refs)} projects", refs, entities, template)


def _summary_queries(
    world: World, scope: str, projects: list[ProjectTruth], phr: _Phrasing
) -> list[dict]:
    """One summary query per attribute of ``_SUMMARY_QUESTIONS``: top values with counts."""
    who = "recruiter" if scope.startswith("seat:") else "organization"
    rows = []
    for attribute in _SUMMARY_QUESTIONS:
        template = phr.summary(attribute)
        answer, entities = _gold_distribution(value_counts(world, scope, attribute), len(projects))
        row = _query(
            scope, "summary", template.format(who=who), answer, [scope], entities, template
        )
        rows.append(phr.row(row, f"summary_{attribute}"))
    return rows


def _title_location_queries(
    rng: random.Random,
    scope: str,
    projects: list[ProjectTruth],
    per_scope: int,
    phr: _Phrasing,
) -> list[dict]:
    """Retrievals of projects with a sampled title in a sampled location of the scope."""
    pairs = sorted({(t.title, t.location) for t in projects})
    rows = []
    for title, location in rng.sample(pairs, k=min(per_scope, len(pairs))):
        refs = [
            f"project:{t.project_id}"
            for t in projects
            if t.title == title and t.location == location
        ]
        template = phr.question("title_location")
        question = ph.fill(template, title=title, location=location)
        row = _retrieval(scope, question, refs, [title, location], ph.slot_form(template))
        rows.append(phr.row(row, "title_location"))
    return rows


def _value_queries(
    rng: random.Random,
    scope: str,
    projects: list[ProjectTruth],
    per_scope: int,
    attribute: str,
    phr: _Phrasing,
) -> list[dict]:
    """Retrievals of the projects that have a sampled value of a multi-valued attribute
    (``skill`` or ``rejection_reason``, also the name of the question family)."""
    values = sorted({v for t in projects for v in _values(t, attribute)})
    rows = []
    for value in rng.sample(values, k=min(per_scope, len(values))):
        refs = [f"project:{t.project_id}" for t in projects if value in _values(t, attribute)]
        template = phr.question(attribute)
        question = ph.fill(template, **{attribute: value})
        row = _retrieval(scope, question, refs, [value], ph.slot_form(template))
        rows.append(phr.row(row, attribute))
    return rows


def _title_reason_queries(
    rng: random.Random, scope: str, projects: list[ProjectTruth], phr: _Phrasing
) -> list[dict]:
    """At most one retrieval of projects with a sampled title and rejection reason."""
    combos = sorted({(t.title, r) for t in projects for r in t.rejection_reasons})
    rows = []
    for title, reason in rng.sample(combos, k=min(1, len(combos))):
        refs = [
            f"project:{t.project_id}"
            for t in projects
            if t.title == title and reason in t.rejection_reasons
        ]
        template = phr.question("title_reason")
        question = ph.fill(template, title=title, rejection_reason=reason)
        row = _retrieval(scope, question, refs, [title, reason], ph.slot_form(template))
        rows.append(phr.row(row, "title_reason"))
    return rows


def _leakage_probes(
    rng: random.Random,
    scope: str,
    projects: list[ProjectTruth],
    all_titles: set[str],
    all_skills: set[str],
    phr: _Phrasing,
) -> list[dict]:
    """Probes for a title and a skill found only outside the scope (gold: none in scope)."""
    rows = []
    foreign = {
        "title": sorted(all_titles - {t.title for t in projects}),
        "skill": sorted(all_skills - {s for t in projects for s in t.skills}),
    }
    for key, values in foreign.items():  # the rng draws a title, then a skill
        if not values:
            continue
        value = rng.choice(values)
        template = phr.question(key)
        question = ph.fill(template, **{key: value})
        row = _query(
            scope,
            "retrieval",
            question,
            "None in scope.",
            [],
            [],
            ph.slot_form(template),
            probe=True,
        )
        rows.append(phr.row(row, f"probe_{key}"))
    return rows


def write_queries(queries: list[dict], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), encoding="utf-8"
    )
    return path
