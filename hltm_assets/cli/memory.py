"""Commands that build and keep memory: load, index, delete, verify, check, stats."""

from __future__ import annotations

import argparse
import sys

from hltm_assets.cli.common import (
    EXIT_FAILED,
    add_progress_flags,
    built_sentence,
    print_json,
    settings_of,
    show_progress,
)


def cmd_load(args: argparse.Namespace) -> int:
    from hltm_resources.indexing.loading import load_snapshot

    settings = settings_of(args)
    report = load_snapshot(settings, args.directory, rebuild=args.rebuild)
    d = report.as_dict()
    if args.json:
        print_json(d)
        return 0
    schema = settings.schema
    counts = ", ".join(f"{d[name]} {name}" for name in report.counts)
    leaves = schema.leaf.plural
    changes = ", ".join(
        f"{what} {d[f'{leaves}_{what}']}" for what in ("added", "changed", "deleted", "moved")
    )
    print(f"loaded {args.directory} into {settings.duckdb_path}: {counts} ({leaves} {changes})")
    print("next: hltm index")
    if report.tree_changed:
        print(
            "the tree changed: if dagster dev is running, reload its code location "
            "(hltm reload) so its partitions follow; its sensor waits until then"
        )
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    from hltm_assets.runner import run_index
    from hltm_resources.indexing.indexer import Indexer

    settings = settings_of(args)
    if args.dry_run:
        plan = Indexer(settings).plan(full=args.full)
        if args.json:
            print_json(plan.as_dict())
            return 0
        for level in settings.schema.bottom_up:
            for item in plan.build[level]:
                print(f"build {item.node_id}: {item.reason}")
        for node in plan.purge:
            print(f"purge {node}: no longer in the source of truth")
        counts = plan.counts()
        purged = counts.pop("purged")
        print(
            "would build " + ", ".join(f"{v} {k}" for k, v in counts.items()) + f"; purge {purged}"
        )
        return 0
    result = run_index(
        settings,
        full=args.full,
        show_progress=show_progress(args),
        reset_vectors=args.reset_vectors,
    )
    out = result.as_json()
    if args.json:
        print_json(out)
    else:
        print(
            f"{built_sentence(out)} in {out['seconds']:.1f} s ({out['engine_calls']} engine "
            f"calls, {out['llm_calls']} LLM calls, {out['dagster_runs']} Dagster runs)"
        )
    if result.failed:
        print("failed runs: " + "; ".join(result.failed), file=sys.stderr)
        return EXIT_FAILED
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from hltm_assets.runner import run_index
    from hltm_resources.indexing.deletion import delete_node
    from hltm_resources.stores.lock import home_lock

    settings = settings_of(args)
    with home_lock(settings, "delete"):  # no other writer between erasure and rebuild
        report = delete_node(settings, args.node)
        out = report.as_dict()
        if not args.no_rebuild:
            built = run_index(settings).as_json()
            out["rebuilt"] = {k: v for k, v in built.items() if k.endswith("_built")} | {
                "failed_runs": built["failed_runs"]
            }
    if args.json:
        print_json(out)
    else:
        leaves = settings.schema.leaf.plural
        print(
            f"deleted {out['node_id']}: {out[f'{leaves}_deleted']} {leaves}, "
            f"{out['documents_deleted']} documents; memory rows, vectors (every table "
            "version), cached replies and query-log rows erased"
        )
        if "rebuilt" in out:
            print(f"rebuilt ancestors: {', '.join(out['ancestors_to_rebuild']) or 'none'}")
        else:
            print("ancestors emptied and marked for rebuild: run hltm index")
    return EXIT_FAILED if out.get("rebuilt", {}).get("failed_runs") else 0


def cmd_verify(args: argparse.Namespace) -> int:
    from hltm_resources.indexing.verify import verify

    report = verify(settings_of(args))
    if args.json:
        print_json(report.as_dict())
    else:
        state = "identical to" if report.ok else "DIFFERENT from"
        print(
            f"memory is {state} a full rebuild of the source of truth: {report.identical} of "
            f"{report.nodes} nodes identical"
        )
        for node, why in sorted({**report.differences, **report.vector_mismatches}.items())[:50]:
            print(f"  {node}: {why}")
    return 0 if report.ok else EXIT_FAILED


def cmd_stats(args: argparse.Namespace) -> int:
    from hltm_resources.indexing.stats import format_stats, tree_stats

    stats = tree_stats(settings_of(args))
    if args.json:
        print_json(stats)
    else:
        print(format_stats(stats))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from hltm_resources.indexing.checks import check_level

    settings = settings_of(args)
    failed = False
    results = {}
    for level in settings.schema.bottom_up:
        r = check_level(settings, level)
        results[level] = {"nodes": r.nodes, "problems": r.problems}
        failed |= not r.passed
        if not args.json:
            status = "ok" if r.passed else f"{len(r.problems)} problems"
            print(f"{level}: {r.nodes} nodes, {status}")
            for node, problem in sorted(r.problems.items())[:20]:
                print(f"  {node}: {problem}")
    if args.json:
        print_json(results)
    return EXIT_FAILED if failed else 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("load", help="validate and load a snapshot directory into the SOT")
    p.add_argument("directory")
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="distributed deployment: drop the lake (catalog and objects) and start over from "
        "this snapshot, after its object store lost its files; then hltm index --full",
    )
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
    add_progress_flags(p)
    p.set_defaults(func=cmd_index)

    p = sub.add_parser(
        "delete", help="erase a node and its subtree everywhere, rebuild its ancestors"
    )
    p.add_argument("node", help="a node id, e.g. project:<id>, seat:<id> or account:<id>")
    p.add_argument(
        "--no-rebuild",
        action="store_true",
        help="only erase (ancestors stay empty until the next hltm index)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser("verify", help="compare memory with a full rebuild of the SOT, by node")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("stats", help="nodes and items per level and view")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("check", help="every node has all views and matching vectors")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_check)
