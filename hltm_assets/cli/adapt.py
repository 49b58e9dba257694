"""``hltm adapt``: mine the query log into hints, review them, approve them."""

from __future__ import annotations

import argparse
import os

from hltm_assets.cli.common import print_json, settings_of


def cmd_adapt(args: argparse.Namespace) -> int:
    from hltm_resources.indexing import adaptation

    settings = settings_of(args)
    if args.approve is not None:
        proposal = adaptation.approve(settings, args.approve)
        from hltm_resources.indexing.indexer import Indexer

        stale = Indexer(settings).plan().counts()
        out = {"approved": proposal.version, "stale": stale}
        if args.json:
            print_json(out)
        else:
            stale.pop("purged")
            rebuild = ", ".join(f"{v} {k}" for k, v in stale.items())
            print(
                f"hints v{proposal.version} are active ({len(proposal.patterns)} patterns, "
                f"{len(proposal.facets)} facet names); memory to rebuild: {rebuild} (hltm index, "
                "or the sensor under dagster dev)"
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
        print_json(view)
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


def register(sub: argparse._SubParsersAction) -> None:
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
