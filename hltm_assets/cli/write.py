"""Writes of one item: ``hltm remember``, ``hltm forget``, ``hltm apply CHANGES.jsonl``, and
``hltm serve``, the memory service that owns a home's writing.

The write commands go through the home's running service when there is one (it queues them
with every other client's), and write directly otherwise, building through Dagster.
"""

from __future__ import annotations

import argparse
import sys

from hltm_assets.cli.common import EXIT_FAILED, CliError, print_json, settings_of


def _writer(args: argparse.Namespace):
    from hltm_assets.service import dagster_build
    from query.writer import Writer

    settings = settings_of(args)
    return Writer(settings, build=dagster_build(settings))


def _written(args: argparse.Namespace, call) -> dict | None:
    """``call()``'s result, or None after saying in one line why the service could not build
    what it applied (the write is durable; the exit code is then 1)."""
    from query.writer import ServiceError

    try:
        return call()
    except ServiceError as exc:
        print(f"hltm: {exc}", file=sys.stderr)
        return None


def _report(args: argparse.Namespace, out: dict | None, what: str) -> int:
    if out is None:
        return EXIT_FAILED
    if args.json:
        print_json(out)
        return 0
    through = out.get("through", "direct")
    how = "written directly" if through == "direct" else f"through the memory service at {through}"
    leaves = ", ".join(out.get("leaves", [])) or "none"
    print(f"{what} ({how}); rebuilt leaves: {leaves}")
    if out.get("deleted"):
        print("erased: " + ", ".join(out["deleted"]))
    if out.get("earlier_unbuilt_leaves"):
        print(
            "also built, left unbuilt by an earlier write: "
            + ", ".join(out["earlier_unbuilt_leaves"])
        )
    return 0


def cmd_remember(args: argparse.Namespace) -> int:
    writer = _writer(args)
    out = _written(
        args,
        lambda: writer.remember(
            args.leaf,
            args.text,
            kind=args.kind,
            doc_id=args.doc_id,
            at=args.at,
            name=args.name,
            parent=args.parent,
            wait=args.wait,
        ),
    )
    return _report(args, out, f"remembered {(out or {}).get('doc_id')}")


def cmd_forget(args: argparse.Namespace) -> int:
    writer = _writer(args)
    out = _written(args, lambda: writer.forget(args.target, wait=args.wait))
    return _report(args, out, f"forgot {args.target}")


def cmd_apply(args: argparse.Namespace) -> int:
    from hltm_resources.stores.changes import read_feed

    writer = _writer(args)
    changes = read_feed(args.feed, writer.schema)
    out = _written(args, lambda: writer.apply(changes, source=args.feed, wait=args.wait))
    return _report(args, out, f"applied {len(changes)} changes from {args.feed}")


def cmd_serve(args: argparse.Namespace) -> int:
    from hltm_assets.server import serve

    settings = settings_of(args)
    if settings.distributed:
        raise CliError(
            "hltm serve owns one home's writing; the distributed deployment writes through "
            "hltm load and hltm index (its stores take several writers)"
        )

    def ready(url: str) -> None:
        print(f"memory service of {settings.home} on {url} (writes: POST {url}/v1/changes)")
        print("stop with Ctrl-C", flush=True)

    serve(settings, host=args.host, port=args.port, on_ready=ready, max_runs=args.max_runs)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from hltm_assets.server import run_stdio

    settings = settings_of(args)
    if settings.distributed:
        raise CliError(
            "hltm mcp serves one home's memory (through its hltm serve, or in this process); "
            "the distributed deployment has no memory service yet"
        )
    run_stdio(settings)
    return 0


def _wait_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wait",
        default="leaf",
        choices=("applied", "leaf", "root"),
        help="return once the change is durable, its leaf is built (default) or its whole path",
    )
    p.add_argument("--json", action="store_true")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("remember", help="store a text as a document of a leaf, and build")
    p.add_argument("leaf", help="the leaf's id, e.g. p-17 or project:p-17")
    p.add_argument("text")
    p.add_argument("--kind", default="note", help="the document's kind (default note)")
    p.add_argument("--doc-id", help="default: derived from the leaf, the text and its time")
    p.add_argument("--at", help="its time, ISO 8601 (default now)")
    p.add_argument("--name", help="the leaf's name, to create it (with --parent)")
    p.add_argument("--parent", help="the leaf's parent's id, to create it (with --name)")
    _wait_flag(p)
    p.set_defaults(func=cmd_remember)

    p = sub.add_parser("forget", help="erase a document (doc id) or a node (level:id) everywhere")
    p.add_argument("target", help="a doc id, or a node id such as project:p-17")
    _wait_flag(p)
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser("apply", help="apply a change feed (JSONL of upserts and deletes)")
    p.add_argument("feed", help="a JSONL file, one change a line (README, 'Writing memory')")
    _wait_flag(p)
    p.set_defaults(func=cmd_apply)

    p = sub.add_parser("serve", help="run the memory service: it owns writing and answers")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8766, help="0 picks a free port")
    p.add_argument(
        "--max-runs",
        type=int,
        default=2,
        help="Dagster runs a level of a batch may take; a batch scattered over more is built "
        "in process and its materializations reported (0: always)",
    )
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser(
        "mcp",
        help="serve the memory's MCP tools over stdin/stdout (for an MCP client's config); "
        "through the running hltm serve if there is one, scoped by $HLTM_TOKEN",
    )
    p.set_defaults(func=cmd_mcp)
