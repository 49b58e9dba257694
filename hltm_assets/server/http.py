"""The JSON API of the memory service (``/v1/...``), its OpenAPI schema and docs page.

Every endpoint takes its caller from the request's API token (``Authorization: Bearer
hltm_...``, :mod:`hltm_resources.stores.tokens`) and hands the work to
:class:`~.operations.Operations`; an :class:`~.operations.ApiError` becomes its status and
``{"error": "..."}``, anything unforeseen a 500 that says where to look (never a traceback).
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from hltm_assets.server.operations import ApiError, Caller, Operations, may_write
from hltm_resources.errors import USER_ERRORS
from hltm_resources.stores.tokens import TokenError, verify_token

log = logging.getLogger(__name__)

#: The largest request body read (a 1 MB question is refused by its length, not by this).
MAX_BODY_BYTES = 8 * 1024 * 1024

Handler = Callable[[Request, Caller], Awaitable[Response | dict]]


def caller_of(
    request_headers, settings, tokens_required: bool, home_key: str | None = None
) -> Caller:
    """The caller a request's headers name (ApiError 401 when its token is refused, or
    missing where tokens are required). ``home_key`` (the running service's, for the home's
    owner) reaches everything."""
    header = request_headers.get("authorization")
    if header is None:
        if tokens_required:
            raise ApiError(
                401,
                "this service takes requests with a token only: send 'Authorization: Bearer "
                "hltm_...' (make one with hltm token create)",
            )
        return Caller()
    scheme, _, value = header.partition(" ")
    try:
        if scheme.lower() != "bearer":
            raise TokenError("send the token as 'Authorization: Bearer hltm_...'")
        if home_key and hmac.compare_digest(value.strip().encode(), home_key.encode()):
            return Caller()
        return Caller.of(verify_token(settings, value.strip()))
    except TokenError as exc:
        raise ApiError(401, str(exc)) from None


async def json_body(request: Request) -> dict:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:  # refused before it is read
        raise ApiError(413, f"the body is {int(declared):,} bytes: send at most {MAX_BODY_BYTES:,}")
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise ApiError(413, f"the body is {len(raw):,} bytes: send at most {MAX_BODY_BYTES:,}")

    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ApiError(400, f"the body is not JSON ({exc}): send a JSON object") from None
    if not isinstance(data, dict):
        raise ApiError(400, "the body must be a JSON object")
    return data


def api_routes(ops: Operations, caller_of: Callable[[object], Caller]) -> list[Route]:
    """The ``/v1`` routes over ``ops``; ``caller_of(headers)`` says who sends a request."""

    def endpoint(handler: Handler):
        async def run(request: Request) -> Response:
            try:
                caller = caller_of(request.headers)
                out = await handler(request, caller)
            except ApiError as exc:
                return JSONResponse(exc.as_dict(), status_code=exc.status)
            except USER_ERRORS as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            except Exception:  # noqa: BLE001 - one failed request must not show its insides
                log.exception("%s %s failed", request.method, request.url.path)
                return JSONResponse(
                    {"error": "the service failed on this request (its log says why); try again"},
                    status_code=500,
                )
            return out if isinstance(out, Response) else JSONResponse(out)

        return run

    def written(reply: tuple[int, dict]) -> Response:
        status, out = reply
        return JSONResponse(out, status_code=status)

    async def ask(request: Request, caller: Caller):
        data = await json_body(request)
        return await ops.ask(
            caller,
            data.get("question"),
            data.get("scope"),
            bool(data.get("contexts")),
            data.get("as_of"),
        )

    async def search(request: Request, caller: Caller):
        if request.method == "GET":
            q = request.query_params
            return await ops.search(caller, q.get("q"), q.get("scope"), q.get("limit"))
        data = await json_body(request)
        return await ops.search(caller, data.get("query"), data.get("scope"), data.get("limit"))

    async def remember(request: Request, caller: Caller):
        data = await json_body(request)
        return written(
            await ops.remember(caller, data.get("text"), data.get("leaf"), data.get("kind"))
        )

    async def forget(request: Request, caller: Caller):
        data = await json_body(request)
        return written(await ops.forget(caller, data.get("target")))

    async def changes(request: Request, caller: Caller):
        may_write(caller)  # before the body is read: nothing of it matters
        data = await json_body(request)
        return written(
            await ops.write(
                caller,
                data.get("changes"),
                data.get("source") or "changes",
                data.get("wait", "leaf"),
                data.get("timeout_s", 300),
            )
        )

    async def node(request: Request, caller: Caller):
        return await ops.browse(caller, request.path_params["node_id"])

    async def document(request: Request, caller: Caller):
        return await ops.document(caller, request.path_params["doc_id"])

    async def tree(request: Request, caller: Caller):
        q = request.query_params
        return await ops.tree(caller, q.get("node"), q.get("depth"))

    async def health(request: Request, caller: Caller):
        return ops.health(caller)

    async def unknown(request: Request, caller: Caller):
        raise ApiError(404, f"no endpoint {request.url.path[:80]!r}: see GET /v1/docs")

    async def schema(request: Request, caller: Caller):
        return openapi()

    async def docs(request: Request, caller: Caller):
        return docs_page(request)

    return [
        Route("/v1/ask", endpoint(ask), methods=["POST"]),
        Route("/v1/search", endpoint(search), methods=["GET", "POST"]),
        Route("/v1/remember", endpoint(remember), methods=["POST"]),
        Route("/v1/forget", endpoint(forget), methods=["POST"]),
        Route("/v1/changes", endpoint(changes), methods=["POST"]),
        Route("/v1/nodes/{node_id:path}", endpoint(node), methods=["GET"]),
        Route("/v1/documents/{doc_id:path}", endpoint(document), methods=["GET"]),
        Route("/v1/tree", endpoint(tree), methods=["GET"]),
        Route("/v1/health", endpoint(health), methods=["GET"]),
        Route("/v1/status", endpoint(health), methods=["GET"]),  # its name before 2026-12
        Route("/v1/openapi.json", endpoint(schema), methods=["GET"]),
        Route("/v1/docs", endpoint(docs), methods=["GET"]),
        Route("/v1/{rest:path}", endpoint(unknown), methods=["GET", "POST", "PUT", "DELETE"]),
    ]


# -- the schema --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """One endpoint as the schema and the docs page describe it: ``fields`` of a JSON body,
    ``params`` of the path or query string, each ``name: (JSON schema type, description)``;
    a name ending in ``*`` is required."""

    method: str
    path: str
    summary: str
    fields: dict[str, tuple[str, str]] = dc_field(default_factory=dict)
    params: dict[str, tuple[str, str]] = dc_field(default_factory=dict)


_WRITE = "; 200 once built as `wait` says, 202 if applied (durable) but not built in time"
_NODE = ("string", "a node id, '<level>:<id>'")
ENDPOINTS = (
    Endpoint(
        "post",
        "/v1/ask",
        "Answer a question within a node (default: the token's scope), citing node ids",
        {
            "question*": ("string", "at most 4,000 characters"),
            "scope": _NODE,
            "contexts": ("boolean", "also return the retrieved context"),
            "as_of": (
                "string",
                "a date (2026-03-02 or 2026-03-02T09:30): answer with what was true then",
            ),
        },
    ),
    Endpoint(
        "post",
        "/v1/search",
        "The items a question retrieves within a node, scored per view (no answer)",
        {
            "query*": ("string", "at most 4,000 characters"),
            "scope": _NODE,
            "limit": ("integer", "items per view, 1 to 50 (default 10)"),
        },
    ),
    Endpoint(
        "get",
        "/v1/search",
        "As POST /v1/search, from the query string",
        params={"q*": ("string", "the question"), "scope": _NODE, "limit": ("integer", "1-50")},
    ),
    Endpoint(
        "post",
        "/v1/remember",
        "Store a text as a new document of a leaf (default: the token's scope)" + _WRITE,
        {
            "text*": ("string", "at most 100,000 characters"),
            "leaf": _NODE,
            "kind": ("string", "the document's kind (default note)"),
        },
    ),
    Endpoint(
        "post",
        "/v1/forget",
        "Erase a document (by id) or a node and its subtree (by node id)" + _WRITE,
        {"target*": ("string", "a document id or a node id")},
    ),
    Endpoint(
        "post",
        "/v1/changes",
        "Apply a batch of changes, refused whole if one is invalid" + _WRITE,
        {
            "changes*": ("array", "upserts and deletes, as a change feed's lines"),
            "source": ("string", "a name for the batch in errors"),
            "wait": ("string", "applied, leaf (default) or root"),
            "timeout_s": ("number", "seconds to wait, at most 3600 (default 300)"),
        },
    ),
    Endpoint(
        "get",
        "/v1/nodes/{node_id}",
        "A node's memory: summary, facets with support, at a leaf the facts later documents "
        "replaced (history, with validity), QA pairs, children, documents (no id: the "
        "token's scope node, or the top of the tree)",
        params={"node_id": _NODE},
    ),
    Endpoint(
        "get",
        "/v1/documents/{doc_id}",
        "A document's whole text",
        params={"doc_id*": ("string", "a document id")},
    ),
    Endpoint(
        "get",
        "/v1/tree",
        "The nodes under a node (default: the token's scope, or the top of the tree)",
        params={"node": _NODE, "depth": ("integer", "levels down, 1 to 3 (default 1)")},
    ),
    Endpoint("get", "/v1/health", "Whether the service is well: its queue and last error"),
    Endpoint("get", "/v1/openapi.json", "This schema"),
    Endpoint("get", "/v1/docs", "This page"),
    Endpoint(
        "post", "/mcp", "MCP over streamable HTTP: tools remember, recall, search, forget, browse"
    ),
)

_ERROR = {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}
_STATUSES = {
    "200": "done",
    "400": "a bad request: the error says what to send",
    "401": "no token, or a refused one",
    "403": "a reading token sent a write",
    "404": "nothing of that id in the token's scope (whether or not it exists elsewhere)",
}


def _properties(named: dict[str, tuple[str, str]]) -> tuple[dict, list[str]]:
    props = {n.rstrip("*"): {"type": t, "description": d} for n, (t, d) in named.items()}
    return props, [n.rstrip("*") for n in named if n.endswith("*")]


def openapi() -> dict:
    """The OpenAPI 3.1 description of the service (:data:`ENDPOINTS`)."""
    paths: dict[str, dict] = {}
    for e in ENDPOINTS:
        op: dict = {
            "summary": e.summary,
            "responses": {
                code: {"description": what, "content": {"application/json": {"schema": _ERROR}}}
                if code != "200"
                else {"description": what}
                for code, what in _STATUSES.items()
            },
        }
        if e.fields:
            props, required = _properties(e.fields)
            schema = {"type": "object", "properties": props, "required": required}
            op["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": schema}},
            }
        if e.params:
            op["parameters"] = [
                {
                    "name": name.rstrip("*"),
                    "in": "path" if "{" + name.rstrip("*") + "}" in e.path else "query",
                    "required": name.endswith("*"),
                    "description": what,
                    "schema": {"type": kind},
                }
                for name, (kind, what) in e.params.items()
            ]
        paths.setdefault(e.path, {})[e.method] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "HLTM memory service", "version": "1", "description": DESCRIPTION},
        "components": {"securitySchemes": {"token": {"type": "http", "scheme": "bearer"}}},
        "security": [{"token": []}],
        "paths": paths,
    }


DESCRIPTION = (
    "Hierarchical long-term memory. Send 'Authorization: Bearer hltm_...' (hltm token create): "
    "a token reaches only its scope node and what lies under it. Without a token, loopback "
    "reaches everything; a service bound to another address refuses it."
)

_TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))


def docs_page(request: Request) -> Response:
    """:data:`ENDPOINTS` as one HTML page (no script: it works offline and under any CSP)."""
    return _TEMPLATES.TemplateResponse(
        request, "api.html", {"endpoints": ENDPOINTS, "description": DESCRIPTION}
    )
