"""HLTM's memory as MCP tools (the official ``mcp`` SDK): ``remember``, ``recall``, ``search``,
``forget`` and ``browse``, over streamable HTTP (``hltm serve``, at ``/mcp``) and over stdio
(``hltm mcp``).

Each tool calls the same :class:`~.operations.MemoryOperations` as the JSON API. Who calls is
decided per call by ``caller_of(ctx)``: over HTTP, the API token of the request's
``Authorization`` header; over stdio, ``$HLTM_TOKEN`` as ``hltm mcp`` started (or all of memory
without one, as on loopback). A failure is a tool error whose text says what to send.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from hltm_assets.server.operations import ApiError, Caller, MemoryOperations
from hltm_resources.errors import USER_ERRORS
from hltm_resources.schema import TreeSchema

INSTRUCTIONS = """\
HLTM is a long-term memory organised as a tree ({tree}); documents sit under the {leaf}
level. Every tool works within the scope of the API token this connection uses (all of memory
on loopback without one): nodes outside it do not exist for you. Node ids look like
'{leaf_name}:<id>' or '{root_name}:<id>'. Use `browse` to see what a node remembers, `recall` to
get an answer with the node ids it cites, `search` for the scored items behind it,
`remember` to store a note at a {leaf}, `forget` to erase a document or a node for good."""


def _described(schema: TreeSchema) -> dict[str, str]:
    leaf, root = schema.leaf, schema.root
    return {
        "recall": (
            "Answer a question from memory, within a node of your scope (default: your "
            "token's scope node). Returns the answer and the node ids it cites, with their "
            f"names. Example scope: '{root.name}:<id>' or '{leaf.name}:<id>'. With as_of "
            "(a date, 2026-03-02), it answers with what was true then, not what is true now."
        ),
        "search": (
            "The memory items a question retrieves within a node of your scope, scored per "
            "view (facets, QA pairs, summaries, evidence passages), best first; no answer. "
            "Use it to see why recall answered as it did."
        ),
        "remember": (
            f"Store a text (a note, a preference, a fact) as a new document of a {leaf.noun} "
            f"inside your scope (default: your scope node, if it is a {leaf.noun}). It is "
            "built into memory before the call returns: recall finds it at once at that "
            f"{leaf.noun}, and its ancestors within seconds. Returns the new document's id."
        ),
        "forget": (
            "Erase a document (by its id) or a node with everything under it (by its node id) "
            "from every store of memory, inside your scope. It cannot be undone."
        ),
        "browse": (
            "What memory holds at one node of your scope: its summary, facets (with how many "
            f"{leaf.nouns} support each, at parents), QA pairs, children and (at a "
            f"{leaf.noun}) documents. Without a node: your scope node, or the top of the tree."
        ),
    }


def memory_server(
    ops: MemoryOperations,
    schema: TreeSchema,
    caller_of: Callable[[Context], Caller],
) -> MCPServer:
    """An MCP server whose tools call ``ops`` as ``caller_of(ctx)`` says."""
    server = MCPServer(
        name="hltm",
        title="HLTM memory",
        instructions=INSTRUCTIONS.format(
            tree=" > ".join(schema.names),
            leaf=schema.leaf.noun,
            leaf_name=schema.leaf.name,
            root_name=schema.root.name,
        ),
        log_level="WARNING",
    )
    said = _described(schema)

    async def call(ctx: Context, fn, *args) -> Any:
        try:
            return await fn(caller_of(ctx), *args)
        except (ApiError, *USER_ERRORS) as exc:
            raise ToolError(str(exc)) from None

    async def write(ctx: Context, fn, *args) -> dict:
        status, out = await call(ctx, fn, *args)
        if status == 202 and not out.get("error"):
            out["note"] = "applied (durable); still being built: recall may miss it for seconds"
        elif status >= 400 or out.get("error"):
            raise ToolError(out.get("error") or f"refused ({status})")
        return out

    @server.tool(description=said["recall"])
    async def recall(
        question: str, ctx: Context, scope: str | None = None, as_of: str | None = None
    ) -> dict:
        out = await call(ctx, ops.ask, question, scope, False, as_of)
        names = await _names(ctx, out.get("references", []))
        return {
            "answer": out["answer"],
            "scope": out["scope"],
            "citations": [{"node_id": n, "name": names.get(n)} for n in out["references"]],
        }

    async def _names(ctx: Context, node_ids: list[str]) -> dict[str, str]:
        names = {}
        for node_id in node_ids[:20]:
            try:
                view = await call(ctx, ops.browse, node_id)
            except ToolError:
                continue
            names[node_id] = view.get("name")
        return names

    @server.tool(description=said["search"])
    async def search(query: str, ctx: Context, scope: str | None = None, limit: int = 10) -> dict:
        return await call(ctx, ops.search, query, scope, limit)

    @server.tool(description=said["remember"])
    async def remember(
        text: str, ctx: Context, leaf: str | None = None, kind: str = "note"
    ) -> dict:
        return await write(ctx, ops.remember, text, leaf, kind)

    @server.tool(description=said["forget"])
    async def forget(target: str, ctx: Context) -> dict:
        return await write(ctx, ops.forget, target)

    @server.tool(description=said["browse"])
    async def browse(ctx: Context, node: str | None = None) -> dict:
        return await call(ctx, ops.browse, node)

    return server
