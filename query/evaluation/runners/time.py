"""What is true now and what was true then, on a generated hiring world.

In the generator's world some projects moved: an earlier requisition, dated a year before the
project's other documents, gives another location (``World.superseded``). Here, on top of
it, some roles change how they work once or twice after the project's date: a note dated 30
(and 60) days later says the role is now remote, hybrid or on-site, worded from the ``split``
half of a bank of phrasings (tune on "dev", report "heldout"). Per project, at its own scope:

- **current location**: "Where is the role located?" now; the earlier one named is wrong;
- **as of before the move**: the same, as of the earlier requisition's date (moved only);
- **as of the latest date**: the same, as of the project's date;
- **as of before any document**: nothing is known;
- **current workplace** and **workplace as of each period** (changed roles only): "Is the
  role remote, hybrid or on-site?" now, and as of the day before each change.

The baseline is the same memory without time: it answers every as-of question with what
holds now (what a memory that keeps one value per attribute says whatever the date).
At each seat, the stored location counts must hold no earlier location of a moved project
that no project of the seat holds now (summaries count current values only).
"""

from __future__ import annotations

import random
import re
from datetime import date, timedelta

import duckdb

from hltm_resources.config import Settings
from hltm_resources.indexing.loading import load_and_build
from query.evaluation.data.sample_world import WORKPLACES, generate_world, write_snapshot
from query.memory import Memory

QUESTION = "Where is the role located?"
HOW = "Is the role remote, hybrid or on-site?"
#: Notes saying how a role works from now on: {w} is remote, hybrid or on-site.
CHANGE_NOTES = {
    "dev": (
        "Update: the role is now {w}.",
        "Quick note: we are making this position {w} from today.",
        "Please update the ad, the job is {w} now.",
    ),
    "heldout": (
        "Change of plan: the team agreed the job will be {w} from now on.",
        "FYI, the hiring manager has switched the role to {w}.",
        "Heads up, this opening is now {w}.",
    ),
}
#: Share of projects whose workplace changes once, and of those, the share changing twice.
CHANGED_SHARE = 0.2
TWICE_SHARE = 0.5
_WORKPLACE_WORDS = {"remote": ("remote",), "hybrid": ("hybrid",), "on-site": ("on-site", "onsite")}


def _city(location: str) -> str:
    return location.split(",")[0].strip()


def _says(answer: str, right: str, wrong: str | None) -> bool:
    """The answer names ``right``'s city and not ``wrong``'s (if given)."""
    low = answer.lower()
    if _city(right).lower() not in low:
        return False
    return wrong is None or _city(wrong).lower() not in low


def _day_before(day: str) -> str:
    return (date.fromisoformat(day) - timedelta(days=1)).isoformat()


def _plus(day: str, days: int) -> str:
    return (date.fromisoformat(day) + timedelta(days=days)).isoformat()


def add_workplace_changes(world, seed: int, split: str) -> dict[str, list[tuple[str, str]]]:
    """Notes changing how some roles work, added to ``world.documents``; per changed
    project, its workplace by date: [(from date, value), ...], the first the generator's."""
    rng = random.Random(seed * 7919 + 17)
    notes = CHANGE_NOTES[split]
    dates = {p["project_id"]: p["updated_at"] for p in world.projects}
    timelines: dict[str, list[tuple[str, str]]] = {}
    for pid, truth in sorted(world.truth.items()):
        if rng.random() >= CHANGED_SHARE:
            continue
        steps = [(dates[pid], truth.workplace_type)]
        for n in range(2 if rng.random() < TWICE_SHARE else 1):
            value = rng.choice([w for w in WORKPLACES if w != steps[-1][1]])
            day = _plus(dates[pid], 30 * (n + 1))
            steps.append((day, value))
            world.documents.append(
                {
                    "doc_id": f"{pid}-w{n}",
                    "project_id": pid,
                    "kind": "note",
                    "text": rng.choice(notes).format(w=value),
                    "updated_at": day,
                }
            )
        timelines[pid] = steps
    return timelines


def _says_workplace(answer: str, right: str) -> bool:
    """The answer states ``right`` and no other way of working (quotes of documents aside:
    a field named ``remote_policy`` states nothing)."""
    low = re.sub(r'"[^"]*"', "", answer).lower()
    held = {w for w, words in _WORKPLACE_WORDS.items() if any(x in low for x in words)}
    return held == {right}


