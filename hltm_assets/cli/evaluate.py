"""``hltm eval``: HLTM against the baselines on the hiring benchmark or a public one."""

from __future__ import annotations

import argparse
from pathlib import Path

from hltm_assets.cli.common import (
    CliError,
    add_progress_flags,
    print_json,
    settings_of,
    show_progress,
)


def cmd_eval(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    show = show_progress(args)
    if args.benchmark == "hiring":
        return _hiring(args, settings, show)
    if args.benchmark == "answers":
        return _answers(args, settings, show)
    if args.benchmark == "memory":
        return _memory(args, settings)
    if args.benchmark == "time":
        return _time(args, settings)
    from query.evaluation.reports.public import markdown
    from query.evaluation.runners.public import run_public

    if not args.data:
        raise CliError(f"--benchmark {args.benchmark} needs --data PATH")
    out = run_public(
        settings, args.benchmark, Path(args.data), limit=args.limit, show_progress=show
    )
    if args.json:
        print_json(out.scores)
    else:
        print(markdown(out))
    return 0


def _hiring(args: argparse.Namespace, settings, show: bool) -> int:
    from query.evaluation.reports.hiring import markdown_table
    from query.evaluation.runners.hiring import DEFAULT_SYSTEMS, eval_hiring

    systems = args.systems.split(",") if args.systems else DEFAULT_SYSTEMS
    eval_settings = settings.with_home(settings.home / "eval" / f"hiring-{args.seed}-{args.split}")
    if args.adaptation:
        from query.evaluation.reports.adaptation import markdown
        from query.evaluation.runners.adaptation import eval_adaptation

        # Builds the world (and answers one query) for eval_adaptation to read.
        eval_hiring(eval_settings, seed=args.seed, systems=(), limit=1, split=args.split)
        result = eval_adaptation(eval_settings, seed=args.seed)
        print_json(result) if args.json else print(markdown(result))
        return 0
    scores, info = eval_hiring(
        eval_settings,
        seed=args.seed,
        systems=systems,
        limit=args.limit,
        show_progress=show,
        split=args.split,
    )
    if args.json:
        print_json(scores)
    else:
        print(
            f"hiring benchmark: seed {info['seed']}, split {info['split']} "
            f"({info['variety']}), {info['queries']} queries, home {eval_settings.home}\n"
        )
        print(markdown_table(scores, judged=info["judged"]))
    return 0


def _answers(args: argparse.Namespace, settings, show: bool) -> int:
    from query.evaluation.reports.answers import answers_table, failures_text
    from query.evaluation.runners.answers import ANSWER_SYSTEMS, WORLDS, eval_answers

    world = args.world or "demo"
    data = Path(args.data or Path("tests") / "fixtures" / "answers" / f"{world}.jsonl")
    if not data.is_file():
        raise CliError(
            f"no questions at {data}: pass --data FILE (JSONL, see tests/fixtures/answers/"
            f"README.md) or run from the repository root; worlds: {', '.join(WORLDS)}"
        )
    systems = args.systems.split(",") if args.systems else ANSWER_SYSTEMS
    bar = None
    if show:
        from tqdm import tqdm

        bar = tqdm(total=len(data.read_text().splitlines()) * len(systems), unit="q")
    out = eval_answers(
        settings, data, world=world, systems=systems, progress=bar.update if bar else None
    )
    if bar:
        bar.close()
    if args.json:
        print_json(out)
        return 0
    made = (
        f"snapshot {out['snapshot']}"
        if "snapshot" in out
        else f"seed {out['seed']}, {out['split']} phrasing"
    )
    print(
        f"answers a person can check: world {world} ({made}), {out['questions']} "
        f"hand-written questions from {data}\n"
    )
    print(answers_table(out))
    if args.show_failures:
        print("\nhltm's answers not fully right:\n" + failures_text(out))
    return 0


def _memory(args: argparse.Namespace, settings) -> int:
    from query.evaluation.reports.answers import memory_table
    from query.evaluation.runners.answers import eval_memory

    out = eval_memory(settings, args.seed, args.split)
    print_json(out) if args.json else print(memory_table(out))
    return 0


def _time(args: argparse.Namespace, settings) -> int:
    from query.evaluation.runners.time import eval_time, markdown

    home = settings.home / "eval" / f"time-{args.seed}-{args.split}"
    out = eval_time(settings.with_home(home), args.seed, args.split)
    print_json(out) if args.json else print(markdown(out))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate HLTM against baselines on a benchmark")
    p.add_argument(
        "--benchmark",
        choices=["hiring", "answers", "memory", "time", "locomo", "longmemeval"],
        default="hiring",
        help="hiring: generated queries against the baselines; answers: hand-written questions "
        "scored on whether the answer states the fact; memory: stored leaf facts against the "
        "generator's truth; time: current and as-of questions on a world whose projects "
        "moved; locomo / longmemeval: public sets (--data)",
    )
    p.add_argument(
        "--data",
        help="dataset file (locomo / longmemeval); answers: the questions (default "
        "tests/fixtures/answers/<world>.jsonl)",
    )
    p.add_argument(
        "--world",
        choices=[
            "demo",
            "heldout",
            "handmade",
            "handmade2",
            "handmade3",
            "handmade4",
            "handmade5",
            "handmade6",
            "handmade7",
            "handmade8",
            "handmade9",
            "handmade10",
            "handmade11",
        ],
        help="answers: the world the questions are about (default demo)",
    )
    p.add_argument(
        "--show-failures", action="store_true", help="answers: print what was answered wrong"
    )
    p.add_argument("--seed", type=int, default=11, help="world seed (hiring, memory)")
    p.add_argument(
        "--split",
        choices=["dev", "heldout"],
        default="heldout",
        help="hiring, memory: which half of the phrasing banks words the world and its "
        "questions (tune on dev, report on heldout; default heldout)",
    )
    p.add_argument("--systems", help="comma-separated systems (default: all)")
    p.add_argument(
        "--limit",
        type=int,
        help="hiring: first N queries; locomo: first N "
        "conversations; longmemeval: N questions, round-robin over question types",
    )
    p.add_argument(
        "--adaptation",
        action="store_true",
        help="hiring: before/after adaptation, hints mined from a training half of "
        "the scopes, measured on the other half",
    )
    p.add_argument("--json", action="store_true", help="one JSON object keyed by system")
    add_progress_flags(p, forced=False)
    p.set_defaults(func=cmd_eval)
