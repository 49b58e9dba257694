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
from hltm_resources.config import Settings
from query.inspector import Inspector, PageError, inspector_app

__all__ = ["build_app", "run_stdio"]


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

    from hltm_assets.service import MemoryService, bound_socket, published
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
