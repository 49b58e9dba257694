"""What an agent or a person may do with a home's memory, whatever the transport: ask, search,
browse a node, read a document, list the tree, remember, forget, check health.

The JSON API (:mod:`.http`) and the MCP tools (:mod:`.mcp`) both call one :class:`Operations`
object, so a rule (a scope, a limit, a message) is written once. Every call names its
:class:`Caller`: the scope its API token is bound to (None: all of memory, for a tokenless
request on loopback) and whether it may write. Anything outside that scope is answered as a
node or document that does not exist (:func:`not_found`): the same status and the same words,
which name only what the request itself sent.

Two implementations: :class:`Operations` on the memory service of this process, and
:class:`ServiceClient` on a running service over HTTP (``hltm mcp`` when ``hltm serve`` runs),
whose scope is decided by that service from ``$HLTM_TOKEN``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from hltm_resources.dates import as_of_date
from hltm_resources.errors import USER_ERRORS
from hltm_resources.stores import database
from hltm_resources.stores.changes import DOCUMENT, ChangeError, parse_changes
from hltm_resources.stores.tokens import Token
from query.memory import MAX_QUESTION_CHARS
from query.nodes import (
    MAX_LISTED,
    read_facets,
    read_history,
    read_leaf_documents,
    read_node,
    read_qa,
    read_summary,
)
from query.writer import forget_change, remember_changes

if TYPE_CHECKING:
    from hltm_assets.service import MemoryService

#: What a write may wait for (as the service's ``WAITS``).
WAITS = ("applied", "leaf", "root")
#: A document's text in a node view is cut here (GET /v1/documents/<id> has all of it).
PREVIEW_CHARS = 1000
#: The longest text ``remember`` takes (a longer one is a document to load, not a memory).
MAX_REMEMBER_CHARS = 100_000
#: Items a search returns per view, at most.
MAX_SEARCH_LIMIT = 50
#: Levels below a node a tree listing may go.
MAX_TREE_DEPTH = 3
#: Nodes one tree listing holds, at most.
MAX_TREE_NODES = 5000


class ApiError(Exception):
    """A request that cannot be served as sent: its HTTP status and what to send instead."""

    def __init__(self, status: int, message: str, **extra: object):
        super().__init__(message)
        self.status = status
        self.extra = extra

    def as_dict(self) -> dict:
        return {"error": str(self), **self.extra}


def not_found(what: str, ident: object) -> ApiError:
    """The one answer for a node or document outside the caller's scope or nowhere at all;
    it names only what the request sent (cut to 80 characters)."""
    shown = ident[:80] if isinstance(ident, str) else ident
    return ApiError(404, f"no {what} {shown!r} in this scope")


def bad(message: str) -> ApiError:
    return ApiError(400, message)


@dataclass(frozen=True)
class Caller:
    """Who asks: the scope node its token is bound to (None: everything) and whether it may
    write."""

    scope: str | None = None
    can_write: bool = True
    token_id: str | None = None

    @classmethod
    def of(cls, token: Token | None) -> Caller:
        if token is None:
            return cls()
        return cls(token.scope, token.can_write, token.id)


def may_write(caller: Caller) -> None:
    if not caller.can_write:
        raise ApiError(403, "this token may only read: make a writing one (hltm token --write)")


def text_arg(value: object, name: str, limit: int, required: bool = True) -> str | None:
    """``value`` as a string argument: present (when ``required``), a string, not blank, at
    most ``limit`` characters."""
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise bad(f"{name} must be a string")
    if not value.strip():
        raise bad(f"{name} is empty: send some text")
    if len(value) > limit:
        raise bad(f"{name} is {len(value):,} characters: send at most {limit:,}")
    return value


def int_arg(value: object, name: str, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise bad(f"{name} must be a whole number from {low} to {high}")
    return value


class MemoryOperations(Protocol):
    """What the MCP tools call; :class:`Operations` and :class:`ServiceClient` implement it."""

    async def ask(
        self,
        caller: Caller,
        question: object,
        scope: object = None,
        contexts: bool = False,
        as_of: object = None,
    ) -> dict: ...

    async def search(
        self, caller: Caller, query: object, scope: object = None, limit: object = None
    ) -> dict: ...

    async def browse(self, caller: Caller, node_id: object = None) -> dict: ...

    async def remember(
        self, caller: Caller, text: object, leaf: object = None, kind: object = None
    ) -> tuple[int, dict]: ...

    async def forget(self, caller: Caller, target: object) -> tuple[int, dict]: ...


class Operations:
    """:class:`MemoryOperations` on the memory service of this process."""

    def __init__(self, service: MemoryService):
        self.service = service
        self.schema = service.schema
        self.settings = service.settings

    # -- scope -----------------------------------------------------------------------------
    def scope_of(self, caller: Caller, scope: object) -> str:
        """The node a read is asked within: ``scope`` if given (and inside the caller's),
        else the caller's own; a tokenless caller must name one."""
        if scope is not None and not isinstance(scope, str):
            raise bad("scope must be a node id such as 'seat:ana'")
        if scope in (None, ""):
            if caller.scope is None:
                raise bad(
                    "send a scope: a node id such as 'account:acme' (GET /v1/tree lists them)"
                )
            return caller.scope
        if caller.scope is not None and not self.service.within(scope, caller.scope):
            raise not_found("node", scope)
        return scope

    def visible(self, caller: Caller, node_id: str) -> bool:
        if self.service.node(node_id) is None:
            return False
        return caller.scope is None or self.service.within(node_id, caller.scope)

    # -- reads -----------------------------------------------------------------------------
    async def ask(
        self,
        caller: Caller,
        question: object,
        scope: object = None,
        contexts: bool = False,
        as_of: object = None,
    ) -> dict:
        question = text_arg(question, "question", MAX_QUESTION_CHARS)
        where = self.scope_of(caller, scope)
        if as_of is not None:
            as_of = self._user_errors(as_of_date, as_of)
        result = await asyncio.to_thread(
            self._user_errors, self.service.ask, question, where, as_of
        )
        out = result.as_dict()
        if not contexts:
            out.pop("contexts", None)
        return out

    async def search(
        self, caller: Caller, query: object, scope: object = None, limit: object = None
    ) -> dict:
        query = text_arg(query, "query", MAX_QUESTION_CHARS)
        where = self.scope_of(caller, scope)
        k = int_arg(limit, "limit", 10, 1, MAX_SEARCH_LIMIT)
        found = await asyncio.to_thread(self._user_errors, self.service.retrieve, query, where, k)
        return {"query": query, "scope": where, "limit": k, "views": found.contexts}

    async def browse(self, caller: Caller, node_id: object = None) -> dict:
        if node_id in (None, ""):
            if caller.scope is None:
                return await self.tree(caller)
            node_id = caller.scope
        if not isinstance(node_id, str):
            raise bad("node must be a node id such as 'seat:ana'")
        if not self.visible(caller, node_id):
            raise not_found("node", node_id)
        return await asyncio.to_thread(self._node_view, node_id)

    async def tree(self, caller: Caller, node_id: object = None, depth: object = None) -> dict:
        """The nodes under ``node_id`` (default: the caller's scope, or the roots), ``depth``
        levels down, by name."""
        levels = int_arg(depth, "depth", 1, 1, MAX_TREE_DEPTH)
        topology = self.service.topology
        if node_id in (None, ""):
            node_id = caller.scope
        if node_id is None:
            tops = list(topology.level(self.schema.root.name).values())
            budget = [MAX_TREE_NODES]
            return {
                "level": self.schema.root.name,
                "tree": " > ".join(self.schema.names),
                "nodes": [self._tree_node(topology, n, levels - 1, budget) for n in tops],
                "truncated": budget[0] < 0,
            }
        if not isinstance(node_id, str) or not self.visible(caller, node_id):
            raise not_found("node", node_id)
        budget = [MAX_TREE_NODES]
        out = self._tree_node(topology, topology.node(node_id), levels, budget)
        return out | {"truncated": budget[0] < 0}

    async def document(self, caller: Caller, doc_id: object) -> dict:
        if not isinstance(doc_id, str) or not doc_id:
            raise bad("send a document id")
        leaf = self.service.document_leaf(doc_id)
        if leaf is None or not self.visible(caller, leaf):
            raise not_found("document", doc_id)
        row = await asyncio.to_thread(self._document_row, doc_id)
        if row is None:  # erased since the look-up
            raise not_found("document", doc_id)
        kind, updated, text = row
        return {"doc_id": doc_id, "leaf": leaf, "kind": kind, "updated_at": updated, "text": text}

    def health(self, caller: Caller) -> dict:
        status = self.service.status()
        if caller.scope is not None:  # the home's path and errors naming nodes: not a scope's
            status = {k: v for k, v in status.items() if k not in ("home", "last_error")}
        return {"ok": status.get("last_error") is None, **status}

    # -- writes ----------------------------------------------------------------------------
    async def write(
        self,
        caller: Caller,
        objs: object,
        source: object = "changes",
        wait: object = "leaf",
        timeout_s: object = 300,
    ) -> tuple[int, dict]:
        """Apply a batch of changes (dicts as in a change feed): (HTTP status, the ticket).
        200 once ``wait`` is reached, 202 if applied but not built within ``timeout_s``."""
        may_write(caller)
        source = str(source or "changes")[:200]
        if wait not in WAITS:
            raise bad(f"wait must be one of {', '.join(WAITS)}")
        if (
            isinstance(timeout_s, bool)
            or not isinstance(timeout_s, int | float)
            or not 0 < timeout_s <= 3600
        ):
            raise bad("timeout_s must be a positive number of seconds, at most 3600")
        if not isinstance(objs, list) or not objs:
            raise bad("changes must be a non-empty list")
        try:
            parsed = parse_changes(objs, self.schema, source)
        except ChangeError as exc:
            raise ApiError(400, str(exc), refused=True) from None
        if caller.scope is not None:
            self._confine_changes(caller, parsed)
        loop = asyncio.get_running_loop()
        reached = loop.create_future()

        def settle() -> None:
            if not reached.done():
                reached.set_result(None)

        ticket = self.service.submit(parsed, source)
        ticket.when(wait, lambda: loop.call_soon_threadsafe(settle))
        with contextlib.suppress(TimeoutError):  # awaited, not a thread per waiting write
            await asyncio.wait_for(asyncio.shield(reached), timeout_s)
        out = ticket.as_dict()
        if caller.scope is not None:
            out = self._confined(out, ticket, caller)
        if ticket.error:
            return (400 if ticket.refused else 202), out
        return (200 if reached.done() else 202), out

    async def remember(
        self, caller: Caller, text: object, leaf: object = None, kind: object = None
    ) -> tuple[int, dict]:
        """Store ``text`` as a document of ``leaf`` (default: the caller's scope, when that
        is a leaf)."""
        may_write(caller)
        text = text_arg(text, "text", MAX_REMEMBER_CHARS)
        leaf_level = self.schema.leaf.name
        if leaf in (None, ""):
            if caller.scope is None or not caller.scope.startswith(f"{leaf_level}:"):
                raise bad(
                    f"send the {self.schema.leaf.noun} to remember it at: a node id such as "
                    f"'{leaf_level}:<id>'"
                )
            leaf = caller.scope
        if not isinstance(leaf, str):
            raise bad(f"{leaf_level} must be a node id such as '{leaf_level}:<id>'")
        leaf = leaf if leaf.startswith(f"{leaf_level}:") else f"{leaf_level}:{leaf}"
        if not self.visible(caller, leaf):
            raise not_found("node", leaf)
        kind = "note" if kind in (None, "") else text_arg(kind, "kind", 100)
        try:
            changes, doc_id = remember_changes(self.schema, leaf, text, kind)
        except USER_ERRORS as exc:
            raise bad(str(exc)) from None
        status, out = await self.write(caller, changes, source="remember")
        return status, out | {"doc_id": doc_id, "leaf": leaf}

    async def forget(self, caller: Caller, target: object) -> tuple[int, dict]:
        """Erase a document (its id) or a node and its subtree (``<level>:<id>``)."""
        may_write(caller)
        target = text_arg(target, "target", 1000)
        try:
            change = forget_change(self.schema, target)
        except USER_ERRORS as exc:  # a node id that is not a valid one
            raise bad(str(exc)) from None
        level = change["level"]
        where = self.service.document_leaf(target) if level == DOCUMENT else target
        if where is None or not self.visible(caller, where):
            raise not_found("document" if level == DOCUMENT else "node", target)
        status, out = await self.write(caller, [change], source="forget")
        return status, out | {"forgot": target}

    # -- helpers ---------------------------------------------------------------------------
    def _confine_changes(self, caller: Caller, parsed) -> None:
        """Refuse a batch naming anything outside the caller's scope, in the words used for
        something that does not exist: each change is named by its own ids, never by where
        the source of truth holds them."""
        created: set[str] = set()  # nodes this batch makes, under the scope
        for i, change in enumerate(parsed, 1):
            for node_id in self.service.touches(change):
                if node_id not in created and not self.service.within(node_id, caller.scope):
                    what = "document" if change.level == DOCUMENT else change.level
                    raise ApiError(404, f"change {i}: no {what} {change.key[:80]!r} in this scope")
            if change.op == "upsert" and change.level != DOCUMENT:
                created.add(f"{change.level}:{change.key}")

    def _confined(self, out: dict, ticket, caller: Caller) -> dict:
        """A token's view of its write: the batch it joined holds other clients' writes, so
        only nodes of its scope or named by its own changes, and a failure of the batch in
        general words (the service's log and ``/v1/health`` on loopback say more)."""
        own = {n for change in ticket.changes for n in self.service.named(change)}
        for key in ("leaves", "deleted", "emptied"):
            if key in out:
                out[key] = [n for n in out[key] if n in own or self.service.within(n, caller.scope)]
        out.pop("batch_writes", None)
        if ticket.error and not ticket.own_error:
            out["error"] = (
                "nothing was written: the batch it joined failed; send it again"
                if ticket.refused
                else "applied (durable) but not built yet: memory answers as before until a "
                "later batch builds it"
            )
        return out

    @staticmethod
    def _user_errors(fn, *args):
        try:
            return fn(*args)
        except USER_ERRORS as exc:  # the question or the scope is wrong: say so
            raise bad(str(exc)) from None

    def _tree_node(self, topology, node, depth: int, budget: list[int]) -> dict:
        budget[0] -= 1
        out = {"node_id": node.node_id, "level": node.level, "name": node.name}
        children = topology.children(node)
        if children:
            out["children_count"] = len(children)
        if depth > 0 and children and budget[0] > 0:
            out["children"] = []
            for child in children:
                if budget[0] <= 0:
                    budget[0] = -1
                    break
                out["children"].append(self._tree_node(topology, child, depth - 1, budget))
        return out

    def _connect(self):
        return database.connect(self.settings.duckdb_path, read_only=True)

    def _document_row(self, doc_id: str):
        with self._connect() as con:
            return con.execute(
                "SELECT kind, updated_at, text FROM sot_documents WHERE doc_id = ?", [doc_id]
            ).fetchone()

    def _node_view(self, node_id: str) -> dict:
        """A node's memory: the node, who built it, its summary, facets with their support,
        QA pairs, children and (a leaf) its documents."""
        schema = self.schema
        topology = self.service.topology
        info = topology.node(node_id)
        is_leaf = schema.is_leaf(info.level)
        children = topology.children(info)
        out: dict = {
            "node_id": node_id,
            "level": info.level,
            "name": info.name,
            "parent_id": info.parent_id,
            "path": info.path,
        }
        with self._connect() as con:
            built = read_node(con, node_id)
            summary = read_summary(con, node_id)
            facets = read_facets(con, node_id)
            qa = read_qa(con, node_id)
            history = read_history(con, node_id) if is_leaf else []
            documents = read_leaf_documents(con, schema, info.raw_id) if is_leaf else []
        leaf_count = built.leaf_count if built else 0
        out["built"] = (
            None
            if built is None
            else {
                "engine": built.engine,
                "embed_model": built.embed_model,
                "hints_version": built.hints_version,
                "built_at": built.built_at.isoformat() if built.built_at else None,
                "leaf_count": built.leaf_count,
                "doc_count": built.doc_count,
                "emptied": built.emptied,
            }
        )
        out["summary"] = (
            None if summary is None else {"sentence": summary[0], "paragraph": summary[1]}
        )
        out["facets"] = [
            {"key": key, "value": value, "source_ids": list(sources)}
            | ({} if is_leaf else {"support": support, "of": leaf_count})
            for key, value, support, sources in facets
            if is_leaf or key != schema.leaf_count_key
        ]
        if is_leaf:  # what held once and a later document replaced
            out["history"] = [
                {
                    "key": key,
                    "value": value,
                    "source_ids": list(sources),
                    "valid_from": since or None,
                    "valid_to": until,
                }
                for key, value, sources, since, until in history
            ]
        out["qa"] = [
            {"question": q, "answer": a, "source_ids": list(sources)} for q, a, sources in qa
        ]
        out["children"] = [
            {"node_id": c.node_id, "level": c.level, "name": c.name} for c in children[:MAX_LISTED]
        ]
        out["children_count"] = len(children)
        if is_leaf:
            out["documents"] = [
                {
                    "doc_id": doc_id,
                    "kind": kind,
                    "updated_at": updated,
                    "text": text[:PREVIEW_CHARS],
                    "truncated": len(text) > PREVIEW_CHARS,
                }
                for doc_id, kind, updated, text in documents[:MAX_LISTED]
            ]
        return out


class ServiceClient:
    """:class:`MemoryOperations` on a running memory service over HTTP, with ``token``
    (``$HLTM_TOKEN``): that service decides the scope; ``caller`` is not used."""

    def __init__(self, url: str, token: str | None = None, timeout_s: float = 330.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s

    async def ask(self, caller, question, scope=None, contexts=False, as_of=None) -> dict:
        body = {"question": question, "scope": scope, "contexts": contexts, "as_of": as_of}
        return self._ok(await self._call("POST", "/v1/ask", body))

    async def search(self, caller, query, scope=None, limit=None) -> dict:
        body = {"query": query, "scope": scope, "limit": limit}
        return self._ok(await self._call("POST", "/v1/search", body))

    async def browse(self, caller, node_id=None) -> dict:
        # No node: the token's scope node (or the top of the tree), as Operations.browse.
        path = "/v1/nodes/" + urllib.parse.quote(str(node_id or ""), safe=":@")
        return self._ok(await self._call("GET", path, None))

    async def remember(self, caller, text, leaf=None, kind=None) -> tuple[int, dict]:
        body = {"text": text, "leaf": leaf, "kind": kind}
        return await self._call("POST", "/v1/remember", body)

    async def forget(self, caller, target) -> tuple[int, dict]:
        return await self._call("POST", "/v1/forget", {"target": target})

    @staticmethod
    def _ok(reply: tuple[int, dict]) -> dict:
        status, out = reply
        if status != 200:
            raise ApiError(status, out.get("error") or f"the memory service answered {status}")
        return out

    async def _call(self, method: str, path: str, body: dict | None) -> tuple[int, dict]:
        return await asyncio.to_thread(self._request, method, path, body)

    def _request(self, method: str, path: str, body: dict | None) -> tuple[int, dict]:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, headers=headers)
        request.method = method
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            try:
                return exc.code, json.loads(exc.read() or b"{}")
            except ValueError:
                return exc.code, {}
        except OSError as exc:
            raise ApiError(
                503,
                f"the memory service at {self.url} cannot be reached ({exc}): "
                "is hltm serve running?",
            ) from None
