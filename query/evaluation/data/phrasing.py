"""The phrasing banks of adversarial worlds, each split into a dev half and a held-out half.

Everything an adversarial world writes comes from here: the applicant tracking system (ATS)
export schemas, the sentences of briefs, the feedback notes and the benchmark questions. Every
bank has a ``"dev"`` half (tune on it) and a ``"heldout"`` half (report on it) with disjoint
templates and key names; most held-out key names are unknown to the engines' alias table.

Nothing here draws at random on its own: callers pass the seeded ``random.Random``.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

SPLITS = ("dev", "heldout")
VARIETIES = ("plain", "adversarial")
WORKPLACE_VALUES = ("remote", "hybrid", "on-site")

#: City, region (US states), country and ISO country code of every generated location.
LOCATION_PARTS: dict[str, tuple[str, str | None, str, str]] = {
    "Dublin, Ireland": ("Dublin", None, "Ireland", "IE"),
    "Lisbon, Portugal": ("Lisbon", None, "Portugal", "PT"),
    "Berlin, Germany": ("Berlin", None, "Germany", "DE"),
    "Amsterdam, Netherlands": ("Amsterdam", None, "Netherlands", "NL"),
    "London, United Kingdom": ("London", None, "United Kingdom", "GB"),
    "Toronto, Canada": ("Toronto", None, "Canada", "CA"),
    "Austin, Texas": ("Austin", "Texas", "United States", "US"),
    "Seattle, Washington": ("Seattle", "Washington", "United States", "US"),
    "New York, New York": ("New York", "New York", "United States", "US"),
    "Madrid, Spain": ("Madrid", None, "Spain", "ES"),
    "Warsaw, Poland": ("Warsaw", None, "Poland", "PL"),
    "Singapore": ("Singapore", None, "Singapore", "SG"),
}


def city(location: str) -> str:
    return LOCATION_PARTS[location][0]


def article(phrase: str) -> str:
    """``a`` or ``an`` before ``phrase``."""
    return "an" if phrase[:1].lower() in "aeiou" else "a"


# -- ATS export schemas ----------------------------------------------------------------------


@dataclass(frozen=True)
class ExportView:
    """What one requisition export states; ``None`` (location, workplace) means "left blank"."""

    ref: str
    title: str
    seniority: str
    location: str | None
    workplace_type: str | None
    skills: tuple[str, ...]
    manager: str
    blank: str = "omit"  # how a blank field looks: "omit", "null" (JSON) / "TBD" (lines), "empty"


@dataclass(frozen=True)
class Schema:
    """One ATS export format: its key names, workplace values and how it renders a view."""

    name: str
    split: str
    keys: tuple[str, ...]
    workplace: dict[str, str]
    seniority_in_title: bool
    render: Callable[[ExportView, Schema], str]


def _put(obj: dict, key: str, value: object, blank: str) -> None:
    """Set ``key`` unless the value is blank, then write the blank the view asks for."""
    if value is not None:
        obj[key] = value
    elif blank == "null":
        obj[key] = None
    elif blank == "empty":
        obj[key] = ""


def _lines(pairs: list[tuple[str, str | None]], blank: str) -> str:
    out = []
    for key, value in pairs:
        if value is None:
            if blank == "omit":
                continue
            value = "TBD" if blank == "null" else ""
        out.append(f"{key}: {value}".rstrip())
    return "\n".join(out)


def _full_title(v: ExportView) -> str:
    return f"{v.seniority} {v.title}"


def _wp(v: ExportView, s: Schema) -> str | None:
    return s.workplace[v.workplace_type] if v.workplace_type else None


def _place(v: ExportView, city_key: str, region_key: str, country_key: str, code: bool = False):
    """A location as an object of parts (``None`` if blank)."""
    if v.location is None:
        return None
    c, region, country, iso = LOCATION_PARTS[v.location]
    obj = {city_key: c}
    if region:
        obj[region_key] = region
    obj[country_key] = iso if code else country
    return obj


# dev: Greenhouse-like flat JSON, skills as a list, seniority in its own field.
def _dev_flat(v: ExportView, s: Schema) -> str:
    obj: dict = {"requisition_id": v.ref, "job_title": v.title, "seniority_level": v.seniority}
    _put(obj, "office_location", v.location, v.blank)
    _put(obj, "workplace_type", _wp(v, s), v.blank)
    obj["required_skills"] = list(v.skills)
    obj["employment_type"] = "Full-time"
    obj["hiring_manager"] = v.manager
    return json.dumps(obj)


# dev: Lever-like nested JSON, seniority in the title, location split into parts, skills in
# one semicolon-separated string.
def _dev_nested(v: ExportView, s: Schema) -> str:
    categories: dict = {}
    _put(categories, "location", _place(v, "city", "region", "country"), v.blank)
    categories["commitment"] = "Full-time"
    posting: dict = {"positionName": _full_title(v), "categories": categories}
    _put(posting, "workplaceType", _wp(v, s), v.blank)
    obj = {
        "id": v.ref,
        "posting": posting,
        "requirements": {"competencies": "; ".join(v.skills)},
        "owner": {"name": v.manager},
    }
    return json.dumps(obj)


# dev: Workday-like "Key: value" lines, seniority in the title, skills as "a, b and c".
def _dev_lines(v: ExportView, s: Schema) -> str:
    skills = ", ".join(v.skills[:-1]) + (" and " if len(v.skills) > 1 else "") + v.skills[-1]
    return _lines(
        [
            ("Requisition Title", _full_title(v)),
            ("Work Site", v.location),
            ("Work Arrangement", _wp(v, s)),
            ("Must Haves", skills),
            ("Time Type", "Full time"),
            ("Hiring Manager", v.manager),
        ],
        v.blank,
    )


# dev: Ashby-like nested JSON with lists of objects (offices, tech stack).
def _dev_listed(v: ExportView, s: Schema) -> str:
    place = _place(v, "name", "region", "country")
    job: dict = {"role_name": v.title, "level": v.seniority}
    _put(job, "offices", [place] if place else None, v.blank)
    _put(job, "remote_policy", _wp(v, s), v.blank)
    job["techStack"] = [{"name": x} for x in v.skills]
    return json.dumps({"job": job, "isOpen": True})


# held-out: SmartRecruiters-like flat JSON, camelCase keys unknown to the alias table, location
# split into city / state / country, skills in one semicolon-separated string.
def _held_flat(v: ExportView, s: Schema) -> str:
    obj: dict = {"refNumber": v.ref, "vacancyName": v.title, "experienceTier": v.seniority}
    place = _place(v, "hiringCity", "hiringState", "hiringCountry")
    if place:
        obj.update(place)
    else:
        _put(obj, "hiringCity", None, v.blank)
    _put(obj, "onsiteOrRemote", _wp(v, s), v.blank)
    obj["qualifications"] = "; ".join(v.skills)
    obj["contractKind"] = "Permanent"
    obj["recruiterOwner"] = v.manager
    return json.dumps(obj)


# held-out: JSON:API-like nested JSON, seniority in the title, skills as a list of objects.
def _held_nested(v: ExportView, s: Schema) -> str:
    attributes: dict = {"headline": _full_title(v)}
    _put(attributes, "locationName", v.location, v.blank)
    _put(attributes, "officePresence", _wp(v, s), v.blank)
    attributes["skillTags"] = [{"label": x} for x in v.skills]
    attributes["employmentKind"] = "full-time"
    obj = {
        "data": {
            "type": "jobs",
            "attributes": attributes,
            "relationships": {"hiringLead": {"fullName": v.manager}},
        }
    }
    return json.dumps(obj)


# held-out: Personio-like "Key: value" lines, skills as "a, b and c".
def _held_lines(v: ExportView, s: Schema) -> str:
    skills = ", ".join(v.skills[:-1]) + (" and " if len(v.skills) > 1 else "") + v.skills[-1]
    return _lines(
        [
            ("Vacancy", v.title),
            ("Experience Bracket", v.seniority),
            ("Duty Station", v.location),
            ("Presence Requirement", _wp(v, s)),
            ("Essential Qualifications", skills),
            ("Contract", "Permanent"),
        ],
        v.blank,
    )


# held-out: Workable-like nested JSON with lists, seniority in the title, sites with an ISO
# country code, skills as a list of strings.
def _held_listed(v: ExportView, s: Schema) -> str:
    obj: dict = {"shortcode": v.ref, "full_title": _full_title(v)}
    place = _place(v, "municipality", "subdivision", "countryCode", code=True)
    _put(obj, "sites", [place] if place else None, v.blank)
    workplace = _wp(v, s)
    _put(obj, "attendance", {"mode": workplace} if workplace else None, v.blank)
    obj["toolkit"] = list(v.skills)
    obj["hiringTeam"] = [{"member": v.manager, "capacity": "Hiring Manager"}]
    return json.dumps(obj)


SCHEMAS: dict[str, tuple[Schema, ...]] = {
    "dev": (
        Schema(
            "dev_flat_json",
            "dev",
            (
                "requisition_id job_title seniority_level office_location workplace_type "
                "required_skills employment_type hiring_manager"
            ).split(),
            {"remote": "Remote", "hybrid": "Hybrid", "on-site": "On-site"},
            False,
            _dev_flat,
        ),
        Schema(
            "dev_nested_json",
            "dev",
            (
                "id posting positionName categories location city region country commitment "
                "workplaceType requirements competencies owner name"
            ).split(),
            {"remote": "remote", "hybrid": "hybrid", "on-site": "onsite"},
            True,
            _dev_nested,
        ),
        Schema(
            "dev_kv_lines",
            "dev",
            (
                "Requisition Title",
                "Work Site",
                "Work Arrangement",
                "Must Haves",
                "Time Type",
                "Hiring Manager",
            ),
            {"remote": "Fully remote", "hybrid": "Hybrid", "on-site": "In office"},
            True,
            _dev_lines,
        ),
        Schema(
            "dev_listed_json",
            "dev",
            (
                "job role_name level offices name region country remote_policy techStack isOpen"
            ).split(),
            {"remote": "remote-first", "hybrid": "hybrid", "on-site": "in office"},
            False,
            _dev_listed,
        ),
    ),
    "heldout": (
        Schema(
            "heldout_flat_json",
            "heldout",
            (
                "refNumber vacancyName experienceTier hiringCity hiringState hiringCountry "
                "onsiteOrRemote qualifications contractKind recruiterOwner"
            ).split(),
            {
                "remote": "Work from home",
                "hybrid": "Hybrid (2-3 office days)",
                "on-site": "Office attendance required",
            },
            False,
            _held_flat,
        ),
        Schema(
            "heldout_nested_json",
            "heldout",
            (
                "data type attributes headline locationName officePresence skillTags label "
                "employmentKind relationships hiringLead fullName"
            ).split(),
            {"remote": "Remote-first", "hybrid": "Hybrid", "on-site": "Office-based"},
            True,
            _held_nested,
        ),
        Schema(
            "heldout_kv_lines",
            "heldout",
            (
                "Vacancy",
                "Experience Bracket",
                "Duty Station",
                "Presence Requirement",
                "Essential Qualifications",
                "Contract",
            ),
            {
                "remote": "Home-based",
                "hybrid": "Partly on site (hybrid)",
                "on-site": "On site, 5 days",
            },
            False,
            _held_lines,
        ),
        Schema(
            "heldout_listed_json",
            "heldout",
            (
                "shortcode full_title sites municipality subdivision countryCode attendance mode "
                "toolkit hiringTeam member capacity"
            ).split(),
            {
                "remote": "distributed (work from home)",
                "hybrid": "blended: office + home",
                "on-site": "in-person at the site",
            },
            True,
            _held_listed,
        ),
    ),
}
SCHEMA_BY_NAME: dict[str, Schema] = {s.name: s for half in SCHEMAS.values() for s in half}


def render_export(schema_name: str, view: ExportView) -> str:
    schema = SCHEMA_BY_NAME[schema_name]
    return schema.render(view, schema)


def reference(schema_name: str, project_id: str, version: int = 0) -> str:
    """The requisition number an ATS gives a project."""
    number = int(project_id[1:]) * 7 + 1000 + version
    prefix = {
        "dev_flat_json": "REQ-",
        "dev_nested_json": "lev-",
        "dev_kv_lines": "JR-",
        "dev_listed_json": "ash-",
        "heldout_flat_json": "SR",
        "heldout_nested_json": "tt-",
        "heldout_kv_lines": "PER/",
        "heldout_listed_json": "WK",
    }[schema_name]
    return f"{prefix}{number}"


# -- briefs -----------------------------------------------------------------------------------
# Slots: {a_sen} ("a senior"), {sen}, {level} ("senior level"), {title}, {a_title}, {city},
# {location}, {skills}, {skill}, {other_city}, {other_title}, {a_other_title}, {other_skill},
# {other_team}, {code}.

#: Opening sentence: the role and its level.
BRIEF_OPENERS: dict[str, tuple[str, ...]] = {
    "dev": (
        "We're hiring {a_sen} {title}.",
        "Opening a search for {a_sen} {title}.",
        "Intake notes: the team wants {a_sen} {title}.",
        "Need: one {sen} {title}.",
        "Kickoff call summary - the hiring manager asked for {a_sen} {title}.",
        "New req: {title}, {level}.",
        "Brief for the {title} search ({sen}).",
        "We are looking for {a_sen} {title} to join the team.",
    ),
    "heldout": (
        "Role in a nutshell: {title}, pitched at {level}.",
        "We have headcount for {a_sen} {title}.",
        "Search mandate: {sen} {title}.",
        "Our client team is after {a_sen} {title}.",
        "Backfill for a departing {title}; {level}.",
        "Approved: one {sen} {title} position.",
        "Help wanted - {sen} {title}.",
        "Summary of the intake meeting: {a_title} at {level}.",
    ),
}

#: Where the role is. ``office`` templates only suit hybrid and on-site roles.
BRIEF_LOCATIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "dev": (
        ("The team sits in our {city} office.", "any"),
        ("Whoever we hire must be able to commute to {city}.", "office"),
        ("The position is based in {location}.", "any"),
        ("They'll report into the {city} hub.", "any"),
        ("Home base for this hire is {city}.", "any"),
        ("The role belongs to our {location} site.", "any"),
        ("It's a {city} position.", "any"),
        ("Candidates should live within reach of {city}.", "office"),
    ),
    "heldout": (
        ("You'd be joining colleagues in {city}.", "any"),
        ("Day to day, the work happens out of {city}.", "office"),
        ("Anchor office: {city}.", "any"),
        ("The hiring team is {city}-based.", "any"),
        ("We want this person close to our {location} premises.", "office"),
        ("Relocation support to {city} is on offer for the right person.", "office"),
        ("{city} is where this seat lives.", "any"),
        ("The desk for this hire is in {city}.", "office"),
        ("The contract is with our {location} entity.", "any"),
    ),
}

#: How the role is worked, per workplace type.
BRIEF_WORKPLACES: dict[str, dict[str, tuple[str, ...]]] = {
    "dev": {
        "remote": (
            "This one is remote-friendly: no office attendance needed.",
            "The role is fully remote.",
            "Working from home full time is fine.",
            "It can be done from anywhere in the country.",
        ),
        "hybrid": (
            "It's hybrid, two days a week in the office.",
            "Expect a hybrid setup.",
            "The week is split between home and the office.",
            "Three office days, the rest from home.",
        ),
        "on-site": (
            "This is an on-site role.",
            "We need them in the office every day.",
            "Five days a week at the office.",
            "It is an in-office position, every day of the week.",
        ),
    },
    "heldout": {
        "remote": (
            "Location-independent: they can work from home every day.",
            "Distributed role, no desk needed.",
            "Home-based position.",
            "Nobody expects them at the office, ever.",
        ),
        "hybrid": (
            "A couple of days a week at the office, the rest at home.",
            "Office midweek, home otherwise.",
            "Part office, part home.",
            "Office on Tuesdays and Thursdays; home the other days.",
        ),
        "on-site": (
            "Full-time presence at the office is expected.",
            "They will be at their desk in the building every day.",
            "Daily attendance at the site is required.",
            "Working from home is not an option here.",
        ),
    },
}

#: The skills the export also lists, restated.
BRIEF_SKILLS: dict[str, tuple[str, ...]] = {
    "dev": (
        "Must-have skills: {skills}.",
        "Candidates need experience with {skills}.",
        "Core toolkit: {skills}.",
        "They should be comfortable with {skills}.",
        "Required: {skills}.",
        "Non-negotiables are {skills}.",
        "Day-to-day work involves {skills}.",
        "Look for hands-on {skills}.",
    ),
    "heldout": (
        "The essentials are {skills}.",
        "Expect to screen for {skills}.",
        "Whoever joins will live in {skills} every day.",
        "Candidates without {skills} won't get far.",
        "Key know-how: {skills}.",
        "Ask every candidate about {skills}.",
        "A proven background in {skills} is mandatory.",
        "What matters most: {skills}.",
    ),
}

#: A required skill that only the brief states (the export leaves it out).
BRIEF_EXTRA_SKILL: dict[str, tuple[str, ...]] = {
    "dev": (
        "On top of that, we really need someone who knows {skill}.",
        "{skill} is a must as well.",
        "Also needs solid {skill}.",
        "The hiring manager added {skill} to the must-haves.",
        "Don't forget {skill} - it's required.",
        "They will need {skill} from day one.",
        "Hands-on {skill} is essential.",
        "Please also screen for {skill}, which the role requires.",
    ),
    "heldout": (
        "One more requirement: {skill}.",
        "Whoever we pick has to know {skill}.",
        "{skill} experience is non-negotiable.",
        "Missing from the form but required: {skill}.",
        "We can't compromise on {skill}.",
        "Be sure they've used {skill} in production; the job depends on it.",
        "Add {skill} to the requirements.",
        "Real {skill} depth is expected.",
    ),
}

#: Explicit negations: the role is NOT this (never the truth), per kind of value.
BRIEF_NEGATIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "dev": {
        "remote": ("This role is not remote.", "Fully remote is not possible for this one."),
        "hybrid": ("We will not consider hybrid.", "It is not a hybrid arrangement."),
        "on-site": ("It is not an on-site role.", "Nobody has to come into the office."),
        "skill": ("{other_skill} is not required.", "No need for {other_skill}."),
        "location": (
            "The role is not based in {other_city}.",
            "It is not a {other_city} position.",
        ),
        "title": ("We are not hiring {a_other_title} for this one.",),
    },
    "heldout": {
        "remote": ("Remote is off the table.", "Working fully from home won't be approved."),
        "hybrid": ("Hybrid arrangements won't be approved.", "No split home/office weeks."),
        "on-site": ("Don't pitch it as an office job - it isn't.", "No daily commute involved."),
        "skill": (
            "{other_skill} won't be needed.",
            "Skip {other_skill} on CVs; it's not part of the job.",
        ),
        "location": (
            "{other_city} is not an option for this seat.",
            "Candidates shouldn't expect to work out of {other_city}.",
        ),
        "title": ("Careful, this isn't the {other_title} opening.",),
    },
}

#: Workplace negations that stay true for each real workplace type (hybrid is partly on-site).
NEGATABLE_WORKPLACES = {
    "remote": ("hybrid", "on-site"),
    "hybrid": ("remote",),
    "on-site": ("remote", "hybrid"),
}

#: Distractors a careful reader discards: other searches, other teams' offices, other tools.
BRIEF_DISTRACTORS: dict[str, tuple[str, ...]] = {
    "dev": (
        "Last year we ran a similar search for {a_other_title} in {other_city}.",
        "Note that our {other_team} team is in {other_city}; this hire is not part of it.",
        "The previous search, for {a_other_title}, is closed.",
        "The sister team uses {other_skill}, which is not part of this role.",
    ),
    "heldout": (
        "(Unrelated: the {other_city} office is also recruiting {a_other_title}.)",
        "Our {other_team} people in {other_city} helped write this brief.",
        "Reusing the interview loop from last quarter's {other_title} search.",
        "Ignore the {other_skill} question in the old scorecard; that was for another team.",
    ),
}

BRIEF_CODES: dict[str, tuple[str, ...]] = {
    "dev": ("Internal code name: {code}.", "Code name: {code}.", "Project code: {code}."),
    "heldout": ("Codename {code}.", "(ref. {code})", "Tracking tag: {code}."),
}

BRIEF_CLOSERS: dict[str, tuple[str, ...]] = {
    "dev": (
        "The hiring manager wants a shortlist within two weeks.",
        "Please send the first profiles by Friday.",
        "Budget is approved.",
    ),
    "heldout": (
        "First slate due in ten days.",
        "Panel availability is limited in August.",
        "Sign-off came through this morning.",
    ),
}

OTHER_TEAMS = ("finance", "design", "sales", "legal", "support", "marketing")

# -- feedback notes ---------------------------------------------------------------------------
# Slots: {name}, {stage}, {reason}, {skill}.

STAGES: dict[str, tuple[str, ...]] = {
    "dev": ("Phone screen", "Onsite", "Technical interview", "Hiring manager interview"),
    "heldout": ("Recruiter call", "Panel interview", "Take-home review", "Final loop"),
}

#: "Key: value" rejection notes: with a candidate name, and without.
REJECT_BLOCKS: dict[str, dict[str, tuple[str, ...]]] = {
    "dev": {
        "named": (
            "Candidate: {name}\nStage: {stage}\nDecision: Rejected\nReason: {reason}",
            "Applicant: {name}\nRound: {stage}\nOutcome: Declined\nRejection reason: {reason}",
        ),
        "anonymous": (
            "Stage: {stage}\nStatus: Not moving forward\nReason for rejection: {reason}",
        ),
    },
    "heldout": {
        "named": (
            "Person: {name}\nPhase: {stage}\nDisposition: Unsuccessful\nGrounds: {reason}",
            "Profile: {name}\nCheckpoint: {stage}\nCall: No-go\nExplanation: {reason}",
        ),
        "anonymous": (
            "Phase: {stage}\nDisposition: Closed - not selected\nMain concern: {reason}",
        ),
    },
}

#: Prose rejection notes.
REJECT_PROSE: dict[str, dict[str, tuple[str, ...]]] = {
    "dev": {
        "named": (
            "Debrief for {name}: we decided not to move forward because of {reason}.",
            "Interview feedback for {name}. Rejected due to {reason}.",
            "Passed on {name} after the {stage} - {reason}.",
            "{name} was rejected at the {stage}; reason: {reason}.",
        ),
        "anonymous": (
            "Rejected after the {stage}: {reason}.",
            "We declined the candidate at the {stage} because of {reason}.",
        ),
    },
    "heldout": {
        "named": (
            "{name} won't continue in the process. Panel's view: {reason}.",
            "Sadly, we let {name} go after the {stage}: {reason}.",
            "No offer for {name}; the sticking point was {reason}.",
            "Closing the loop on {name}: unsuccessful, {reason}.",
        ),
        "anonymous": (
            "The panel said no after the {stage}: {reason}.",
            "Candidate from the {stage} is out - {reason}.",
        ),
    },
}

#: Advances (no rejection), with a skill the candidate showed.
ADVANCE_NOTES: dict[str, dict[str, tuple[str, ...]]] = {
    "dev": {
        "named": (
            "Candidate: {name}\nStage: {stage}\nDecision: Advanced\nNotes: strong {skill} depth",
            "Debrief for {name}: strong {skill} background, moving to the final round.",
            "{name} passed the {stage}; impressive {skill}.",
        ),
        "anonymous": ("Moving the {stage} candidate forward - good {skill} answers.",),
    },
    "heldout": {
        "named": (
            "Person: {name}\nPhase: {stage}\nDisposition: Through to next step\n"
            "Highlights: {skill}",
            "{name} goes through to the next step; great on {skill}.",
            "Thumbs up for {name} after the {stage}, solid {skill}.",
        ),
        "anonymous": ("Invite back the candidate from the {stage}: strong {skill} work.",),
    },
}

#: A required skill that only a feedback note states: a standalone note ...
FEEDBACK_SKILL_NOTES: dict[str, tuple[str, ...]] = {
    "dev": (
        "Note from the hiring manager: they now also want {skill}.",
        "Update after calibration: {skill} is now a must-have for this role.",
        "HM sync - add {skill} to the requirements.",
        "Heads-up: the hiring manager now also wants {skill}.",
    ),
    "heldout": (
        "Calibration outcome: {skill} has been added as a requirement.",
        "Manager follow-up: whoever we hire needs {skill} too.",
        "FYI the team expects {skill} proficiency as well, per today's sync.",
        "Requirements changed: {skill} is now mandatory.",
    ),
}
#: ... or a sentence added to a prose note (advances only: never read as a rejection reason).
FEEDBACK_SKILL_ASIDES: dict[str, tuple[str, ...]] = {
    "dev": (
        "Separately, the hiring manager now also wants {skill}.",
        "Light on {skill}, which the role needs; we'll probe it in the next round.",
    ),
    "heldout": (
        "PS: {skill} was added to the must-haves this week.",
        "Gap to check: {skill}, which the job requires.",
    ),
}

#: Distractors in notes: where a candidate lives, tools the role does not need, past jobs.
NOTE_DISTRACTORS: dict[str, dict[str, tuple[str, ...]]] = {
    "dev": {
        "location": (
            "Candidate is based in {other_city}, happy to relocate.",
            "Currently lives in {other_city}.",
        ),
        "skill": ("Also knows {other_skill}, which this role does not need.",),
        "title": ("Previously worked as {a_other_title}.",),
    },
    "heldout": {
        "location": (
            "Lives in {other_city} today and would move for the job.",
            "Commuting from {other_city} at the moment.",
        ),
        "skill": ("Brings {other_skill} too (not relevant here).",),
        "title": ("Background: several years as {a_other_title}.",),
    },
}

# -- benchmark questions ----------------------------------------------------------------------
# Slots: {title}, {location} or {city} (gold is the full location either way), {skill},
# {rejection_reason}, {who} (summaries: "recruiter" or "organization").

#: Today's questions (``variety="plain"`` keeps them exactly).
PLAIN_QUESTIONS: dict[str, tuple[str, ...]] = {
    "title_location": ("Which of my searches were for {title} roles in {location}?",),
    "skill": ("Which openings required {skill}?",),
    "rejection_reason": ("In which searches did we reject someone because of {rejection_reason}?",),
    "title_reason": (
        "Which of my {title} searches rejected someone because of {rejection_reason}?",
    ),
    "title": ("Which of my searches were for {title} roles?",),
}
PLAIN_SUMMARIES: dict[str, tuple[str, ...]] = {
    "title": ("What roles does this {who} hire for most often?",),
    "location": ("Where are the jobs usually located?",),
    "rejection_reason": ("What are the most common rejection reasons?",),
    "workplace_type": ("Are the roles usually remote, hybrid or on-site?",),
    "skill": ("Which skills do the openings most often require?",),
}

QUESTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "dev": {
        "title_location": (
            "Which openings are based in {city} and hiring {title}s?",
            "Which {title} reqs did I have in {location}?",
            "Show me the {title} searches located in {city}.",
            "List the projects for {a_title} in {location}.",
            "Which of our {title} roles were in {city}?",
        ),
        "skill": (
            "Which roles need {skill}?",
            "Which searches asked for {skill}?",
            "Where was {skill} a must-have?",
            "Which reqs list {skill} as a requirement?",
            "Show me the openings that require {skill}.",
        ),
        "rejection_reason": (
            "Which searches rejected someone because of {rejection_reason}?",
            "Where did we turn candidates down for {rejection_reason}?",
            "Which projects had a rejection citing {rejection_reason}?",
            "In which openings was a candidate rejected for {rejection_reason}?",
        ),
        "title_reason": (
            "Which of my {title} searches rejected someone for {rejection_reason}?",
            "Among the {title} roles, where did we reject a candidate because of "
            "{rejection_reason}?",
            "Which {title} openings had a rejection due to {rejection_reason}?",
            "Show {title} reqs where someone was turned down for {rejection_reason}.",
        ),
        "title": (
            "Have I recruited any {title}s?",
            "Which projects were {title} searches?",
            "Show my {title} openings.",
            "Which reqs were for {a_title}?",
        ),
    },
    "heldout": {
        "title_location": (
            "Any {title} openings out of {city}?",
            "Find every {title} search we ran for the {city} office.",
            "I need the {title} positions in {location} - which ones are they?",
            "Pull up the {title} hires I worked on in {city}.",
            "What {title} jobs have we opened in {location}?",
        ),
        "skill": (
            "In which jobs was {skill} mandatory?",
            "Which vacancies call for {skill}?",
            "Find positions where candidates had to know {skill}.",
            "Which of these hires depended on {skill} experience?",
            "What searches expected {skill} skills?",
        ),
        "rejection_reason": (
            "Where was '{rejection_reason}' given as the reason to say no?",
            "Which reqs saw a candidate dropped over {rejection_reason}?",
            "Find searches with a no-hire due to {rejection_reason}.",
            "In which roles did '{rejection_reason}' end someone's candidacy?",
        ),
        "title_reason": (
            "For {title} hiring, which searches ended a candidacy over {rejection_reason}?",
            "Which {title} vacancies had a no-hire citing {rejection_reason}?",
            "Where did a {title} candidate get declined because of {rejection_reason}?",
            "Find the {title} processes in which {rejection_reason} led to a rejection.",
        ),
        "title": (
            "Did we ever open {a_title} position?",
            "List any {title} vacancies in here.",
            "Find the {title} roles on my desk.",
            "Any {title} searches on record?",
        ),
    },
}

SUMMARIES: dict[str, dict[str, tuple[str, ...]]] = {
    "dev": {
        "title": (
            "What roles does this {who} hire for most often?",
            "Which job titles come up most for this {who}?",
            "What kind of roles does this {who} usually fill?",
        ),
        "location": (
            "Where are the jobs usually located?",
            "Which cities does this {who} mostly hire in?",
            "What are the main hiring locations?",
        ),
        "rejection_reason": (
            "What are the most common rejection reasons?",
            "Why do candidates usually get rejected?",
            "What are the top reasons we turn people down?",
        ),
        "workplace_type": (
            "Are the roles usually remote, hybrid or on-site?",
            "What's the typical work arrangement?",
            "How many of the roles are remote versus in the office?",
        ),
        "skill": (
            "Which skills do the openings most often require?",
            "What are the most requested skills?",
            "Which technical skills come up most?",
        ),
    },
    "heldout": {
        "title": (
            "Which positions dominate this {who}'s pipeline?",
            "What does this {who} mostly recruit?",
            "Top roles by number of searches?",
        ),
        "location": (
            "Which offices see the most openings?",
            "Where is most of the hiring happening?",
            "Which places do these roles tend to be in?",
        ),
        "rejection_reason": (
            "What usually sinks a candidate here?",
            "Most frequent grounds for saying no?",
            "Why do applicants most often fall out of the process?",
        ),
        "workplace_type": (
            "Do these jobs mostly let people work from home?",
            "What's the usual office attendance model?",
            "Where do hires typically work: at home, at the office, or a mix?",
        ),
        "skill": (
            "What know-how is asked for most often?",
            "Which competencies appear most in the requirements?",
            "What should candidates usually be good at?",
        ),
    },
}

_SLOT = re.compile(r"\{(\w+)\}")
_SLOT_NAMES = {"city": "location", "a_title": "title"}


def slot_form(template: str) -> str:
    """The ``template`` field of a query: ``which roles need <skill>``."""
    form = _SLOT.sub(lambda m: f"<{_SLOT_NAMES.get(m.group(1), m.group(1))}>", template)
    return form.lower().rstrip("?.")


def fill(template: str, **slots: str) -> str:
    """``template`` with its slots filled (``a_title`` and ``city`` derived when needed)."""
    if "title" in slots:
        slots.setdefault("a_title", f"{article(slots['title'])} {slots['title']}")
    if "location" in slots and slots["location"] in LOCATION_PARTS:
        slots.setdefault("city", city(slots["location"]))
    return template.format(**slots)


# -- typos ------------------------------------------------------------------------------------


def typo(value: str, rng: random.Random) -> str:
    """``value`` with one letter dropped, doubled or swapped inside one of its longer words."""
    words = value.split(" ")
    candidates = [i for i, w in enumerate(words) if sum(c.isalpha() for c in w) >= 4]
    if not candidates:
        return value
    i = rng.choice(candidates)
    word = words[i]
    spots = [j for j in range(1, len(word) - 1) if word[j].isalpha()]
    op = rng.choice(("drop", "double", "swap"))
    j = rng.choice(spots)
    if op == "swap" and word[j + 1].isalpha() and word[j + 1] != word[j]:
        word = word[:j] + word[j + 1] + word[j] + word[j + 2 :]
    elif op == "double":
        word = word[:j] + word[j] + word[j:]
    else:
        word = word[:j] + word[j + 1 :]
    words[i] = word
    return " ".join(words)
