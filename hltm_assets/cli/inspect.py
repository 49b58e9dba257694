"""``hltm inspect``: a read-only web page over the memory, on loopback (never loads Dagster)."""

from __future__ import annotations

import argparse
import sys
import threading

from hltm_assets.cli.common import CliError, settings_of


def cmd_inspect(args: argparse.Namespace) -> int:
    """Serve the inspector until Ctrl-C; one line on stdout says where."""
    from query.inspector import Inspector, InspectorServer, check_loopback

    check_loopback(args.host)  # before the home is opened: the flag is what is wrong
    settings = settings_of(args)
    app = Inspector(settings, scope=args.scope)
    try:
        server = InspectorServer(app, args.host, args.port)
    except OSError as exc:
        app.close()
        raise CliError(
            f"cannot listen on {args.host} port {args.port} ({exc.strerror or exc}): "
            "choose another --port (0 picks a free one)"
        ) from None
    threading.Thread(target=app.warm_up, name="inspector-warm-up", daemon=True).start()
    scope = f", scope {app.scope_id}" if app.scope_id else ""
    print(
        f"memory inspector of {settings.home}{scope}: {server.url} (read-only; Ctrl-C stops it)",
        flush=True,
    )
    try:
        server.serve_forever()  # uvicorn stops on Ctrl-C, then raises KeyboardInterrupt again
    except KeyboardInterrupt:
        print("inspector stopped", file=sys.stderr)
    finally:
        server.server_close()
        app.close()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "inspect", help="browse the memory and ask questions in a web page (read-only, loopback)"
    )
    p.add_argument("--port", type=int, default=8765, help="port to listen on (0: any free port)")
    p.add_argument("--host", default="127.0.0.1", help="127.0.0.1, ::1 or localhost only")
    p.add_argument("--scope", help="show only this node's subtree, e.g. account:<id>")
    p.set_defaults(func=cmd_inspect)
