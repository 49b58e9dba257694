"""The memory service: one process that owns a home's writing and answers while it writes.

``hltm serve`` holds the home's writer lock for its life. Clients send batches of changes
(:mod:`hltm_resources.stores.changes`) from any number of threads or processes; they queue,
none is refused for another writer. A writer thread takes whatever has queued (a micro-batch),
checks each client's batch against the source of truth on its own (a bad one is refused alone,
with ``file:line`` reasons), applies the good ones in one transaction (from then on they are
durable: a kill loses none), completes any erasure they record, and builds the touched leaves
and their ancestors through the same Dagster assets as ``hltm index``, in process, recorded in
the home's Dagster instance. A write is answered once its leaf is built (read-your-writes at
the leaf); its seat and account follow in the same batch. A batch whose build fails leaves the
service serving the last good memory; its leaves stay dirty and are built with the next batch
(or by the retry below), and the error is reported in :meth:`MemoryService.status`.

At start the service completes any journaled erasure and runs an incremental index, so what a
killed service (or anything else) left unbuilt is built before the first write.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from hltm_resources.config import Settings
from hltm_resources.faults import fault
from hltm_resources.indexing.erasure import complete_erasures
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.indexing.writes import WriteReport, clear_pending, record_changes
from hltm_resources.stores import database
from hltm_resources.stores.changes import DOCUMENT, Change, ChangeError, SotIds
from hltm_resources.stores.lock import home_lock
from hltm_resources.stores.memory_rows import pending_leaves
from hltm_resources.stores.sot import read_topology

#: What a write waits for before it is answered: its changes are in the source of truth
#: (durable), its leaves are built (a question at a leaf finds it), or its whole path is.
WAITS = ("applied", "leaf", "root")
#: A level of a batch goes through Dagster runs when it needs at most this many (a run takes
#: one contiguous range of partitions and costs some 0.2 s at 10k leaves before it builds);
#: a batch scattered over more parents is built in process and each partition's
#: materialization reported to the instance without a run (:func:`runner.report_level`).
MAX_RUNS = 2
_STAMP = {"applied": "applied", "leaf": "leaf_built", "root": "root_built"}
#: After this long without a write, the service tidies the vector tables its batches wrote
#: (compaction: about 2 s at 10k leaves, so never while writes wait), or builds again what a
#: failed build left.
IDLE_S = 2.0


@dataclass
class Ticket:
    """One client's batch of changes and how far it got (monotonic seconds)."""

    changes: Sequence[Change]
    source: str
    received: float = field(default_factory=time.monotonic)
    seq: int = 0
    applied: float | None = None
    leaf_built: float | None = None
    root_built: float | None = None
    error: str | None = None
    #: Whether ``error`` refused the batch (nothing written) or came after it was applied.
    refused: bool = False
    #: Whether ``error`` is about its own changes, not the batch it joined.
    own_error: bool = False
    report: WriteReport | None = None
    #: The node ids of the leaves its changes touched.
    leaves: list[str] = field(default_factory=list)
    _done: dict[str, threading.Event] = field(
        default_factory=lambda: {w: threading.Event() for w in WAITS}
    )
    _callbacks: list[tuple[str, Callable[[], object]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reach(self, stage: str) -> None:
        """Mark ``stage`` and every stage before it reached (now, unless already)."""
        now = time.monotonic()
        with self._lock:
            for w in WAITS[: WAITS.index(stage) + 1]:
                if not self._done[w].is_set():
                    setattr(self, _STAMP[w], now)
                    self._done[w].set()
        self._call()

    def fail(self, error: str, refused: bool, own: bool = False) -> None:
        """``own``: the error is about this ticket's own changes (not its batch's)."""
        with self._lock:
            self.error, self.refused, self.own_error = error, refused, own
            for event in self._done.values():
                event.set()
        self._call()

    def when(self, stage: str, callback: Callable[[], object]) -> None:
        """Call ``callback`` (from the writer thread, or now) once ``stage`` is reached or the
        ticket failed: how an asynchronous handler waits without holding a thread."""
        with self._lock:
            self._callbacks.append((stage, callback))
        self._call()

    def _call(self) -> None:
        with self._lock:
            due = [cb for stage, cb in self._callbacks if self._done[stage].is_set()]
            self._callbacks = [(s, cb) for s, cb in self._callbacks if cb not in due]
        for callback in due:
            callback()

    def as_dict(self) -> dict:
        def ms(t: float | None) -> float | None:
            return None if t is None else round((t - self.received) * 1000, 1)

        out = {
            "seq": self.seq,
            "changes": len(self.changes),
            "leaves": self.leaves,
            "applied_ms": ms(self.applied),
            "leaf_built_ms": ms(self.leaf_built),
            "root_built_ms": ms(self.root_built),
        }
        if self.report is not None:  # what the whole micro-batch erased or emptied
            out |= {k: self.report.as_dict()[k] for k in ("deleted", "emptied")}
            out["batch_writes"] = self.report.changes
        if self.error:
            out["error"] = self.error
            out["refused"] = self.refused
        return out


class MemoryService:
    """Owns a home's writing while :meth:`running`; thread-safe :meth:`submit`."""

    def __init__(self, settings: Settings, batch_window_s: float = 0.02, max_runs: int = MAX_RUNS):
        self.settings = settings
        self.max_runs = max_runs
        self.schema = settings.schema
        self.batch_window_s = batch_window_s
        self._queue: queue.Queue[Ticket | None] = queue.Queue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seq = 0
        self._dirty: set[str] = set()
        self._ids: SotIds | None = None
        self._defs: tuple[str, object] | None = None
        self._topology = None
        self._instance = None
        self._untidy = False
        #: Held while a question is asked (a :class:`Memory` is not thread-safe).
        self.asking = threading.Lock()
        #: Every write up to this sequence number is built up to the root.
        self._built_seq = 0
        self.indexer: Indexer | None = None
        self.memory = None
        self.stats = {"batches": 0, "writes": 0, "refused": 0, "build_failures": 0}
        self.last_error: str | None = None

    # -- life ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def running(self, catch_up: bool = True):
        """Hold the writer lock, build what is left, then take writes until the block ends."""
        from hltm_assets.runner import dagster_instance, fail_abandoned_runs
        from query.memory import Memory

        database.init_schema(self.settings.duckdb_path, self.schema)
        with (
            home_lock(self.settings, "serve"),
            database.owned(self.settings.duckdb_path),
            dagster_instance(self.settings) as instance,
        ):
            self._instance = instance
            fail_abandoned_runs(instance)
            complete_erasures(self.settings)
            self.indexer = Indexer(self.settings)
            self._reload_ids()
            if catch_up:
                self._catch_up()
            self.memory = Memory(
                self.settings, embedder=self.indexer.embedder, read_consistency=timedelta(0)
            )
            self._thread = threading.Thread(target=self._loop, name="hltm-writer", daemon=True)
            self._thread.start()
            try:
                yield self
            finally:
                self._stop.set()
                self._queue.put(None)
                self._thread.join()
                self.memory.close()

    def _catch_up(self) -> None:
        """Build what is not current: writes a killed service applied and never built, or
        anything else left stale. Should that fail, its leaves stay dirty, the service starts
        on the last good memory and builds them again when idle."""
        with database.connect(self.settings.duckdb_path) as con:
            pending = pending_leaves(con)
        try:
            self._index(plan=None)
        except Exception as exc:  # noqa: BLE001 - serve what is built; retry when idle
            self.last_error = f"catching up failed: {type(exc).__name__}: {exc}"
            traceback.print_exc()
            plan = self.indexer.plan()
            self._dirty = {item.node_id for item in plan.build[self.schema.leaf.name]}
            return
        clear_pending(self.settings, pending)

    def submit(self, changes: Sequence[Change], source: str = "changes") -> Ticket:
        """Queue a batch; the ticket says when it is applied and built (or why not)."""
        ticket = Ticket(list(changes), source)
        if self._stop.is_set():
            ticket.fail("the memory service is stopping; nothing was written", refused=True)
            return ticket
        self._queue.put(ticket)
        return ticket

    def ask(self, question: str, scope: object, as_of: str | None = None):
        """:meth:`Memory.ask` on the memory as the last batch left it (one question at a time:
        a :class:`Memory` keeps per-scope caches that are not shared between threads)."""
        with self.asking:
            return self.memory.ask(question, scope, as_of=as_of)

    def retrieve(self, question: str, scope: str, k: int = 10):
        """:meth:`Memory.retrieve` (no answer, no log): the top ``k`` items of each view."""
        with self.asking:
            return self.memory.retrieve(
                question, scope, k_facet=k, k_qa=k, k_summary=k, k_evidence=k
            )

    @property
    def topology(self):
        """The tree as the source of truth holds it after the last batch."""
        return self._topology

    def document_leaf(self, doc_id: str) -> str | None:
        """The node id of the leaf a document belongs to now, or None."""
        ids = self._ids
        raw = ids.parent[DOCUMENT].get(doc_id) if ids is not None else None
        return None if raw is None else f"{self.schema.leaf.name}:{raw}"

    def status(self) -> dict:
        return {
            "home": str(self.settings.home),
            "queued": self._queue.qsize(),
            "last_seq": self._seq,
            "built_seq": self._built_seq,
            "dirty_leaves": len(self._dirty),
            "last_error": self.last_error,
            **self.stats,
        }

    # -- the writer thread -----------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                first = self._queue.get(timeout=IDLE_S if self._dirty or self._untidy else None)
            except queue.Empty:
                if self._dirty:
                    self._build([])  # retry what a failed build left
                else:
                    self._tidy()
                continue
            if first is None:
                break
            tickets = [first]
            deadline = time.monotonic() + self.batch_window_s
            while True:  # whatever else arrives within the window joins this batch
                try:
                    more = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if more is None:
                    self._stop.set()
                    break
                tickets.append(more)
            self._batch(tickets)
        while True:  # refuse what is still queued: nothing of it was written
            try:
                left = self._queue.get_nowait()
            except queue.Empty:
                break
            if left is not None:
                left.fail("the memory service stopped; nothing was written", refused=True)

    def _batch(self, tickets: list[Ticket]) -> None:
        try:
            with (
                database.connect(self.settings.duckdb_path) as con,
                database.transaction(con),
            ):
                report, problems = record_changes(
                    con,
                    self.schema,
                    self._ids,
                    [(t.changes, t.source) for t in tickets],
                    topology=self._topology,
                )
            self._topology = report.tree
        except Exception as exc:  # noqa: BLE001 - nothing was written; every ticket hears why
            self._reload_ids()  # they moved on with the changes rolled back
            self.last_error = f"{type(exc).__name__}: {exc}"
            for ticket in tickets:
                ticket.fail(f"nothing was written: {self.last_error}", refused=True)
            return
        fault("serve:committed")
        accepted = []
        for ticket, found, leaves in zip(tickets, problems, report.batch_leaves, strict=True):
            if found:
                ticket.fail(str(ChangeError(ticket.source, found)), refused=True, own=True)
                self.stats["refused"] += 1
                continue
            self._seq += 1
            ticket.seq = self._seq
            ticket.report, ticket.leaves = report, leaves
            ticket.reach("applied")
            accepted.append(ticket)
        self.stats["batches"] += 1
        self.stats["writes"] += len(accepted)
        if report.deleted or report.emptied:
            complete_erasures(self.settings)
            self.memory.saw_write()
        # Documents written (none deleted): the build replaces the rows of the nodes it builds
        # and nothing else, so questions elsewhere keep the rows they read (Memory.writing).
        in_place = not (report.deleted or report.emptied) and all(
            change.level == DOCUMENT and change.op == "upsert"
            for ticket in accepted
            for change in ticket.changes
        )
        self._build(accepted, report.leaves, in_place=in_place)

    def node(self, node_id: str) -> dict | None:
        """A node as the source of truth describes it now (id, level, name, parent, path)."""
        tree = self._topology
        found = tree.node(node_id) if tree is not None else None
        if found is None:
            return None
        keys = ("node_id", "level", "name", "parent_id", "path")
        return {key: getattr(found, key) for key in keys}

    def within(self, node_id: str, scope: str) -> bool:
        """Whether ``node_id`` is ``scope`` or below it in the tree as it is now."""
        tree = self._topology
        node = tree.node(node_id) if tree is not None and isinstance(node_id, str) else None
        if node is None:
            return False
        return node_id == scope or any(a.node_id == scope for a in tree.ancestors(node))

    def named(self, change: Change) -> list[str]:
        """The nodes a change names itself: a document upsert its leaf; a node change the
        node and, an upsert, its parent."""
        schema = self.schema
        if change.level == DOCUMENT:
            leaf = schema.leaf
            return [f"{leaf.name}:{change.record[leaf.id_field]}"] if change.op == "upsert" else []
        out = [f"{change.level}:{change.key}"]
        parent = schema.parent(change.level)
        if change.op == "upsert" and parent is not None:
            out.append(f"{parent.name}:{change.record[parent.id_field]}")
        return out

    def touches(self, change: Change) -> list[str]:
        """The nodes a change must lie under: where its record is now (an upsert may move a
        document) and what it names, but a node it creates. A change that names nothing
        there gives a node that exists nowhere, refused as one outside the scope is."""
        ids, level, key = self._ids, change.level, change.key
        if ids is None:
            return ["?"]
        if level == DOCUMENT:
            now = ids.parent[DOCUMENT].get(key)
            where = [f"{self.schema.leaf.name}:{now}"] if now is not None else []
            return where + self.named(change) or ["?"]
        made = key not in ids.parent[level]
        return [n for n in self.named(change) if not (made and n == f"{level}:{key}")] or ["?"]

    def _reload_ids(self) -> None:
        """The ids and the tree as the source of truth holds them now."""
        with database.connect(self.settings.duckdb_path) as con:
            self._ids = SotIds(con, self.schema)
            self._topology = read_topology(con, self.schema)

    def _build(self, tickets: list[Ticket], leaves: Sequence[str] = (), in_place=False) -> None:
        """Build the dirty leaves and their ancestors. ``in_place``: only documents were
        written, so the build replaces the rows of the nodes it builds and nothing else."""
        self._dirty.update(leaves)
        leaf = self.schema.leaf.name

        def after_level(level: str) -> None:
            self.memory.saw_write()
            stage = "leaf" if level == leaf else ("root" if level == self.schema.root.name else "")
            if stage:
                for ticket in tickets:
                    ticket.reach(stage)

        built = sorted(self._dirty)
        try:
            plan = self.indexer.plan_for(built, topology=self._topology)
            with self._announced(plan if in_place else None):
                self._index(plan, after_level)
            clear_pending(self.settings, built)
        except Exception as exc:  # noqa: BLE001 - the service goes on with the last good memory
            self.memory.saw_write()
            self.stats["build_failures"] += 1
            self.last_error = f"build failed: {type(exc).__name__}: {exc}"
            traceback.print_exc()
            for ticket in tickets:
                ticket.fail(
                    f"applied (durable) but not built yet: {self.last_error}; memory answers "
                    "as before it until a later batch builds it",
                    refused=False,
                )
            return
        self._dirty.clear()
        self.last_error = None
        self.memory.saw_write()
        for ticket in tickets:
            ticket.reach("root")
        self._built_seq = self._seq  # batches are applied and built in order

    def _announced(self, plan):
        """Around the build of ``plan``: tells the service's Memory which nodes' rows it
        replaces (``Memory.writing``), when it replaces rows and nothing else; otherwise
        (``plan`` None, or nodes to purge) nothing is announced, and every scope reads its
        rows again after it."""
        if plan is None or plan.purge or plan.orphan_vectors:
            return contextlib.nullcontext()
        paths = [
            found.path
            for items in plan.build.values()
            for item in items
            if (found := self._topology.node(item.node_id)) is not None
        ]
        return self.memory.writing(paths)

    def _index(self, plan, after_level=None):
        from hltm_assets.runner import run_index

        result = run_index(
            self.settings,
            plan=plan,
            indexer=self.indexer,
            after_level=after_level,
            defs=self._definitions,
            instance=self._instance,
            max_runs=None if plan is None else self.max_runs,
            tidy=False,
        )
        self._untidy = self._untidy or result.runs > 0 or sum(result.built.values()) > 0
        if result.failed:
            raise RuntimeError(f"{len(result.failed)} nodes failed: {', '.join(result.failed[:5])}")
        return result

    def _tidy(self) -> None:
        try:
            self.indexer.vectors.tidy(when_needed=True)
            self.memory.saw_write()
        except Exception as exc:  # noqa: BLE001 - compaction can wait for the next idle time
            self.last_error = f"tidying the vector tables failed: {type(exc).__name__}: {exc}"
        self._untidy = False

    def _definitions(self, tree, indexer):
        """The Dagster definitions of ``tree``, made again only when the tree changed."""
        from hltm_assets.definitions import build_definitions

        if self._defs is None or self._defs[0] != tree.fingerprint:
            self._defs = (tree.fingerprint, build_definitions(self.settings, tree, indexer))
        return self._defs[1]


def dagster_build(settings: Settings):
    """A :data:`~hltm_resources.indexing.writes.Build` for direct writes (no service running):
    the write's plan run through the Dagster assets, recorded in the home's instance."""

    def build(leaves: list[str]) -> dict[str, int]:
        from hltm_assets.runner import run_index

        indexer = Indexer(settings)
        result = run_index(settings, plan=indexer.plan_for(leaves), indexer=indexer)
        if result.failed:
            raise RuntimeError(
                f"applied, but {len(result.failed)} nodes failed to build "
                f"({', '.join(result.failed[:5])}); run hltm index"
            )
        return {k: v for k, v in result.as_json().items() if k.endswith("_built")}

    return build
