"""The inspector's pages as a Starlette application: a thin route per page over
:mod:`query.inspector.pages`, Jinja2 templates with autoescaping, the error pages, the Host
check and the security headers."""

from __future__ import annotations

import logging
from collections.abc import Callable
from http import HTTPStatus
from urllib.parse import unquote

import jinja2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Receive, Scope, Send

from hltm_resources.stores.database import StoreBusyError
from query.inspector import pages
from query.inspector.core import Inspector, PageError, View
from query.inspector.security import SECURITY_HEADERS, names_loopback

log = logging.getLogger(__name__)

#: ``scope_of(request)``: the node whose subtree a request may see (None: everything).
ScopeOf = Callable[[Request], str | None]


def _templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("query.inspector", "templates"),
        autoescape=True,  # every piece of memory text comes from user documents
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["node_path"] = pages.node_path
    env.filters["doc_path"] = pages.doc_path
    return Jinja2Templates(env=env)


def inspector_app(
    inspector: Inspector, scope_of: ScopeOf | None = None, loopback_only: bool = True
) -> Starlette:
    """The inspector's pages (``/``, ``/node/<id>``, ``/doc/<id>[?key=&value=]``,
    ``/ask?scope=&q=``, ``/search?q=``) as an ASGI app, to serve on its own (``hltm inspect``)
    or mount in another app.

    ``scope_of(request)`` decides each request's scope: the id of the node whose subtree the
    request may see, or None for everything. It is called once per request, in a worker
    thread, before anything is read; to refuse a request it raises :class:`PageError` (e.g.
    ``PageError(401, "send a token ...")``), which is rendered as that status's error page.
    A scope that is not (or no longer) in the memory is a 404. Nothing outside the scope is
    shown or linked, and it gets the same 404 as what does not exist. Without ``scope_of``,
    every request has the inspector's own scope (``hltm inspect --scope``).

    Mounted (``Mount("/inspect", app=inspector_app(...))``), its links and forms stay under
    the mount's path. ``loopback_only`` refuses (400) a request whose Host header is not a
    loopback name (DNS rebinding); an app that authenticates its requests and listens
    elsewhere passes False. Pages never write the home; questions go through
    ``inspector.ask``, one at a time."""
    templates = _templates()
    restart_hint = ": restart hltm inspect with another --scope" if scope_of is None else ""

    def render(request: Request, page: pages.Page | pages.Redirect, status: int = 200) -> Response:
        if isinstance(page, pages.Redirect):
            return RedirectResponse(_root(request) + page.path, status_code=303)
        values = {"title": page.title, "root": _root(request), "crumbs": None, **page.values}
        return templates.TemplateResponse(request, page.template, values, status_code=status)

    def error(request: Request, exc: PageError) -> Response:
        reason = HTTPStatus(exc.status).phrase
        page = pages.Page(
            "error.html",
            f"{exc.status} {reason}",
            {"status": exc.status, "reason": reason, "message": str(exc), "back": exc.back},
        )
        return render(request, page, exc.status)

    def endpoint(
        show: Callable[[View, Request], pages.Page | pages.Redirect],
    ) -> Callable[[Request], Response]:
        """A page's route: the request's view, the page, or its error page (never a
        traceback: one failed page must not stop the server)."""

        def route(request: Request) -> Response:  # sync: Starlette runs it in a thread
            try:
                scope_id = scope_of(request) if scope_of is not None else inspector.scope_id
                return render(request, show(View(inspector, scope_id, restart_hint), request))
            except PageError as exc:
                return error(request, exc)
            except StoreBusyError as exc:
                return error(request, PageError(503, f"{exc}; reload this page in a moment"))
            except Exception:
                log.exception("page %s failed", request.url.path)
                message = (
                    "this page failed (the server's log says why): reload it; if it keeps "
                    "failing, report the log"
                )
                return error(request, PageError(500, message))

        return route

    async def not_found(request: Request, exc: Exception) -> Response:
        path = request.url.path
        if isinstance(exc, HTTPException) and exc.status_code == 405:
            refused = error(request, PageError(405, f"{path} is only read: open it with a GET"))
            refused.headers.update(exc.headers or {})  # Allow: GET, HEAD
            return refused
        return error(request, PageError(404, f"there is no page at {path}: start from the top"))

    app = Starlette(
        routes=[
            Route("/", endpoint(lambda view, request: pages.tree_page(view))),
            Route(
                "/node/{node_id:path}",
                endpoint(lambda view, request: pages.node_page(view, _tail(request, "/node/"))),
            ),
            Route(
                "/doc/{doc_id:path}",
                endpoint(
                    lambda view, request: pages.doc_page(
                        view, _tail(request, "/doc/"), _query(request)
                    )
                ),
            ),
            Route("/ask", endpoint(lambda view, request: pages.ask_page(view, _query(request)))),
            Route(
                "/search",
                endpoint(lambda view, request: pages.search_page(view, _query(request))),
            ),
        ],
        exception_handlers={404: not_found, 405: not_found},
    )
    refused = PageError(400, "this server only answers requests for 127.0.0.1, localhost or [::1]")
    app.add_middleware(
        _Guard,
        loopback_only=loopback_only,
        refuse=lambda request: error(request, refused),
    )
    return app


class _Guard:
    """Adds the security headers to every response and, for ``loopback_only``, refuses a
    request whose Host does not name loopback before any route sees it."""

    def __init__(
        self, app: ASGIApp, loopback_only: bool, refuse: Callable[[Request], Response]
    ) -> None:
        self.app = app
        self.loopback_only = loopback_only
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in SECURITY_HEADERS.items()
        ]

        async def with_headers(message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        hosts = [value for name, value in scope["headers"] if name.lower() == b"host"]
        if self.loopback_only and not names_loopback(hosts):
            await self.refuse(Request(scope, receive))(scope, receive, with_headers)
            return
        await self.app(scope, receive, with_headers)


def _root(request: Request) -> str:
    """The path the app is mounted at ("" on its own): every link starts with it."""
    return request.scope.get("root_path", "")


def _tail(request: Request, prefix: str) -> str:
    """The rest of the path after ``prefix``, decoded from the raw path as strict UTF-8."""
    raw = request.scope.get("raw_path")
    if raw is None:
        return request.path_params.get("node_id") or request.path_params.get("doc_id", "")
    path = raw.decode("latin-1")
    root = _root(request)
    if root and path.startswith(root):
        path = path[len(root) :]
    try:
        return unquote(path.removeprefix(prefix), errors="strict")
    except UnicodeDecodeError:
        raise PageError(
            400, "the address is not URL-encoded UTF-8: follow a link instead"
        ) from None


def _query(request: Request) -> str:
    return request.scope.get("query_string", b"").decode("latin-1")
