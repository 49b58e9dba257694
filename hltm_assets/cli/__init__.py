"""The ``hltm`` command line: one module per command group, each registering its commands.

Heavy imports happen inside each command, so ``hltm ask`` never loads Dagster.
"""

from __future__ import annotations

import argparse
import sys

from hltm_assets.cli import (
    adapt,
    ask,
    bench,
    demo,
    evaluate,
    inspect,
    memory,
    server,
    services,
    tokens,
    write,
)
from hltm_assets.cli.common import EXIT_USAGE, CliError

GROUPS = (memory, write, ask, inspect, adapt, demo, evaluate, bench, server, services, tokens)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hltm", description="Hierarchical long-term semantic memory for LLM agents."
    )
    parser.add_argument(
        "--home", default=None, help="memory home (default: $HLTM_HOME, else ./.hltm)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from hltm_resources.env import check_numbers
    from hltm_resources.errors import USER_ERRORS

    try:
        check_numbers()  # every numeric HLTM_* setting, before any work
        return args.func(args)
    except (CliError, *USER_ERRORS) as exc:
        print(f"hltm: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("hltm: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        from hltm_resources.stores.lake import service_down

        down = service_down(exc)
        if down is None:
            raise
        print(f"hltm: error: {down}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
