"""A deterministic recruiting world: accounts, recruiters with latent preferences, projects.

Each project's documents mix a structured requisition export (the account's ATS decides the
format: flat JSON, nested JSON or "Key: value" lines), a prose brief and candidate feedback
notes. The generator keeps the latent truth of every project, so gold answers (top values per
scope, the exact set of matching projects, leakage probes) are computed from it, not from what
any engine extracted.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from hltm_resources.text import join_human

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


def _project(
    rng: random.Random, world: World, seat_id: str, account_id: str, pid: str, day: int
) -> None:
    prefs = world.prefs[seat_id]
    domain = next(a[2] for a in ACCOUNTS if a[0] == account_id.rsplit("-", 1)[0])
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
    style = world.styles[account_id]
    docs = []
    if rng.random() < SUPERSEDED_SHARE:
        # An earlier version of the requisition, since superseded (the location changed): a
        # reader that trusts every document equally gets this project wrong.
        old = replace(truth, location=rng.choice([x for x in LOCATIONS if x != truth.location]))
        docs.append(("requisition", _requisition(style, old, rng), _earlier(date)))
    docs += [
        ("requisition", _requisition(style, truth, rng), date),
        ("brief", _brief(truth, rng), date),
    ]
    notes = [_feedback(truth, r, rng) for r in reasons]
    notes += [_feedback(truth, None, rng) for _ in range(rng.randint(0, 2))]
    rng.shuffle(notes)
    docs += [("feedback", n, date) for n in notes]
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
) -> World:
    """A world of ``accounts`` x ``seats_per_account`` recruiters; same seed, same world."""
    rng = random.Random(seed)
    world = World(seed=seed)
    n_project = 0
    for a in range(accounts):
        key, name, domain, style = ACCOUNTS[a % len(ACCOUNTS)]
        account_id = f"{key}-{a // len(ACCOUNTS)}" if a >= len(ACCOUNTS) else f"{key}-0"
        world.accounts.append(
            {"account_id": account_id, "name": name if a < len(ACCOUNTS) else f"{name} {a}"}
        )
        world.styles[account_id] = style
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
    )
    ids = sorted(world.truth)
    n = len(ids)
    deleted = set(rng.sample(ids, k=round(n * delete)))
    edited = set(rng.sample(sorted(set(ids) - deleted), k=round(n * edit)))
    for p in world.projects:
        if p["project_id"] not in deleted:
            new.projects.append(dict(p))
            new.truth[p["project_id"]] = world.truth[p["project_id"]]
    for d in world.documents:
        if d["project_id"] not in deleted:
            new.documents.append(dict(d))
    for pid in sorted(edited):
        truth = new.truth[pid]
        reason = _weighted(
            rng, world.prefs[truth.seat_id]["reasons"], world.prefs[truth.seat_id]["reason_w"]
        )
        n_docs = sum(1 for d in new.documents if d["project_id"] == pid)
        new.documents.append(
            {
                "doc_id": f"{pid}-d{n_docs}",
                "project_id": pid,
                "kind": "feedback",
                "text": _feedback(truth, reason, rng),
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

_SUMMARY_QUESTIONS = {
    "title": "What roles does this {who} hire for most often?",
    "location": "Where are the jobs usually located?",
    "rejection_reason": "What are the most common rejection reasons?",
    "workplace_type": "Are the roles usually remote, hybrid or on-site?",
    "skill": "Which skills do the openings most often require?",
}


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
    """
    rng = random.Random(seed)
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
        rows += _summary_queries(world, scope, projects)
        rows += _title_location_queries(rng, scope, projects, per_scope)
        rows += _value_queries(
            rng,
            scope,
            projects,
            per_scope,
            "skill",
            "Which openings required {v}?",
            "which openings required <skill>",
        )
        rows += _value_queries(
            rng,
            scope,
            projects,
            per_scope,
            "rejection_reason",
            "In which searches did we reject someone because of {v}?",
            "in which searches did we reject someone because of <rejection_reason>",
        )
        rows += _title_reason_queries(rng, scope, projects)
        rows += _leakage_probes(rng, scope, projects, all_titles, all_skills)
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


def _summary_queries(world: World, scope: str, projects: list[ProjectTruth]) -> list[dict]:
    """One summary query per attribute of ``_SUMMARY_QUESTIONS``: top values with counts."""
    who = "recruiter" if scope.startswith("seat:") else "organization"
    rows = []
    for attribute, template in _SUMMARY_QUESTIONS.items():
        answer, entities = _gold_distribution(value_counts(world, scope, attribute), len(projects))
        rows.append(
            _query(scope, "summary", template.format(who=who), answer, [scope], entities, template)
        )
    return rows


def _title_location_queries(
    rng: random.Random, scope: str, projects: list[ProjectTruth], per_scope: int
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
        rows.append(
            _retrieval(
                scope,
                f"Which of my searches were for {title} roles in {location}?",
                refs,
                [title, location],
                "which of my searches were for <title> roles in <location>",
            )
        )
    return rows


def _value_queries(
    rng: random.Random,
    scope: str,
    projects: list[ProjectTruth],
    per_scope: int,
    attribute: str,
    question: str,
    template: str,
) -> list[dict]:
    """Retrievals of the projects that have a sampled value of a multi-valued attribute
    (``question`` and ``template`` name the value ``{v}`` and the slot)."""
    values = sorted({v for t in projects for v in _values(t, attribute)})
    rows = []
    for value in rng.sample(values, k=min(per_scope, len(values))):
        refs = [f"project:{t.project_id}" for t in projects if value in _values(t, attribute)]
        rows.append(_retrieval(scope, question.format(v=value), refs, [value], template))
    return rows


def _title_reason_queries(
    rng: random.Random, scope: str, projects: list[ProjectTruth]
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
        rows.append(
            _retrieval(
                scope,
                f"Which of my {title} searches rejected someone because of {reason}?",
                refs,
                [title, reason],
                "which of my <title> searches rejected someone because of <rejection_reason>",
            )
        )
    return rows


def _leakage_probes(
    rng: random.Random,
    scope: str,
    projects: list[ProjectTruth],
    all_titles: set[str],
    all_skills: set[str],
) -> list[dict]:
    """Probes for a title and a skill found only outside the scope (gold: none in scope)."""
    rows = []
    foreign_titles = sorted(all_titles - {t.title for t in projects})
    if foreign_titles:
        title = rng.choice(foreign_titles)
        rows.append(
            _query(
                scope,
                "retrieval",
                f"Which of my searches were for {title} roles?",
                "None in scope.",
                [],
                [],
                "which of my searches were for <title> roles",
                probe=True,
            )
        )
    foreign_skills = sorted(all_skills - {s for t in projects for s in t.skills})
    if foreign_skills:
        skill = rng.choice(foreign_skills)
        rows.append(
            _query(
                scope,
                "retrieval",
                f"Which openings required {skill}?",
                "None in scope.",
                [],
                [],
                "which openings required <skill>",
                probe=True,
            )
        )
    return rows


def write_queries(queries: list[dict], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), encoding="utf-8"
    )
    return path
