"""What is true now and what was true then, on a generated hiring world.

In the generator's world some projects moved: an earlier requisition, dated a year before the
project's other documents, gives another location (``World.superseded``). Per project, at
its own scope, the question "Where is the role located?" is asked:

- **now**: the current location is right, the earlier one named is wrong;
- **as of the earlier requisition's date**: the earlier location (moved projects only);
- **as of the project's date**: the current location;
- **as of the day before any document**: nothing is known.

The baseline is the same memory without time: it answers every as-of question with what
holds now (what a memory that keeps one value per attribute says whatever the date).
At each seat, the stored location counts must hold no earlier location of a moved project
that no project of the seat holds now (summaries count current values only).
"""

from __future__ import annotations

from datetime import date, timedelta

import duckdb

from hltm_resources.build.loading import load_and_build
from hltm_resources.config import Settings
from query.evaluation.data.sample_world import generate_world, write_snapshot
from query.memory import Memory

QUESTION = "Where is the role located?"


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


def eval_time(settings: Settings, seed: int = 11, split: str = "heldout") -> dict:
    """Scores per question kind for HLTM and the timeless baseline (see the module)."""
    world = generate_world(seed=seed, split=split, variety="adversarial")
    home = settings.home
    marker = home / "time-world.txt"
    stamp = f"seed={seed} split={split}"
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
    counted_old = _old_locations_counted(settings, world)
    return {
        "seed": seed,
        "split": split,
        "projects": len(world.truth),
        "moved": len(world.superseded),
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
        f"{out['moved']} moved",
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
