"""``hltm ask``: answer from memory, one question or a JSONL batch (never loads Dagster)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hltm_assets.cli.common import (
    EXIT_FAILED,
    EXIT_USAGE,
    CliError,
    add_progress_flags,
    print_json,
    settings_of,
    show_progress,
)


def cmd_ask(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    if args.queries:
        if not args.out:
            raise CliError("--queries needs --out FILE (JSONL answers)")
        from query.batch import answer_batch

        summary = answer_batch(
            settings, Path(args.queries), Path(args.out), show_progress=show_progress(args)
        )
        for problem in summary["problems"]:
            print(f"hltm: {problem}", file=sys.stderr)
        skipped = f" ({len(summary['problems'])} bad lines skipped)" if summary["problems"] else ""
        print(
            f"answered {summary['answered']} of {summary['lines']} queries -> {args.out}{skipped}",
            file=sys.stderr,
        )
        return EXIT_FAILED if summary["problems"] else 0
    if args.json:
        return _ask_json(settings, args)
    if not args.question or not args.scope:
        raise CliError("ask needs a question and --scope NODE (or --queries FILE --out FILE)")
    result = _ask(settings, args.question, args.scope, contexts=False, as_of=args.as_of)
    print(result["answer"])
    print(f"references: {', '.join(result['references']) or '(none)'}")
    t = result["timings"]
    print(
        f"retrieval {t['retrieval_ms']:.0f} ms, answer {t['answer_ms']:.0f} ms, "
        f"LLM calls {result['llm_calls']}"
    )
    return 0


def _ask(
    settings, question: str, scope: str, contexts: bool = True, as_of: str | None = None
) -> dict:
    """The answer as a dict: from the home's memory service when one runs (it holds the
    DuckDB file; another process could not open it), else from memory read here."""
    from query import Memory
    from query.writer import ask_service, service_url

    url = service_url(settings)
    if url is not None:
        return ask_service(url, question, scope, contexts=contexts, as_of=as_of)
    with Memory(settings) as mem:
        return mem.ask(question, scope=scope, as_of=as_of).as_dict()


def _ask_json(settings, args: argparse.Namespace) -> int:
    """One JSON object on stdout whatever happens: the answer, or ``error`` (with
    ``error_type``) and the exit code of the same error without ``--json``."""
    from hltm_resources.errors import USER_ERRORS

    try:
        if not args.question or not args.scope:
            raise CliError("ask needs a question and --scope NODE")
        result = _ask(settings, args.question, args.scope, as_of=args.as_of)
    except (CliError, *USER_ERRORS) as exc:
        return _json_error(args, exc, EXIT_USAGE)
    except Exception as exc:  # an engine or store failure: still one JSON object
        return _json_error(args, exc, EXIT_FAILED)
    print_json(result)
    return 0


def _json_error(args: argparse.Namespace, exc: Exception, code: int) -> int:
    print_json(
        {
            "question": args.question,
            "scope": args.scope,
            "error": str(exc),
            "error_type": type(exc).__name__,
        }
    )
    print(f"hltm: error: {exc}", file=sys.stderr)
    return code


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ask", help="answer a question from memory, scoped to a node")
    p.add_argument("question", nargs="?")
    p.add_argument("--scope", help="a node id, e.g. account:<id>, seat:<id> or project:<id>")
    p.add_argument(
        "--as-of",
        metavar="DATE",
        help="answer with what was true then (2026-03-02 or 2026-03-02T09:30), not now",
    )
    p.add_argument("--json", action="store_true", help="answer, references, contexts, timings")
    p.add_argument("--queries", help="JSONL with query_id, scope, question per line")
    p.add_argument("--out", help="JSONL answers for --queries")
    add_progress_flags(p)
    p.set_defaults(func=cmd_ask)
