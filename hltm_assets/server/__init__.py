"""One server for agents and people (``hltm serve``): one ASGI application over the memory
service of this process.

- ``/v1/...``: the JSON API (:mod:`.http`): ask, search, remember, forget, a node, a document,
  the tree, health; its schema at ``/v1/openapi.json``, a page at ``/v1/docs``;
- ``/mcp``: the same operations as MCP tools over streamable HTTP (:mod:`.mcp`);
- ``/``: the memory inspector's pages (:mod:`query.inspector`), each request shown only its
  token's scope (a browser off loopback needs a proxy that adds the token's header).

A request's scope comes from its API token; tokenless requests reach everything, which only a
service bound to loopback allows. ``hltm mcp`` serves the MCP tools over stdio
(:func:`run_stdio`).
"""

from __future__ import annotations

import contextlib
import os
import sys

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from hltm_assets.server import http
from hltm_assets.server.http import api_routes
from hltm_assets.server.mcp import memory_server
from hltm_assets.server.operations import ApiError, Caller, Operations, ServiceClient
from hltm_assets.service import MAX_RUNS, MemoryService
from hltm_resources.config import Settings
from hltm_resources.stores.lock import SERVICE_FILE
from query.inspector import Inspector, PageError, inspector_app
from query.inspector.server import KEEP_ALIVE_S, closing_idle_connections

__all__ = ["build_app", "run_stdio", "serve"]


class _TokenGate:
    """An ASGI app refusing a request whose token is refused (or missing where one is
    required) before it reaches ``app``."""

    def __init__(self, app, caller_of):
        self.app, self.caller_of = app, caller_of

    async def __call__(self, scope, receive, send) -> None:
        try:
            self.caller_of(Request(scope).headers)
        except ApiError as exc:
            await JSONResponse(exc.as_dict(), status_code=exc.status)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def build_app(
    service, tokens_required: bool, host: str = "127.0.0.1", home_key: str | None = None
) -> Starlette:
    """The application over ``service`` (a running :class:`~hltm_assets.service.MemoryService`).
    ``home_key``: a secret (in ``<home>/service.json``, readable by the home's owner only)
    that reaches everything, as a tokenless request on loopback does."""
    settings = service.settings

    def caller_of(headers) -> Caller:
        return http.caller_of(headers, settings, tokens_required, home_key)

    ops = Operations(service)
    mcp = memory_server(
        ops,
        service.schema,
        caller_of=lambda ctx: caller_of(ctx.headers or {}),
    )
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True, host=host
    )
    (mcp_route,) = [r for r in mcp_app.routes if getattr(r, "path", None) == "/mcp"]
    inspector = Inspector(settings, memory=service.memory, lock=service.asking)

    def scope_of(request: Request) -> str | None:
        try:
            return caller_of(request.headers).scope
        except ApiError as exc:
            raise PageError(exc.status, str(exc)) from None

    routes = [
        *api_routes(ops, caller_of),
        Route("/mcp", _TokenGate(mcp_route.app, caller_of)),
        # Last: its 404 page answers every other path.
        Mount("/", app=inspector_app(inspector, scope_of, loopback_only=not tokens_required)),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with mcp.session_manager.run():
            yield

    return Starlette(routes=routes, lifespan=lifespan)


def run_stdio(settings: Settings) -> None:
    """Serve the MCP tools over this process's stdin and stdout until stdin closes.

    With the home's memory service running, each call goes to it over HTTP with
    ``$HLTM_TOKEN`` (it decides the scope). Otherwise this process runs the service itself,
    listening on a free loopback port as ``hltm serve`` would (so other commands and other
    ``hltm mcp`` go through it), and ``$HLTM_TOKEN``, if set, is checked here and bounds
    every call of this client."""
    import threading

    import anyio

    from hltm_resources.stores.tokens import verify_token
    from query.writer import service_token, service_url

    token = os.environ.get("HLTM_TOKEN") or None

    def serve(ops, caller: Caller) -> None:
        server = memory_server(ops, settings.schema, caller_of=lambda ctx: caller)
        anyio.run(server.run_stdio_async)  # it keeps fd 1 for the protocol while it serves

    url = service_url(settings)
    if url is not None:
        serve(ServiceClient(url, service_token(url)), Caller())
        return
    caller = Caller.of(verify_token(settings, token)) if token else Caller()
    service = MemoryService(settings)
    sock = bound_socket("127.0.0.1", 0)
    with contextlib.ExitStack() as stack:
        with _stdout_to_stderr():  # what the service prints as it starts misses the wire
            stack.enter_context(service.running())
            http, _ = stack.enter_context(published(service, sock, "127.0.0.1"))
        thread = threading.Thread(
            target=http.run, kwargs={"sockets": [sock]}, name="hltm-http", daemon=True
        )
        thread.start()
        try:
            serve(Operations(service), caller)
        finally:
            http.should_exit = True
            thread.join(timeout=30)


@contextlib.contextmanager
def _stdout_to_stderr():
    """File descriptor 1 points at stderr inside the block."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


# -- over HTTP -----------------------------------------------------------------------------


def serve(
    settings: Settings,
    host: str = "127.0.0.1",
    port: int = 8766,
    on_ready=None,
    max_runs: int = MAX_RUNS,
) -> None:
    """Run the service over HTTP until interrupted; ``<home>/service.json`` says where."""
    service = MemoryService(settings, max_runs=max_runs)
    sock = bound_socket(host, port)  # from now on a client's connection waits in the backlog
    with service.running(), published(service, sock, host) as (server, url):
        if on_ready is not None:
            on_ready(url)
        server.run(sockets=[sock])


def bound_socket(host: str, port: int):
    """A listening socket on ``host``:``port`` (0: any free port)."""
    import socket

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    return sock


@contextlib.contextmanager
def published(service: MemoryService, sock, host: str):
    """The application over the running ``service`` as a uvicorn server for ``sock`` (not
    started: ``server.run(sockets=[sock])``), and its URL, announced in
    ``<home>/service.json`` until the block ends."""
    import json
    import secrets

    import uvicorn

    # Loopback without a token stays open for development; any other address needs one.
    loopback = host in ("127.0.0.1", "localhost", "::1")
    home_key = secrets.token_urlsafe(32)
    app = build_app(service, tokens_required=not loopback, host=host, home_key=home_key)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_keep_alive=KEEP_ALIVE_S,
        http=closing_idle_connections(KEEP_ALIVE_S),
    )
    server = uvicorn.Server(config)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}"
    where = service.settings.home / SERVICE_FILE
    # Readable by the home's owner only: the key lets this user's own commands (hltm
    # remember, ask, token create, mcp) through without a token, as loopback lets everyone.
    fd = os.open(where, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps({"url": url, "pid": os.getpid(), "key": home_key}) + "\n")
    try:
        yield server, url
    finally:
        with contextlib.suppress(FileNotFoundError, ValueError):
            if json.loads(where.read_text()).get("pid") == os.getpid():
                where.unlink()
