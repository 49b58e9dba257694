"""``hltm eval``: build a benchmark's memory, run every system, print the table or JSON."""

from __future__ import annotations

from pathlib import Path

from hltm_resources.build.indexer import Indexer
from hltm_resources.build.loading import load_snapshot
from hltm_resources.config import Settings
from query.evaluation.runners.hiring import DEFAULT_SYSTEMS, HiringHarness, load_queries
from query.memory import Memory


def build_memory(settings: Settings, snapshot: Path) -> None:
    """Load a snapshot and build its memory with the plain indexer (what the assets call)."""
    load_snapshot(settings, snapshot)
    indexer = Indexer(settings)
    for level in ("project", "seat", "account"):
        indexer.build(level, indexer.plan().keys(level))


def eval_hiring(
    settings: Settings,
    seed: int = 11,
    systems=DEFAULT_SYSTEMS,
    limit: int | None = None,
    show_progress: bool = False,
    queries_path: Path | None = None,
) -> tuple[dict, dict]:
    """Generate a world (unless the home already holds it), build, evaluate."""
    from query.evaluation.data.sample_world import (
        generate_world,
        make_queries,
        write_queries,
        write_snapshot,
    )

    home = settings.home
    marker = home / "eval-world.txt"
    if not marker.exists() or marker.read_text() != str(seed):
        world = generate_world(seed=seed)
        snapshot = write_snapshot(world, home / "snapshot")
        build_memory(settings, snapshot)
        write_queries(make_queries(world, seed=seed), home / "queries.jsonl")
        marker.write_text(str(seed))
    queries = load_queries(queries_path or home / "queries.jsonl")
    if limit:
        queries = queries[:limit]
    judge = None
    memory = Memory(settings, log_batch=200)
    if settings.engine != "extractive":
        judge = memory.agents.judge  # type: ignore[attr-defined]
    harness = HiringHarness(memory, systems=systems, judge=judge)
    bar = None
    if show_progress:
        from tqdm import tqdm

        bar = tqdm(total=len(queries), desc="queries", unit="q")
    results = harness.run(queries, progress=bar.update if bar else None)
    if bar:
        bar.close()
    return harness.score(queries, results), {
        "queries": len(queries),
        "seed": seed,
        "judged": judge is not None,
    }
