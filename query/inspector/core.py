"""What every inspector page stands on: the :class:`Inspector` (the home, its serving
``Memory`` and the lock questions take turns under) and a request's :class:`View` of it (the
scope that request may see)."""

from __future__ import annotations

import logging
import threading
from contextlib import AbstractContextManager

from hltm_resources.config import Settings
from hltm_resources.engines import MemoryAgents
from hltm_resources.errors import USER_ERRORS, ScopeError
from hltm_resources.ids import InvalidIdError, parse_node_id
from hltm_resources.stores import database
from query.memory import AskResult, Memory
from query.nodes import Node, read_node
from query.scope import Scope, check_open, resolve_scope

log = logging.getLogger(__name__)

#: How long a page waits for a writer (an index, a load) to release the DuckDB file.
STORE_WAIT_S = 5.0


class PageError(Exception):
    """A page that cannot be shown: its HTTP status, what went wrong and what to do.

    ``back`` is the page (a path inside the inspector) the error page links back to."""

    def __init__(self, status: int, message: str, back: str = "/"):
        super().__init__(message)
        self.status = status
        self.back = back


class _NoReplyCache:
    """An LLM reply cache that keeps nothing: the inspector must not write the home."""

    def get(self, key: str) -> None:
        return None

    def put(self, *args: object) -> None:
        return None


def serving_agents(settings: Settings) -> MemoryAgents | None:
    """The engine for the inspector's questions: an LLM engine without its reply cache (which
    lives in the home); None for the offline engine (``Memory`` makes it, it writes nothing)."""
    if settings.engine == "extractive":
        return None
    from hltm_resources.engines.base import Usage
    from hltm_resources.engines.llm.agents import OpenAIAgents
    from hltm_resources.engines.llm.client import LLMClient, server_context_tokens

    client = LLMClient(settings, Usage(), cache=_NoReplyCache())  # type: ignore[arg-type]
    return OpenAIAgents(
        client, settings.max_input_tokens, settings.schema, server_context_tokens(settings)
    )


class Inspector:
    """The home the pages read, the scope of ``hltm inspect --scope`` (None: everything), and
    the serving ``Memory`` questions go through, one at a time under ``lock``.

    Without ``memory`` it opens its own, with no query log and (LLM engines) no reply cache, so
    nothing is written to the home, and closes it in :meth:`close`. A process that already
    serves the home (the memory service) passes its ``Memory`` and the lock it asks under; the
    inspector then asks through them and leaves both to their owner."""

    def __init__(
        self,
        settings: Settings,
        scope: str | None = None,
        memory: Memory | None = None,
        lock: AbstractContextManager[object] | None = None,
    ):
        check_open(settings.duckdb_path)
        self.settings = settings
        self.schema = settings.schema
        self.scope_id: str | None = None
        if scope is not None:
            with self.connect() as con:  # raises ScopeError saying why (and the known nodes)
                self.scope_id = resolve_scope(con, scope, self.schema).node_id
        self._owns_memory = memory is None
        self.memory = memory or Memory(settings, agents=serving_agents(settings), log_queries=False)
        self._ask_lock = lock if lock is not None else threading.Lock()

    def connect(self):
        """A short read-only connection to the home's DuckDB file (one per page, so a page
        loaded after a rebuild shows the rebuilt memory)."""
        return database.connect(self.settings.duckdb_path, read_only=True, timeout_s=STORE_WAIT_S)

    def warm_up(self) -> None:
        """Load what the first question would (the model, the tables' indexes, the tree's
        values): ``hltm inspect`` runs this in the background as it starts serving pages, so
        the first question does not pay for it (at 10k leaves the first question in the
        largest account took 2.2 s cold, 0.66 s after it). Questions asked meanwhile wait."""
        with self._ask_lock:
            self.memory.warm_up()

    def ask(self, question: str, scope: str) -> AskResult:
        """One question at a time (``Memory`` is not thread-safe)."""
        with self._ask_lock:
            try:
                return self.memory.ask(question, scope=scope)
            except USER_ERRORS:  # the question, the scope or the home is wrong: say so
                raise
            except Exception:  # a rebuild under the open tables: reopen them, once
                log.warning("question failed; reopening the memory and asking again", exc_info=True)
                self.memory.refresh()
                return self.memory.ask(question, scope=scope)

    def close(self) -> None:
        """Close the ``Memory`` if the inspector opened it, once the warm-up or a question
        using it is done (a process that exits with one under way in native code aborts)."""
        if self._owns_memory:
            with self._ask_lock:
                self.memory.close()


class View:
    """One request's view of the memory: the inspector, and the node whose subtree this request
    may see (None: everything). Nothing outside it is shown, and nothing above it is linked;
    what lies outside gets the same 404 as what does not exist."""

    def __init__(self, inspector: Inspector, scope_id: str | None, restart_hint: str = ""):
        self.inspector = inspector
        self.settings = inspector.settings
        self.schema = inspector.schema
        self.scope_id = scope_id
        self._restart_hint = restart_hint
        self._resolved: Scope | None = None

    def connect(self):
        return self.inspector.connect()

    def scope(self, con) -> Scope | None:
        """The scope node where the memory places it now (read once a request: a rebuild may
        move or delete it)."""
        if self.scope_id is None:
            return None
        if self._resolved is None:
            try:
                self._resolved = resolve_scope(con, self.scope_id, self.schema)
            except ScopeError:
                raise PageError(
                    404,
                    f"the scope {self.scope_id} is no longer in the memory (deleted?)"
                    + self._restart_hint,
                ) from None
        return self._resolved

    def visible(self, con, path: str) -> bool:
        scope = self.scope(con)
        return scope is None or scope.contains(path)

    def where(self) -> str:
        """`` under <scope>`` for messages, or nothing."""
        return f" under {self.scope_id}" if self.scope_id else ""

    def node(self, con, node_id: str) -> Node:
        """The node if the memory holds it inside the scope, else 404 (the same answer for
        both, so nothing tells what lies outside the scope)."""
        try:
            node_id = str(parse_node_id(node_id, self.schema))
        except InvalidIdError as exc:
            raise PageError(404, f"{exc}; browse from the top page instead") from None
        node = read_node(con, node_id)
        if node is None or not self.visible(con, node.path):
            raise PageError(
                404, f"no node {node_id} in the memory{self.where()}; browse from the top page"
            )
        return node

    def ask(self, question: str, node_id: str) -> AskResult:
        return self.inspector.ask(question, node_id)
