"""The ``hltm`` command line. Heavy imports happen inside each command, so ``hltm ask`` never
loads Dagster."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from hltm_resources.config import Settings

EXIT_USAGE = 2
EXIT_FAILED = 1


class CliError(Exception):
    """An error to report in one line (no traceback)."""


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.from_env(home=args.home)


def _print_json(obj: object) -> None:
    print(json.dumps(obj, indent=None, ensure_ascii=False, default=str))


# -- commands ---------------------------------------------------------------------------------


def cmd_load(args: argparse.Namespace) -> int:
    from hltm_resources.build.loading import load_snapshot

    settings = _settings(args)
    report = load_snapshot(settings, args.directory)
    if args.json:
        _print_json(report.as_dict())
    else:
        d = report.as_dict()
        print(
            f"loaded {args.directory} into {settings.duckdb_path}: {d['accounts']} accounts, "
            f"{d['seats']} seats, {d['projects']} projects, {d['documents']} documents "
            f"(projects added {d['projects_added']}, changed {d['projects_changed']}, "
            f"deleted {d['projects_deleted']}, moved {d['projects_moved']})"
        )
        print("next: hltm index")
        if (
            d["projects_added"]
            or d["projects_deleted"]
            or d["projects_moved"]
            or d["seats_deleted"]
            or d["accounts_deleted"]
        ):
            print(
                "the tree changed: if dagster dev is running, reload its code location "
                "(hltm reload) so its partitions follow; its sensor waits until then"
            )
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    from hltm_assets.resources import shared_indexer
    from hltm_assets.runner import run_index

    settings = _settings(args)
    if args.dry_run:
        plan = shared_indexer(settings).plan(full=args.full)
        if args.json:
            _print_json(plan.as_dict())
        else:
            for level in ("project", "seat", "account"):
                for item in plan.build[level]:
                    print(f"build {item.node_id}: {item.reason}")
            for node in plan.purge:
                print(f"purge {node}: no longer in the source of truth")
            c = plan.counts()
            print(
                f"would build {c['leaves']} leaves, {c['seats']} seats, {c['accounts']} "
                f"accounts; purge {c['purged']}"
            )
        return 0
    show = not args.json and not args.no_progress and sys.stderr.isatty() or args.progress
    result = run_index(
        settings, full=args.full, show_progress=show, reset_vectors=args.reset_vectors
    )
    out = result.as_json()
    if args.json:
        _print_json(out)
    else:
        print(
            f"built {out['leaves_built']} leaves, {out['seats_built']} seats, "
            f"{out['accounts_built']} accounts in {out['seconds']:.1f} s "
            f"({out['engine_calls']} engine calls, {out['llm_calls']} LLM calls, "
            f"{out['dagster_runs']} Dagster runs)"
        )
    if result.failed:
        print("failed runs: " + "; ".join(result.failed), file=sys.stderr)
        return EXIT_FAILED
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    from query import Memory

    settings = _settings(args)
    if args.queries:
        if not args.out:
            raise CliError("--queries needs --out FILE (JSONL answers)")
        from query.batch import answer_batch

        show = not args.no_progress and sys.stderr.isatty() or args.progress
        summary = answer_batch(settings, Path(args.queries), Path(args.out), show_progress=show)
        for problem in summary["problems"]:
            print(f"hltm: {problem}", file=sys.stderr)
        print(
            f"answered {summary['answered']} of {summary['lines']} queries -> {args.out}"
            + (f" ({len(summary['problems'])} bad lines skipped)" if summary["problems"] else ""),
            file=sys.stderr,
        )
        return EXIT_FAILED if summary["problems"] else 0
    if not args.question or not args.scope:
        raise CliError("ask needs a question and --scope NODE (or --queries FILE --out FILE)")
    with Memory(settings) as mem:
        result = mem.ask(args.question, scope=args.scope)
    if args.json:
        _print_json(result.as_dict())
    else:
        print(result.answer)
        print(f"references: {', '.join(result.references) or '(none)'}")
        t = result.timings
        print(
            f"retrieval {t['retrieval_ms']:.0f} ms, answer {t['answer_ms']:.0f} ms, "
            f"LLM calls {result.llm_calls}"
        )
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from hltm_assets.runner import run_index
    from hltm_resources.build.deletion import delete_node

    settings = _settings(args)
    report = delete_node(settings, args.node)
    out = report.as_dict()
    if not args.no_rebuild:
        result = run_index(settings)
        out["rebuilt"] = {
            k: v
            for k, v in result.as_json().items()
            if k in ("leaves_built", "seats_built", "accounts_built", "failed_runs")
        }
    if args.json:
        _print_json(out)
    else:
        print(
            f"deleted {out['node_id']}: {out['projects_deleted']} projects, "
            f"{out['documents_deleted']} documents; memory rows, vectors (every table "
            "version), cached replies and query-log rows erased"
        )
        if "rebuilt" in out:
            print(f"rebuilt ancestors: {', '.join(out['ancestors_to_rebuild']) or 'none'}")
        else:
            print("ancestors emptied and marked for rebuild: run hltm index")
    return EXIT_FAILED if out.get("rebuilt", {}).get("failed_runs") else 0


def cmd_verify(args: argparse.Namespace) -> int:
    from hltm_resources.build.verify import verify

    report = verify(_settings(args))
    if args.json:
        _print_json(report.as_dict())
    else:
        state = "identical to" if report.ok else "DIFFERENT from"
        print(
            f"memory is {state} a full rebuild of the source of truth: {report.identical} of "
            f"{report.nodes} nodes identical"
        )
        for node, why in sorted({**report.differences, **report.vector_mismatches}.items())[:50]:
            print(f"  {node}: {why}")
    return 0 if report.ok else EXIT_FAILED


def cmd_adapt(args: argparse.Namespace) -> int:
    from hltm_resources.build import adaptation

    settings = _settings(args)
    if args.approve is not None:
        proposal = adaptation.approve(settings, args.approve)
        from hltm_assets.resources import forget_indexers, shared_indexer

        forget_indexers()
        stale = shared_indexer(settings).plan().counts()
        out = {"approved": proposal.version, "stale": stale}
        if args.json:
            _print_json(out)
        else:
            print(
                f"hints v{proposal.version} are active ({len(proposal.patterns)} patterns, "
                f"{len(proposal.facets)} facet names); memory to rebuild: {stale['leaves']} "
                f"leaves, {stale['seats']} seats, {stale['accounts']} accounts (hltm index, or "
                "the sensor under dagster dev)"
            )
        return 0
    if not args.review:
        auto = args.auto_approve or os.environ.get("HLTM_ADAPT_AUTO_APPROVE") == "1"
        params = adaptation.MiningParams(
            window_days=args.window_days, min_queries=args.min_queries, min_scopes=args.min_scopes
        )
        proposal, created = adaptation.propose(settings, params, auto_approve=auto)
        if not args.json:
            if created:
                print(
                    f"mined {proposal.queries} distinct queries: proposal v{proposal.version} "
                    f"({proposal.status}) with {len(proposal.patterns)} patterns and "
                    f"{len(proposal.facets)} facet names"
                )
            else:
                print("the query log supports the hints already active; nothing new to propose")
    view = adaptation.review(settings)
    if args.json:
        _print_json(view)
        return 0
    if view["version"] is None:
        print("no proposal yet: run hltm adapt (after some hltm ask)")
        return 0
    print(
        f"proposal v{view['version']} ({view['status']}; active: "
        f"{'v' + str(view['active_version']) if view['active_version'] else 'none'}), "
        f"from {view['queries']} distinct queries"
    )
    for p in view["patterns"]:
        mark = "+" if p["pattern"] in view["diff"]["patterns_added"] else " "
        print(
            f" {mark} pattern {p['pattern']!r}: {p['support_queries']} queries, "
            f"{p['support_scopes']} scopes"
        )
    for f in view["facets"]:
        mark = "+" if f["key"] in view["diff"]["facets_added"] else " "
        print(
            f" {mark} facet {f['key']}: {f['support_queries']} queries, "
            f"{f['support_scopes']} scopes"
        )
    for p in view["diff"]["patterns_removed"]:
        print(f" - pattern {p!r}")
    for f in view["diff"]["facets_removed"]:
        print(f" - facet {f}")
    if view["status"] == "proposed":
        print(f"approve with: hltm adapt --approve {view['version']}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from hltm_resources.build.stats import format_stats, tree_stats

    stats = tree_stats(_settings(args))
    if args.json:
        _print_json(stats)
    else:
        print(format_stats(stats))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from hltm_resources.build.checks import check_level

    settings = _settings(args)
    failed = False
    results = {}
    for level in ("project", "seat", "account"):
        r = check_level(settings, level)
        results[level] = {"nodes": r.nodes, "problems": r.problems}
        failed |= not r.passed
        if not args.json:
            status = "ok" if r.passed else f"{len(r.problems)} problems"
            print(f"{level}: {r.nodes} nodes, {status}")
            for node, problem in sorted(r.problems.items())[:20]:
                print(f"  {node}: {problem}")
    if args.json:
        _print_json(results)
    return EXIT_FAILED if failed else 0


def cmd_sample(args: argparse.Namespace) -> int:
    from query.evaluation.data.sample_world import generate_world, write_snapshot

    world = generate_world(
        seed=args.seed,
        accounts=args.accounts,
        seats_per_account=args.seats,
        projects_per_seat=(args.min_projects, args.max_projects),
    )
    out = write_snapshot(world, args.directory)
    print(
        f"wrote {len(world.accounts)} accounts, {len(world.seats)} seats, "
        f"{len(world.projects)} projects, {len(world.documents)} documents to {out}"
    )
    if args.queries:
        from query.evaluation.data.sample_world import make_queries, write_queries

        queries = make_queries(world, seed=args.seed)
        write_queries(queries, args.queries)
        print(f"wrote {len(queries)} benchmark queries with gold answers to {args.queries}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from hltm_assets.runner import run_index
    from hltm_resources.build.loading import load_snapshot
    from hltm_resources.build.stats import format_stats, tree_stats
    from query.evaluation.data.sample_world import generate_world, write_snapshot

    settings = _settings(args)
    t0 = time.perf_counter()
    world = generate_world(seed=args.seed)
    print(
        f"1. generated a recruiting world (seed {args.seed}): {len(world.accounts)} accounts, "
        f"{len(world.seats)} recruiters, {len(world.projects)} projects, "
        f"{len(world.documents)} documents (hltm sample DIR writes it as a snapshot)"
    )
    with tempfile.TemporaryDirectory(prefix="hltm-demo-") as tmp:
        report = load_snapshot(settings, write_snapshot(world, Path(tmp) / "snapshot"))
    print(f"2. loaded it into the source of truth ({report.projects} projects)")
    show = sys.stderr.isatty() and not args.no_progress
    result = run_index(settings, show_progress=show)
    out = result.as_json()
    print(
        f"3. built memory through Dagster: {out['leaves_built']} leaves, {out['seats_built']} "
        f"seats, {out['accounts_built']} accounts in {out['seconds']:.1f} s "
        f"({out['dagster_runs']} runs, {out['embedded_texts']} texts embedded offline)"
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
    try:
        from query import Memory
    except ImportError:  # pragma: no cover - query is part of the package
        return
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


def cmd_bench(args: argparse.Namespace) -> int:
    from hltm_assets.cli import bench

    if args.which == "index":
        result = bench.bench_index(seed=args.seed)
    elif args.which == "query":
        result = bench.bench_query(seed=args.seed)
    elif args.which == "incremental":
        result = bench.bench_incremental()
    else:  # pragma: no cover - argparse restricts choices
        raise CliError(f"unknown benchmark {args.which}")
    _print_json(result) if args.json else print(json.dumps(result, indent=2))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    settings = _settings(args)
    show = not args.json and not args.no_progress and sys.stderr.isatty()
    if args.benchmark == "hiring":
        from query.evaluation.runners.build import eval_hiring
        from query.evaluation.runners.hiring import DEFAULT_SYSTEMS, markdown_table

        systems = args.systems.split(",") if args.systems else DEFAULT_SYSTEMS
        eval_settings = settings.with_home(settings.home / "eval" / f"hiring-{args.seed}")
        if args.adaptation:
            from query.evaluation.runners.adaptation import eval_adaptation, markdown

            eval_hiring(eval_settings, seed=args.seed, systems=(), limit=1)  # builds the world
            result = eval_adaptation(eval_settings, seed=args.seed)
            _print_json(result) if args.json else print(markdown(result))
            return 0
        scores, info = eval_hiring(
            eval_settings, seed=args.seed, systems=systems, limit=args.limit, show_progress=show
        )
        if args.json:
            _print_json(scores)
        else:
            print(
                f"hiring benchmark: seed {info['seed']}, {info['queries']} queries, "
                f"home {eval_settings.home}\n"
            )
            print(markdown_table(scores, judged=info["judged"]))
        return 0
    from query.evaluation.runners.public import run_public

    if not args.data:
        raise CliError(f"--benchmark {args.benchmark} needs --data PATH")
    out = run_public(
        settings, args.benchmark, Path(args.data), limit=args.limit, show_progress=show
    )
    if args.json:
        _print_json(out["json"])
    else:
        print(out["markdown"])
    return 0


def cmd_dev(args: argparse.Namespace) -> int:
    """Start ``dagster dev`` on this home (same storage as the CLI)."""
    import subprocess

    settings = _settings(args)
    settings.home.mkdir(parents=True, exist_ok=True)
    # DAGSTER_HOME unset and the repo root as working directory: `dagster dev` then reads the
    # repo's dagster.yaml, which keeps Dagster's storage in $HLTM_HOME (the CLI's instance).
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env["HLTM_HOME"] = str(settings.home)
    root = Path(__file__).resolve().parent.parent
    cmd = [
        str(Path(sys.executable).with_name("dagster")),
        "dev",
        "-w",
        str(root / "workspace.yaml"),
        "-p",
        str(args.port),
    ]
    print(f"starting: HLTM_HOME={settings.home} {' '.join(cmd)}")
    return subprocess.call(cmd, env=env, cwd=root)


def cmd_reload(args: argparse.Namespace) -> int:
    """Reload the code location of a running ``dagster dev`` after the tree changed."""
    from dagster_graphql import DagsterGraphQLClient

    client = DagsterGraphQLClient(args.host, port_number=args.port)
    info = client.reload_repository_location(args.location)
    print(f"reload of {args.location}: {info.status}")
    return 0 if str(info.status).endswith("SUCCESS") else EXIT_FAILED


# -- parser -----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hltm", description="Hierarchical long-term semantic memory for LLM agents."
    )
    parser.add_argument(
        "--home", default=None, help="memory home (default: $HLTM_HOME, else ./.hltm)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("load", help="validate and load a snapshot directory into the SOT")
    p.add_argument("directory")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_load)

    p = sub.add_parser("index", help="build every node whose inputs changed (through Dagster)")
    p.add_argument("--full", action="store_true", help="rebuild every node")
    p.add_argument(
        "--reset-vectors",
        action="store_true",
        help="drop the vector tables and rebuild everything (after changing the embedding model)",
    )
    p.add_argument("--dry-run", action="store_true", help="list what would be built and why")
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "--progress",
        action="store_true",
        help="draw the progress bar even if stderr is not a terminal",
    )
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("ask", help="answer a question from memory, scoped to a node")
    p.add_argument("question", nargs="?")
    p.add_argument("--scope", help="node id: account:<id>, seat:<id> or project:<id>")
    p.add_argument("--json", action="store_true", help="answer, references, contexts, timings")
    p.add_argument("--queries", help="JSONL with query_id, scope, question per line")
    p.add_argument("--out", help="JSONL answers for --queries")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--progress", action="store_true")
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser(
        "delete", help="erase a project, seat or account everywhere, rebuild its ancestors"
    )
    p.add_argument("node", help="project:<id>, seat:<id> or account:<id>")
    p.add_argument(
        "--no-rebuild",
        action="store_true",
        help="only erase (ancestors stay empty until the next hltm index)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser("adapt", help="mine the query log into hints (patterns, facet names)")
    p.add_argument("--review", action="store_true", help="show the latest proposal and its diff")
    p.add_argument("--approve", type=int, metavar="VERSION", help="activate a proposal")
    p.add_argument(
        "--auto-approve",
        action="store_true",
        help="activate what is mined (also HLTM_ADAPT_AUTO_APPROVE=1)",
    )
    p.add_argument("--window-days", type=float, default=30.0)
    p.add_argument(
        "--min-queries",
        type=int,
        default=3,
        help="minimum distinct questions supporting a pattern or facet name",
    )
    p.add_argument(
        "--min-scopes",
        type=int,
        default=2,
        help="minimum distinct scopes supporting a pattern or facet name",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_adapt)

    p = sub.add_parser("verify", help="compare memory with a full rebuild of the SOT, by node")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("stats", help="nodes and items per level and view")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("check", help="every node has all views and matching vectors")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("sample", help="write a generated recruiting snapshot")
    p.add_argument("directory")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--accounts", type=int, default=3)
    p.add_argument("--seats", type=int, default=4, help="seats per account")
    p.add_argument("--min-projects", type=int, default=8)
    p.add_argument("--max-projects", type=int, default=14)
    p.add_argument("--queries", help="also write benchmark queries with gold answers (JSONL)")
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("demo", help="generate, load, index and query a sample world (offline)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("eval", help="evaluate HLTM against baselines on a benchmark")
    p.add_argument("--benchmark", choices=["hiring", "locomo", "longmemeval"], default="hiring")
    p.add_argument("--data", help="dataset file (locomo / longmemeval)")
    p.add_argument("--seed", type=int, default=11, help="world seed (hiring)")
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
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("bench", help="speed benchmarks (results go in BENCHMARKS.md)")
    p.add_argument("which", choices=["index", "query", "incremental"])
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("dev", help="start dagster dev on this home")
    p.add_argument("--port", type=int, default=3000)
    p.set_defaults(func=cmd_dev)

    p = sub.add_parser("reload", help="reload the code location of a running dagster dev")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=3000)
    p.add_argument("--location", default="hltm_assets.definitions")
    p.set_defaults(func=cmd_reload)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from hltm_resources.errors import USER_ERRORS

    try:
        return args.func(args)
    except (CliError, *USER_ERRORS) as exc:
        print(f"hltm: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("hltm: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
