"""What every command shares: settings from the flags, one-line errors, JSON output."""

from __future__ import annotations

import argparse
import json
import sys

from hltm_resources.config import Settings

EXIT_USAGE = 2
EXIT_FAILED = 1


class CliError(Exception):
    """An error to report in one line (no traceback)."""


def settings_of(args: argparse.Namespace) -> Settings:
    return Settings.from_env(home=args.home)


def print_json(obj: object) -> None:
    print(json.dumps(obj, indent=None, ensure_ascii=False, default=str))


def show_progress(args: argparse.Namespace) -> bool:
    """Draw a progress bar: on a terminal unless --no-progress or --json, or with --progress."""
    quiet = getattr(args, "json", False) or getattr(args, "no_progress", False)
    return (not quiet and sys.stderr.isatty()) or getattr(args, "progress", False)


def add_progress_flags(p: argparse.ArgumentParser, forced: bool = True) -> None:
    p.add_argument("--no-progress", action="store_true")
    if forced:
        p.add_argument(
            "--progress",
            action="store_true",
            help="draw the progress bar even if stderr is not a terminal",
        )


def built_sentence(out: dict) -> str:
    """``built 12 leaves, 3 seats, 1 accounts`` from an index result's JSON."""
    parts = [f"{v} {k.removesuffix('_built')}" for k, v in out.items() if k.endswith("_built")]
    return "built " + ", ".join(parts)
