"""``hltm sample`` and ``hltm demo``: a generated recruiting world, as a snapshot or end to end."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from hltm_assets.cli.common import (
    EXIT_FAILED,
    add_progress_flags,
    built_sentence,
    settings_of,
    show_progress,
)
from hltm_resources.config import Settings


def cmd_sample(args: argparse.Namespace) -> int:
    from query.evaluation.data.sample_world import generate_world, write_snapshot

    world = generate_world(
        seed=args.seed,
        accounts=args.accounts,
        seats_per_account=args.seats,
        projects_per_seat=(args.min_projects, args.max_projects),
        split=args.split,
        variety="plain" if args.plain else "adversarial",
    )
    out = write_snapshot(world, args.directory)
    counts = ", ".join(f"{n} {name}" for name, n in world.counts().items())
    phrasing = "plain" if args.plain else f"adversarial, {args.split} split"
    print(f"wrote {counts} ({phrasing}) to {out}")
    if args.queries:
        from query.evaluation.data.sample_world import make_queries, write_queries

        queries = make_queries(world, seed=args.seed)
        write_queries(queries, args.queries)
        print(f"wrote {len(queries)} benchmark queries with gold answers to {args.queries}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from hltm_assets.runner import run_index
    from hltm_resources.indexing.loading import load_snapshot
    from hltm_resources.indexing.stats import format_stats, tree_stats
    from query.evaluation.data.sample_world import generate_world, write_snapshot

    settings = settings_of(args)
    t0 = time.perf_counter()
    world = generate_world(seed=args.seed, split=args.split, variety="adversarial")
    print(
        f"1. generated a recruiting world (seed {args.seed}, {args.split} split): "
        f"{len(world.accounts)} accounts, "
        f"{len(world.seats)} recruiters, {len(world.projects)} projects, "
        f"{len(world.documents)} documents (hltm sample DIR writes it as a snapshot)"
    )
    with tempfile.TemporaryDirectory(prefix="hltm-demo-") as tmp:
        report = load_snapshot(settings, write_snapshot(world, Path(tmp) / "snapshot"))
    print(f"2. loaded it into the source of truth ({report.leaves} projects)")
    result = run_index(settings, show_progress=show_progress(args))
    out = result.as_json()
    print(
        f"3. built memory through Dagster: {built_sentence(out).removeprefix('built ')} in "
        f"{out['seconds']:.1f} s ({out['dagster_runs']} runs, {out['embedded_texts']} texts "
        "embedded offline)"
    )
    print()
    print(format_stats(tree_stats(settings)))
    if result.failed:
        print("failed runs: " + "; ".join(result.failed), file=sys.stderr)
        return EXIT_FAILED
    _demo_questions(settings, world)
    print(
        f"\ndone in {time.perf_counter() - t0:.1f} s. Open the UI: hltm --home {settings.home} dev"
    )
    return 0


def _demo_questions(settings: Settings, world) -> None:
    """Ask a few questions at seat and account scope and print answers with citations."""
    from query import Memory
    from query.evaluation.data.sample_world import demo_questions

    mem = Memory.open(settings.home)
    print("\n4. questions answered from memory (offline engine):")
    for scope, question in demo_questions(world):
        r = mem.ask(question, scope=scope)
        refs = ", ".join(r.references) if r.references else "(none)"
        print(
            f"\n  [{scope}] {question}\n    -> {r.answer}\n    cites: {refs}  "
            f"({r.timings['retrieval_ms']:.0f} ms retrieval)"
        )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sample", help="write a generated recruiting snapshot")
    p.add_argument("directory")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--accounts", type=int, default=3)
    p.add_argument("--seats", type=int, default=4, help="seats per account")
    p.add_argument("--min-projects", type=int, default=8)
    p.add_argument("--max-projects", type=int, default=14)
    p.add_argument("--queries", help="also write benchmark queries with gold answers (JSONL)")
    _split_flag(p)
    p.add_argument(
        "--plain",
        action="store_true",
        help="one plain phrasing (the library default) instead of the adversarial banks",
    )
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("demo", help="generate, load, index and query a sample world (offline)")
    p.add_argument("--seed", type=int, default=7)
    _split_flag(p)
    add_progress_flags(p, forced=False)
    p.set_defaults(func=cmd_demo)


def _split_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--split",
        choices=["dev", "heldout"],
        default="dev",
        help="which half of the adversarial phrasing banks words the world (default dev)",
    )
