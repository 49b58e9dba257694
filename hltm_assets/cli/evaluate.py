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


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate HLTM against baselines on a benchmark")
    p.add_argument("--benchmark", choices=["hiring", "locomo", "longmemeval"], default="hiring")
    p.add_argument("--data", help="dataset file (locomo / longmemeval)")
    p.add_argument("--seed", type=int, default=11, help="world seed (hiring)")
    p.add_argument(
        "--split",
        choices=["dev", "heldout"],
        default="heldout",
        help="hiring: which half of the phrasing banks words the world and its questions "
        "(tune on dev, report on heldout; default heldout)",
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