def eval_time(settings: Settings, seed: int = 11, split: str = "heldout") -> dict:
    """Scores per question kind for HLTM and the timeless baseline (see the module)."""
    world = generate_world(seed=seed, split=split, variety="adversarial")
    timelines = add_workplace_changes(world, seed, split)
    home = settings.home
    marker = home / "time-world.txt"
    stamp = f"seed={seed} split={split} changes=1"
    if not marker.exists() or marker.read_text() != stamp:
        load_and_build(settings, write_snapshot(world, home / "snapshot"))
        marker.write_text(stamp)
    dates: dict[str, list[str]] = {}
    for d in world.documents:
        dates.setdefault(d["project_id"], []).append(d["updated_at"])
    scores: dict[str, dict[str, list[bool]]] = {"hltm": {}, "timeless": {}}
    failures: list[dict] = []

    names = {p["project_id"]: p["name"] for p in world.projects}

    def score(kind: str, pid: str, hltm: str, timeless: str, right, wrong=None) -> None:
        # A project's name holds its city ("Data Engineer (Berlin) #005"): not an answer.
        hltm, timeless = hltm.replace(names[pid], ""), timeless.replace(names[pid], "")
        ok = hltm.startswith("Nothing is known") if right is None else _says(hltm, right, wrong)
        base = False if right is None else _says(timeless, right, wrong)
        scores["hltm"].setdefault(kind, []).append(ok)
        scores["timeless"].setdefault(kind, []).append(base)
        if not ok:
            failures.append({"kind": kind, "project": pid, "expected": right, "answer": hltm})

    with Memory(settings, log_queries=False) as mem:
        for pid, truth in sorted(world.truth.items()):
            scope = f"project:{pid}"
            old = world.superseded.get(pid)
            first, last = min(dates[pid]), max(dates[pid])
            now = mem.ask(QUESTION, scope).answer
            score("current", pid, now, now, truth.location, old)
            if old:
                then = mem.ask(QUESTION, scope, as_of=first).answer
                score("as of before the move", pid, then, now, old, truth.location)
            later = mem.ask(QUESTION, scope, as_of=last).answer
            score("as of the latest date", pid, later, now, truth.location, old)
            before = mem.ask(QUESTION, scope, as_of=_day_before(first)).answer
            score("as of before any document", pid, before, now, None)
            steps = timelines.get(pid)
            if not steps:
                continue
            now = mem.ask(HOW, scope).answer.replace(names[pid], "")
            right = _says_workplace(now, steps[-1][1])
            scores["hltm"].setdefault("current workplace", []).append(right)
            scores["timeless"].setdefault("current workplace", []).append(right)
            if not right:
                failures.append({"kind": "current workplace", "project": pid, "answer": now})
            for (_, value), (changed, _) in zip(steps, steps[1:], strict=False):
                then = mem.ask(HOW, scope, as_of=_day_before(changed)).answer
                then = then.replace(names[pid], "")
                ok = _says_workplace(then, value)
                scores["hltm"].setdefault("workplace as of each period", []).append(ok)
                base = _says_workplace(now, value)
                scores["timeless"].setdefault("workplace as of each period", []).append(base)
                if not ok:
                    failures.append(
                        {"kind": "workplace as of a period", "project": pid, "answer": then}
                    )
    counted_old = _old_locations_counted(settings, world)
    return {
        "seed": seed,
        "split": split,
        "projects": len(world.truth),
        "moved": len(world.superseded),
        "workplace_changed": len(timelines),
        "workplace_changed_twice": sum(len(t) > 2 for t in timelines.values()),
        "scores": {
            system: {kind: (sum(v), len(v)) for kind, v in kinds.items()}
            for system, kinds in scores.items()
        },
        "seats_counting_an_old_location": counted_old,
        "failures": failures,
    }


def _old_locations_counted(settings: Settings, world) -> list[str]:
    """Seats whose stored location counts hold a moved project's earlier location that no
    project of the seat holds now."""
    seat_of = {p["project_id"]: p["seat_id"] for p in world.projects}
    current: dict[str, set[str]] = {}
    for pid, truth in world.truth.items():
        current.setdefault(seat_of[pid], set()).add(_city(truth.location).lower())
    con = duckdb.connect(str(settings.duckdb_path), read_only=True)
    try:
        held = con.execute(
            "SELECT node_id, value FROM memory_facets WHERE key = 'location' "
            "AND starts_with(node_id, 'seat:')"
        ).fetchall()
    finally:
        con.close()
    out = []
    for pid, old in world.superseded.items():
        seat = seat_of[pid]
        city = _city(old).lower()
        if city in current[seat]:
            continue
        if any(n == f"seat:{seat}" and city in v.lower() for n, v in held):
            out.append(f"seat:{seat} ({_city(old)})")
    return out


def markdown(out: dict) -> str:
    lines = [
        f"time: seed {out['seed']}, {out['split']} phrasing, {out['projects']} projects, "
        f"{out['moved']} moved, {out['workplace_changed']} changed how they work "
        f"({out['workplace_changed_twice']} twice)",
        "",
        "| question | hltm | timeless memory |",
        "| --- | ---: | ---: |",
    ]
    for kind, (right, total) in out["scores"]["hltm"].items():
        base_right, _ = out["scores"]["timeless"][kind]
        lines.append(
            f"| {kind} | {right}/{total} = {right / total:.3f} | "
            f"{base_right}/{total} = {base_right / total:.3f} |"
        )
    counted = out["seats_counting_an_old_location"]
    lines.append("")
    lines.append(
        f"seats whose location counts hold a moved project's earlier location: {len(counted)}"
        + (f" ({', '.join(counted)})" if counted else "")
    )
    return "\n".join(lines)
