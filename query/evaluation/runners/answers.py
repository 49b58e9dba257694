"""Answers a person can check, and memory accuracy, on generated worlds.

- :func:`eval_answers`: the hand-written questions of a world (``tests/fixtures/answers``)
  asked of HLTM and of the baselines, each answer scored on whether it states the gold fact
  and cites its node (:mod:`query.evaluation.answers`).
- :func:`eval_memory`: every stored leaf facet of a world against the generator's latent
  truth (:mod:`query.evaluation.memory_accuracy`).

Both build the world's memory once under the home (``eval/<world>``) and reuse it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from hltm_resources.config import Settings
from hltm_resources.indexing.loading import load_and_build
from hltm_resources.stores import database
from query.evaluation import answers as scoring
from query.evaluation.data.sample_world import World, generate_world, write_snapshot
from query.evaluation.memory_accuracy import memory_accuracy
from query.memory import Memory

#: The worlds the hand-written questions were written over: ``demo`` is what ``hltm demo``
#: builds (seed 7, dev phrasing); ``heldout`` a world of the held-out phrasing half;
#: ``handmade`` a snapshot written by hand, independent of the generator (its directory
#: under ``tests/fixtures/answers``); ``handmade2`` to ``handmade11`` others, by other hands
#: (which were read and which only reported: ``tests/fixtures/answers/README.md``).
WORLDS: dict[str, tuple[int, str] | str] = {
    "demo": (7, "dev"),
    "heldout": (29, "heldout"),
    "handmade": "handmade/snapshot",
    "handmade2": "handmade2/snapshot",
    "handmade3": "handmade3/snapshot",
    "handmade4": "handmade4/snapshot",
    "handmade5": "handmade5/snapshot",
    "handmade6": "handmade6/snapshot",
    "handmade7": "handmade7/snapshot",
    "handmade8": "handmade8/snapshot",
    "handmade9": "handmade9/snapshot",
    "handmade10": "handmade10/snapshot",
    "handmade11": "handmade11/snapshot",
}
ANSWER_SYSTEMS = ("hltm", "flat_rag", "full_context")


def world_home(settings: Settings, seed: int, split: str) -> tuple[Settings, World]:
    """The home holding the memory of the adversarial world ``seed``/``split`` (built the
    first time), and the world."""
    home = settings.with_home(settings.home / "eval" / f"world-{seed}-{split}")
    world = generate_world(seed=seed, split=split, variety="adversarial")
    marker = home.home / "eval-world.txt"
    stamp = f"seed={seed} split={split} variety=adversarial"
    if not marker.exists() or marker.read_text() != stamp:
        snapshot = write_snapshot(world, home.home / "snapshot")
        load_and_build(home, snapshot)
        marker.write_text(stamp)
    return home, world


def snapshot_home(settings: Settings, snapshot: Path) -> Settings:
    """The home holding the memory of a hand-written snapshot (built when it changed)."""
    home = settings.with_home(settings.home / "eval" / f"snapshot-{snapshot.parent.name}")
    stamp = "\n".join(
        f"{f.name}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in sorted(snapshot.iterdir())
    )
    marker = home.home / "eval-world.txt"
    if not marker.exists() or marker.read_text() != stamp:
        load_and_build(home, snapshot)
        marker.write_text(stamp)
    return home


def eval_answers(
    settings: Settings,
    questions_path: Path,
    world: str = "demo",
    systems: Sequence[str] = ANSWER_SYSTEMS,
    progress: Callable[[int], None] | None = None,
) -> dict:
    """Ask every question of every system; per system, the scores per family, scope level
    and tag (:func:`query.evaluation.answers.summarize`), latency, and the failures."""
    from query.evaluation.runners.hiring import HiringHarness

    where = WORLDS[world]
    if isinstance(where, str):
        snapshot = questions_path.parent / where
        home = snapshot_home(settings, snapshot)
        out: dict = {"world": world, "snapshot": str(snapshot)}
    else:
        seed, split = where
        home, _ = world_home(settings, seed, split)
        out = {"world": world, "seed": seed, "split": split}
    questions = scoring.load(questions_path)
    out["questions"] = len(questions)
    memory = Memory(home, log_queries=False)
    harness = HiringHarness(memory, systems=[s for s in systems if s != "hltm"])
    results: dict[str, dict] = {}
    for system in systems:
        scores: dict[str, float] = {}
        answers: dict[str, tuple[str, list[str]]] = {}
        latency: list[float] = []
        for q in questions:
            t0 = time.perf_counter()
            if system == "hltm":
                r = memory.ask(q["question"], scope=q["scope"])
                answer, refs = r.answer, r.references
            else:
                o = harness.run_query(system, {**q, "query_id": q["id"]})
                answer, refs = o.answer, o.references
            latency.append((time.perf_counter() - t0) * 1000)
            scores[q["id"]] = scoring.score(q, answer, refs)
            answers[q["id"]] = (answer, refs)
            if progress:
                progress(1)
        latency.sort()
        results[system] = {
            "scores": scoring.summarize(questions, scores),
            "latency_p50_ms": round(latency[len(latency) // 2], 2),
            "failures": scoring.failures(questions, scores, answers),
        }
    memory.close()
    out["systems"] = results
    return out


def eval_memory(settings: Settings, seed: int, split: str) -> dict:
    """Stored leaf facts of a generated world against its latent truth."""
    home, world = world_home(settings, seed, split)
    leaf = home.schema.leaf.name
    with database.connect(home.duckdb_path, read_only=True) as con:
        rows = con.execute(
            "SELECT node_id, key, value FROM memory_facets WHERE node_id LIKE ?", [f"{leaf}:%"]
        ).fetchall()
    facets: dict[str, list[tuple[str, str]]] = {}
    for node, key, value in rows:
        facets.setdefault(node.split(":", 1)[1], []).append((key, value))
    negated = {pid: ann.get("negated", []) for pid, ann in world.annotations.items()}
    result = memory_accuracy(facets, world.truth, negated).as_dict()
    return {"seed": seed, "split": split, "leaves": len(world.truth), **result}
