"""``hltm token create|list|revoke``: API tokens, each bound to one scope node and to read
or read+write (``hltm_resources/stores/tokens.py``)."""

from __future__ import annotations

import argparse
import json
import urllib.error
import urllib.parse
import urllib.request

from hltm_assets.cli.common import CliError, print_json, settings_of


def node_exists(settings, node_id: str) -> bool:
    """Whether ``node_id`` is in the home's tree: asked of the running memory service (which
    holds the DuckDB file), else read from the source of truth."""
    from query.writer import auth_headers, service_url

    url = service_url(settings)
    if url is not None:
        quoted = urllib.parse.quote(node_id, safe="")
        request = urllib.request.Request(f"{url}/v1/nodes/{quoted}", headers=auth_headers(url))
        try:
            with urllib.request.urlopen(request, timeout=30):
                return True
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return False
            raise
    from hltm_assets.partitions import read_tree

    return read_tree(settings).node(node_id) is not None


def cmd_create(args: argparse.Namespace) -> int:
    from hltm_resources.ids import parse_node_id
    from hltm_resources.stores.tokens import create_token

    settings = settings_of(args)
    scope = str(parse_node_id(args.scope, settings.schema))
    if not node_exists(settings, scope):
        raise CliError(f"no node {scope} in this home's tree: give a node id from hltm tree")
    token, value = create_token(settings, scope, write=args.write, name=args.name or "")
    if args.json:
        print_json(token.as_dict() | {"token": value})
        return 0
    print(f"token {token.id}: {token.rights} on {token.scope}")
    print(value)
    print("Shown once: HLTM keeps only its hash. Send it as 'Authorization: Bearer <token>'.")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from hltm_resources.stores.tokens import list_tokens

    tokens = list_tokens(settings_of(args))
    if args.json:
        print(json.dumps([t.as_dict() for t in tokens], indent=2))
        return 0
    if not tokens:
        print("no tokens (hltm token create --scope <node id> [--write])")
    for t in tokens:
        print(f"{t.id}  {t.rights:<10}  {t.scope}  {t.created_at}  {t.name}".rstrip())
    return 0


def cmd_revoke(args: argparse.Namespace) -> int:
    from hltm_resources.stores.tokens import revoke_token

    token = revoke_token(settings_of(args), args.id)
    print(f"revoked token {token.id} ({token.rights} on {token.scope})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("token", help="API tokens, each bound to one scope and read or write")
    actions = p.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="make a token (shown once)")
    create.add_argument("--scope", required=True, help="the node it reaches, e.g. seat:ana")
    create.add_argument("--write", action="store_true", help="may write too (default: read)")
    create.add_argument("--name", help="what it is for (shown by list)")
    create.add_argument("--json", action="store_true")
    create.set_defaults(func=cmd_create)
    listing = actions.add_parser("list", help="the home's tokens (never the tokens themselves)")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=cmd_list)
    revoke = actions.add_parser("revoke", help="delete a token")
    revoke.add_argument("id", help="its id (from list) or the token itself")
    revoke.set_defaults(func=cmd_revoke)
