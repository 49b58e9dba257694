"""Building memory: the plan of what to rebuild, and building a batch of nodes of one level.

The :class:`Indexer` is what the Dagster assets, the CLI, ``hltm verify``, the tests and the
evaluation all build with. A leaf's input hash covers its name and documents; a parent's covers
its name and its children's memory hashes. Both also cover the engine, the embedding model and
the adaptation hints version, so changing any of them rebuilds exactly what it affects.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import timedelta

import numpy as np
import pyarrow as pa

from hltm_resources.config import Settings
from hltm_resources.embedding import Embedder, make_embedder
from hltm_resources.engines import Hints, MemoryAgents, Usage, make_agents
from hltm_resources.engines.base import node_usage
from hltm_resources.faults import fault
from hltm_resources.indexing.erasure import complete_erasures
from hltm_resources.indexing.evidence import EVIDENCE_VERSION, leaf_passages
from hltm_resources.indexing.hints import load_active_hints
from hltm_resources.indexing.plan import Plan, make_plan, split_changed
from hltm_resources.indexing.preview import memory_preview
from hltm_resources.models import Document, Memory, NodeInfo, Topology, stable_hash
from hltm_resources.schema import TreeSchema
from hltm_resources.stores import database
from hltm_resources.stores.lock import home_lock, run_lock
from hltm_resources.stores.memory_rows import (
    INVALIDATED,
    BuildMeta,
    NodeState,
    erase_rows,
    evidence_counts,
    read_memories,
    read_states,
    write_memories,
)
from hltm_resources.stores.sot import read_documents, read_topology
from hltm_resources.stores.vectors import (
    CONTEXT_VECTOR,
    TABLES,
    VectorStore,
    node_filter,
    table_schema,
    vector_items,
    vector_matrix,
)

#: Bump when what a node's memory holds changes for every engine (2: facts with validity).
INPUT_HASH_VERSION = 2
#: Nodes built, embedded and written together. Each chunk adds one fragment to every LanceDB
#: table and every write first deletes the chunk's old rows, a search through the fragments
#: written so far: few large chunks keep a first build linear in its leaves (at 100k leaves,
#: chunks of 48 made those deletes as slow as embedding). A parent's chunk reads its children's
#: memories, so parent levels take fewer at once.
LEAF_CHUNK = 512
PARENT_CHUNK = 64
EMBED_CACHE_SIZE = 50_000
#: The most of index pages, and the most of table metadata, LanceDB keeps in memory for a
#: build (its defaults: 6 GB of index pages, 1 GB of metadata).
BUILD_CACHE_BYTES = 128 * 2**20
#: Leaves whose documents a plan reads at once to hash them (each read scans the documents).
HASHED_LEAVES = 4096

Progress = Callable[[int], None]
BuildLevel = Callable[[str, Sequence[str]], object]


class StaleTopologyError(RuntimeError):
    """Dagster's partitions no longer match the source of truth."""


class ChildrenNotBuiltError(ValueError):
    """A parent whose children are not all built: never aggregated from some of them."""


class NodeBuildError(RuntimeError):
    """Some nodes of a batch failed; the others were written, the failed ones kept their
    last good memory."""

    def __init__(self, failures: dict[str, str], built: int, report: BuildReport | None = None):
        self.failures = failures
        #: What the batch did for the nodes that did not fail.
        self.report = report
        shown = "; ".join(f"{n}: {e}" for n, e in sorted(failures.items())[:5])
        more = f" (+{len(failures) - 5} more)" if len(failures) > 5 else ""
        super().__init__(
            f"{len(failures)} node(s) failed ({built} built and stored; the failed "
            f"ones keep their last good memory): {shown}{more}"
        )


@dataclass
class BuildReport:
    """What building a batch of one level did: an entry per node (:func:`node_entry`), built
    or left as it was (``only_changed``), and the batch's time per phase and engine usage."""

    level: str
    per_node: list[dict] = field(default_factory=list)
    engine_s: float = 0.0
    embed_s: float = 0.0
    write_s: float = 0.0
    usage: dict = field(default_factory=dict)

    def _with(self, status: str) -> list[dict]:
        return [e for e in self.per_node if e["status"] == status]

    @property
    def nodes(self) -> list[str]:
        """The nodes built."""
        return [e["node_id"] for e in self._with("built")]

    @property
    def unchanged(self) -> list[str]:
        """The nodes left as they were: their stored memory is current."""
        return [e["node_id"] for e in self._with("unchanged")]

    def metadata(self, engine_id: str, embed_model: str) -> dict:
        """Which engine and model built the batch, and what the batch as a whole did
        (``batch``: every partition of a run carries it, so it is one entry)."""
        built = self._with("built")
        batch = {"nodes_built": len(built), "nodes_unchanged": len(self._with("unchanged"))}
        totals = ("facets", "qa_pairs", "evidence_passages", "source_documents", "embedded_texts")
        batch |= {key: sum(e[key] for e in built) for key in totals}
        batch |= {
            "engine_seconds": round(self.engine_s, 3),
            "embed_seconds": round(self.embed_s, 3),
            "write_seconds": round(self.write_s, 3),
        }
        batch.update({k: v for k, v in self.usage.items() if v is not None})
        return {"engine": engine_id, "embed_model": embed_model, "batch": batch}

    def node_metadata(self) -> dict[str, dict]:
        """Each node's own part, by node id (:func:`node_entry`): what it holds, what
        building it cost (``status: built``), or ``status: unchanged`` for a node whose stored
        memory was current (what it holds, as stored)."""
        return {entry["node_id"]: entry for entry in self.per_node}


def node_entry(
    node: NodeInfo, memory: Memory, schema: TreeSchema, status: str, passages: int | None = None
) -> dict:
    """What one node's memory holds: counts per view, its rows in the memory views, and a
    markdown preview (:func:`memory_preview`). ``passages``: its evidence passages, when
    ``memory`` was read without them."""
    passages = len(memory.evidence) if passages is None else passages
    return {
        "node_id": node.node_id,
        "name": node.name,
        "status": status,
        "facets": len(memory.facets),
        "qa_pairs": len(memory.qa),
        "summaries": 1,
        "evidence_passages": passages,
        "rows": len(memory.facets) + len(memory.qa) + 1 + passages,
        "preview": memory_preview(node, memory, schema),
    }


def node_cost(usage: Usage) -> dict:
    """What building one node cost the engine (LLM calls and tokens when it made any)."""
    cost = {"engine_calls": usage.engine_calls}
    if usage.llm_calls or usage.cache_hits:
        cost |= {
            "llm_calls": usage.llm_calls,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "llm_cache_hits": usage.cache_hits,
        }
    return cost


def embedded_share(rows: dict[str, list[dict]], embedded: set[str]) -> dict[str, int]:
    """Per node, how many of ``embedded`` (the texts one embedding call embedded for a batch
    of nodes) were embedded for it: each text counts once, for the first node holding it, so
    the shares add up to the call's texts."""
    share: dict[str, int] = {}
    seen: set[str] = set()
    for name in TABLES:
        for row in rows[name]:
            text = row["text"]
            if text in embedded and text not in seen:
                seen.add(text)
                share[row["node_id"]] = share.get(row["node_id"], 0) + 1
    return share


class Indexer:
    """Plans and builds memory for one home with one engine and one embedder."""

    def __init__(
        self,
        settings: Settings,
        agents: MemoryAgents | None = None,
        embedder: Embedder | None = None,
        hints: Hints | None = None,
        write_vectors: bool = True,
        embed_cache_size: int = EMBED_CACHE_SIZE,
    ):
        self.settings = settings
        self.schema = settings.schema
        self.write_vectors = write_vectors
        self.embed_cache_size = embed_cache_size
        self._vec_cache: dict[str, np.ndarray] = {}
        #: The nodes the last build failed on, why (every other node was stored); None when
        #: that build stopped before its end.
        self.last_failures: dict[str, str] | None = None
        self._pinned: Topology | None = None
        self.agents = agents or make_agents(settings)
        self.embedder = embedder or make_embedder(settings)
        database.init_schema(settings.duckdb_path, self.schema)
        self._fixed_hints = hints is not None
        self.hints = hints if hints is not None else Hints()
        self.refresh_hints()
        # Writers of a shared store (the distributed deployment's workers) see one another's
        # commits at once; a home's only writer needs no such check.
        self.vectors = VectorStore(
            settings.lancedb_path,
            self.embedder.model_id,
            self.embedder.dim,
            read_consistency=timedelta(0) if settings.distributed else None,
            cache_bytes=BUILD_CACHE_BYTES,
        )

    def refresh_hints(self) -> None:
        """Follow the active adaptation hints (an approval between two runs changes them)."""
        if not self._fixed_hints:
            with database.connect(self.settings.duckdb_path, read_only=True) as con:
                self.hints = load_active_hints(con)

    # -- hashing -------------------------------------------------------------------------
    def _fingerprint(self) -> dict:
        return {
            "v": INPUT_HASH_VERSION,
            "engine": self.agents.engine_id,
            "embed": self.embedder.model_id,
            "hints": self.hints.version,
            "evidence": EVIDENCE_VERSION,
        }

    def leaf_hash(self, node: NodeInfo, docs: Sequence[Document]) -> str:
        payload = [[d.doc_id, d.kind, d.text, d.updated_at] for d in docs]
        return stable_hash(self._fingerprint() | {"name": node.name, "docs": payload})

    def parent_hash(
        self, node: NodeInfo, children: Sequence[NodeInfo], states: dict[str, NodeState]
    ) -> str:
        kids = [
            [c.node_id, states[c.node_id].memory_hash if c.node_id in states else None]
            for c in sorted(children, key=lambda c: c.node_id)
        ]
        return stable_hash(self._fingerprint() | {"name": node.name, "children": kids})

    # -- planning ------------------------------------------------------------------------
    def plan(self, full: bool = False) -> Plan:
        """What an index run must rebuild, and why, from the SOT and the stored hashes."""
        self.vectors.check_model()
        self.refresh_hints()
        with database.connect(self.settings.duckdb_path, read_only=True) as con:
            topo = read_topology(con, self.schema)
            states = read_states(con)
            hashes = self._leaf_hashes(con, list(topo.leaves.values()))
        vector_ids: set[str] = set()
        for name in TABLES:
            vector_ids |= self.vectors.node_ids(name)
        return make_plan(
            topo,
            states,
            leaf_hash=lambda node: hashes[node.raw_id],
            parent_hash=self.parent_hash,
            vector_ids=vector_ids,
            full=full,
        )

    def _leaf_hashes(self, con, leaves: Sequence[NodeInfo]) -> dict[str, str]:
        """:meth:`leaf_hash` of each of ``leaves`` by raw id, reading the documents of
        :data:`HASHED_LEAVES` leaves at a time (all at once held every document of the tree)."""
        hashes: dict[str, str] = {}
        for start in range(0, len(leaves), HASHED_LEAVES):
            chunk = leaves[start : start + HASHED_LEAVES]
            docs = read_documents(con, self.schema, [n.raw_id for n in chunk])
            hashes.update((n.raw_id, self.leaf_hash(n, docs[n.raw_id])) for n in chunk)
        return hashes

    def plan_for(self, leaves: Sequence[str], topology: Topology | None = None) -> Plan:
        """The plan after writes that changed ``leaves`` (node ids) and nothing else: their
        input hashes are computed from their documents, every other leaf's stored hash stands
        (its documents are not read), parents are planned as :meth:`plan` plans them, and a
        node emptied by a deletion or a move is rebuilt. What :meth:`plan` finds after the
        same writes, for the price of the touched leaves (``hltm verify`` compares).
        ``topology``: the current tree, when the caller keeps it."""
        self.vectors.check_model()
        self.refresh_hints()
        with database.connect(self.settings.duckdb_path, read_only=True) as con:
            topo = topology if topology is not None else read_topology(con, self.schema)
            states = read_states(con)
            raws = [n.split(":", 1)[1] for n in leaves if topo.node(n) is not None]
            docs = read_documents(con, self.schema, raws)

        def leaf_hash(node: NodeInfo) -> str:
            if node.raw_id in docs:
                return self.leaf_hash(node, docs[node.raw_id])
            state = states.get(node.node_id)
            return state.input_hash if state else ""

        return make_plan(topo, states, leaf_hash, self.parent_hash)

    def build_plan(self, plan: Plan, build_level: BuildLevel | None = None) -> list:
        """Build what ``plan`` says, level by level from the leaves up; returns what each
        level's build returned.

        ``build_level(level, raw_ids)`` builds one level's nodes: :meth:`build` by default; the
        CLI passes one that materializes them through Dagster.
        """
        with home_lock(self.settings, "index"):
            complete_erasures(self.settings)
            fault("index:planned")
            self.purge(plan.purge)
            if plan.orphan_vectors:
                self.vectors.delete_nodes(plan.orphan_vectors)
            build_level = build_level or self.build
            return [
                build_level(level, plan.keys(level))
                for level in self.schema.bottom_up
                if plan.keys(level)
            ]

    def build_all(self, full: bool = False) -> Plan:
        """Plan, then build the plan (no Dagster); returns the plan."""
        with home_lock(self.settings, "index"):
            plan = self.plan(full=full)
            self.build_plan(plan)
        return plan

    @contextmanager
    def pinned(self, topology: Topology) -> Iterator[None]:
        """Builds inside this block take ``topology`` as the tree, and skip finishing erasures
        and re-reading hints and the model of the vector tables.

        For an index run that holds the home's writer lock from its plan to its last build:
        nothing else can then load a tree, journal an erasure or approve hints, and the run has
        already done all three checks once. At 100k leaves re-reading them cost every Dagster
        run a few DuckDB connections and the whole topology.
        """
        self._pinned = topology
        try:
            yield
        finally:
            self._pinned = None

    @property
    def pinned_topology(self) -> Topology | None:
        """The tree an index run pinned (None outside :meth:`pinned`)."""
        return self._pinned

    # -- building ------------------------------------------------------------------------
    def build(
        self,
        level: str,
        raw_ids: Sequence[str],
        progress: Progress | None = None,
        expected_children: Sequence[str] | None = None,
        only_changed: bool = False,
    ) -> BuildReport:
        """Build and store the memory of ``raw_ids`` (all of one level), in chunks.

        ``only_changed``: build only the nodes whose stored memory is not current (the plan's
        rule, :func:`split_changed`) and report the others as unchanged. ``hltm index`` runs a
        whole parent's range of partitions to build a few of them; the other callers ask for
        exactly the nodes they want rebuilt.
        """
        with run_lock(self.settings, "index"):
            if self._pinned is None:
                complete_erasures(self.settings)  # a Dagster run may come first after a crash
            report = self._build(level, raw_ids, progress, expected_children, only_changed)
        fault("index:level-built")
        return report

    def _build(
        self,
        level: str,
        raw_ids: Sequence[str],
        progress: Progress | None,
        expected_children: Sequence[str] | None,
        only_changed: bool = False,
    ) -> BuildReport:
        report = BuildReport(level)
        self.last_failures = None  # set once every chunk ran (see NodeBuildError)
        if self._pinned is None:
            self.vectors.check_model()
            self.refresh_hints()
            with database.connect(self.settings.duckdb_path, read_only=True) as con:
                topo = read_topology(con, self.schema)
        else:
            topo = self._pinned
        usage_before = self.agents.usage.snapshot()
        nodes = _resolve(topo, level, raw_ids)
        if expected_children is not None:
            _check_children(topo, level, nodes, expected_children)
        if only_changed:
            nodes, unchanged = self._split_changed(topo, level, nodes)
            report.per_node += self._stored_entries(unchanged)
        failures: dict[str, str] = {}
        size = LEAF_CHUNK if self.schema.is_leaf(level) else PARENT_CHUNK
        for start in range(0, len(nodes), size):
            chunk = nodes[start : start + size]
            failures.update(self._build_chunk(topo, level, chunk, report, progress))
        after = self.agents.usage.snapshot()
        report.usage = {
            k: (after[k] - usage_before[k]) if isinstance(after[k], int) else after[k]
            for k in after
        }
        self.last_failures = failures
        if failures:
            raise NodeBuildError(failures, len(report.nodes), report)
        return report

    def _stored_entries(self, nodes: list[NodeInfo]) -> list[dict]:
        """:func:`node_entry` of ``nodes`` (``status: unchanged``) from their stored memory."""
        if not nodes:
            return []
        ids = [n.node_id for n in nodes]
        with database.connect(self.settings.duckdb_path, read_only=True) as con:
            stored = read_memories(con, ids, evidence=False)
            passages = evidence_counts(con, ids)
        return [
            node_entry(n, stored[n.node_id], self.schema, "unchanged", passages.get(n.node_id, 0))
            for n in nodes
            if n.node_id in stored
        ]

    def _split_changed(
        self, topo: Topology, level: str, nodes: list[NodeInfo]
    ) -> tuple[list[NodeInfo], list[NodeInfo]]:
        """``nodes`` to build and ``nodes`` whose memory is current, by the hashes the plan
        compares (reading only these nodes, their children and their documents)."""
        leaf = self.schema.is_leaf(level)
        kids = {} if leaf else {n.node_id: topo.children(n) for n in nodes}
        ids = [n.node_id for n in nodes] + [c.node_id for cs in kids.values() for c in cs]
        with database.connect(self.settings.duckdb_path, read_only=True) as con:
            states = read_states(con, node_ids=ids)
            docs = read_documents(con, self.schema, [n.raw_id for n in nodes]) if leaf else {}

        def current(node: NodeInfo) -> str:
            if leaf:
                return self.leaf_hash(node, docs[node.raw_id])
            return self.parent_hash(node, kids[node.node_id], states)

        return split_changed(nodes, states, current)

    def _memory_of(self, level: str, node: NodeInfo, docs, kids, memories, states):
        if self.schema.is_leaf(level):
            node_docs = docs[node.raw_id]
            memory = self.agents.build_leaf(node, node_docs, self.hints)
            memory = replace(memory, evidence=leaf_passages(node_docs))
            return node, memory, self.leaf_hash(node, node_docs), len(node_docs)
        unbuilt = [
            c.node_id
            for c in kids[node.node_id]
            if c.node_id not in memories
            or c.node_id not in states
            or states[c.node_id].input_hash == INVALIDATED
        ]
        if unbuilt:  # aggregating the others would drop these children's facts silently
            raise ChildrenNotBuiltError(
                f"{len(unbuilt)} of its {len(kids[node.node_id])} children have no memory "
                f"({', '.join(unbuilt[:3])}{', ...' if len(unbuilt) > 3 else ''}): their builds "
                "failed or have not run; it is built once they are (hltm index)"
            )
        children = [(c, memories[c.node_id]) for c in kids[node.node_id]]
        memory = self.agents.aggregate(node, children, self.hints)
        return node, memory, self.parent_hash(node, kids[node.node_id], states), 0

    def _build_chunk(
        self,
        topo: Topology,
        level: str,
        chunk: list[NodeInfo],
        report: BuildReport,
        progress: Progress | None,
    ) -> dict[str, str]:
        """Build, embed and store one chunk; returns the nodes that failed, with why."""
        t0 = time.perf_counter()
        docs = kids = memories = states = None
        with database.connect(self.settings.duckdb_path, read_only=True) as con:
            stored = set(read_states(con, node_ids=[n.node_id for n in chunk]))
            if self.schema.is_leaf(level):
                docs = read_documents(con, self.schema, [n.raw_id for n in chunk])
            else:
                kids = {n.node_id: topo.children(n) for n in chunk}
                child_ids = [c.node_id for cs in kids.values() for c in cs]
                states = read_states(con, node_ids=child_ids)
                # Aggregation reads facets, QA pairs and summaries; never passages.
                memories = read_memories(con, child_ids, evidence=False)
        items: list[tuple[NodeInfo, Memory, str, int]] = []
        failures: dict[str, str] = {}

        usage: dict[str, Usage] = {}

        def one(node: NodeInfo):
            try:
                with node_usage() as usage[node.node_id]:
                    return self._memory_of(level, node, docs, kids, memories, states)
            except (RuntimeError, ValueError) as exc:  # LLM output/transport errors, bad data
                failures[node.node_id] = f"{type(exc).__name__}: {exc}"
                return None
            finally:
                if progress:
                    progress(1)

        if getattr(self.agents, "parallel", False) and len(chunk) > 1:
            from concurrent.futures import ThreadPoolExecutor

            pool = ThreadPoolExecutor(max_workers=self.settings.concurrency)
            try:
                results = list(pool.map(one, chunk))
            finally:
                # Stopped (an interrupt, SIGTERM): the nodes not started are not built.
                pool.shutdown(wait=True, cancel_futures=True)
        else:
            results = [one(node) for node in chunk]
        items = [r for r in results if r is not None]
        if not items:
            return failures
        t1 = time.perf_counter()
        embedded: dict[str, int] = {}
        if self.write_vectors:
            rows, embedded = self._vector_rows(items, stored)
            t2 = time.perf_counter()
            self.vectors.replace_nodes([n.node_id for n, *_ in items], rows)
        else:
            t2 = t1
        meta = BuildMeta(self.agents.engine_id, self.embedder.model_id, self.hints.version)
        database.write_retrying(
            self.settings.duckdb_path, lambda con: write_memories(con, items, meta)
        )
        t3 = time.perf_counter()
        report.engine_s += t1 - t0
        report.embed_s += t2 - t1
        report.write_s += t3 - t2
        for node, memory, _, n_docs in items:
            report.per_node.append(
                node_entry(node, memory, self.schema, "built")
                | {"source_documents": n_docs, "embedded_texts": embedded.get(node.node_id, 0)}
                | node_cost(usage[node.node_id])
            )
        return failures

    def _vector_rows(
        self, items: list[tuple[NodeInfo, Memory, str, int]], stored: set[str] = frozenset()
    ) -> tuple[dict[str, pa.Table], dict[str, int]]:
        """Per table, the rows of ``items`` with their vectors (one embedding call for the
        texts the nodes in ``stored`` do not already have vectors of); and per node, how many
        texts the call embedded for it (a text two nodes share counts for the first)."""
        rows: dict[str, list[dict]] = {name: [] for name in TABLES}
        levels = self.settings.schema.names
        for node, memory, _, _ in items:
            for name, items_of_view in vector_items(node, memory, levels).items():
                rows[name] += items_of_view
        texts = [r["text"] for name in TABLES for r in rows[name]]
        rebuilt = sorted(stored & {node.node_id for node, *_ in items})
        vectors, missing = self._embed_cached(texts, self._stored_vectors(rebuilt, set(texts)))
        embedded = embedded_share(rows, missing)
        out: dict[str, pa.Table] = {}
        offset = 0
        for name in TABLES:
            n = len(rows[name])
            data = {c: [r[c] for r in rows[name]] for c in rows[name][0]} if n else {}
            mine = vectors[offset : offset + n]
            data["vector"] = self._vector_array(mine)
            offset += n
            if name in CONTEXT_VECTOR:
                nodes = [r["node_id"] for r in rows[name]]
                data[CONTEXT_VECTOR[name]] = self._vector_array(context_vectors(mine, nodes))
            schema = self.vectors_schema(name)
            if not n:
                out[name] = schema.empty_table()
                continue
            out[name] = pa.table({f.name: data[f.name] for f in schema}, schema=schema)
        return out, embedded

    def _vector_array(self, vecs: np.ndarray) -> pa.FixedSizeListArray:
        flat = np.ascontiguousarray(vecs, dtype=np.float32).reshape(-1)
        return pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.float32()), self.embedder.dim)

    def _stored_vectors(self, node_ids: list[str], texts: set[str]) -> dict[str, np.ndarray]:
        """The vectors ``node_ids`` already have in the store, by text (those of ``texts``).

        A node rebuilt because one of its documents (or one child) changed keeps most of its
        texts; their vectors were made by this model (the tables are checked for it), so
        they are read back instead of embedded again."""
        if not node_ids:
            return {}
        known: dict[str, np.ndarray] = {}
        for name in TABLES:
            if not self.vectors.exists(name):
                continue
            found = self.vectors.scan(name, ["text", "vector"], node_filter(node_ids))
            vecs = vector_matrix(found)
            for text, vec in zip(found.column("text").to_pylist(), vecs, strict=True):
                if text in texts:
                    known[text] = vec
        return known

    def _embed_cached(
        self, texts: list[str], stored: dict[str, np.ndarray] | None = None
    ) -> tuple[np.ndarray, set[str]]:
        """Embed ``texts`` (returns their vectors and the texts embedded now), reusing
        vectors of texts this process embedded before (facets like ``workplace_type: remote``
        recur in thousands of nodes) and the ``stored`` vectors read back from the store. A
        text's vector does not depend on its batch, so this changes nothing but time. In
        memory only, bounded."""
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32), set()
        known = dict(stored or {})
        known.update(
            (t, self._vec_cache[t]) for t in set(texts) - set(known) if t in self._vec_cache
        )
        missing = sorted(set(texts) - set(known))
        if missing:
            known.update(zip(missing, self.embedder.embed(missing), strict=True))
            if len(self._vec_cache) + len(missing) > self.embed_cache_size:
                self._vec_cache.clear()
            self._vec_cache.update((t, known[t]) for t in missing[: self.embed_cache_size])
        return np.stack([known[t] for t in texts]), set(missing)

    def forget_embeddings(self) -> None:
        """Empty the cache of texts embedded so far (up to ``embed_cache_size`` vectors)."""
        self._vec_cache.clear()

    def vectors_schema(self, name: str) -> pa.Schema:
        return table_schema(name, self.embedder.model_id, self.embedder.dim)

    def purge(self, node_ids: Sequence[str]) -> None:
        """Remove nodes that left the SOT (rows and vectors) and vectors without a node."""
        ids = list(node_ids)
        if not ids:
            return
        self.vectors.delete_nodes(ids)
        database.write_retrying(self.settings.duckdb_path, lambda con: erase_rows(con, ids))


#: How much each neighbouring passage weighs in a passage's context vector (itself: 1).
NEIGHBOUR_WEIGHT = 0.5


def context_vectors(vectors: np.ndarray, nodes: Sequence[str]) -> np.ndarray:
    """Each passage's context vector: its own vector plus its neighbours' in the same leaf
    (rows in passage order), at ``NEIGHBOUR_WEIGHT``, normalized. The context is thereby
    searched by meaning without embedding its text again (a context is three passages long:
    embedding it cost three times the passages themselves)."""
    out = vectors.astype(np.float32, copy=True)
    for i in range(len(nodes)):
        if i > 0 and nodes[i - 1] == nodes[i]:
            out[i] += NEIGHBOUR_WEIGHT * vectors[i - 1]
        if i + 1 < len(nodes) and nodes[i + 1] == nodes[i]:
            out[i] += NEIGHBOUR_WEIGHT * vectors[i + 1]
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1.0, norms)


def _resolve(topo: Topology, level: str, raw_ids: Sequence[str]) -> list[NodeInfo]:
    pool = topo.level(level)
    missing = [r for r in raw_ids if r not in pool]
    if missing:
        raise StaleTopologyError(
            f"{level} partitions {missing[:5]} are not in the source of truth any more: the "
            "tree changed since the Dagster code location loaded; reload it (hltm reload, or "
            "'Reload' in the UI) and materialize again"
        )
    return [pool[r] for r in raw_ids]


def _check_children(
    topo: Topology, level: str, nodes: list[NodeInfo], expected: Sequence[str]
) -> None:
    """Dagster's mapped children of ``nodes`` must be the SOT's (else the mapping is stale)."""
    have = sorted(c.raw_id for n in nodes for c in topo.children(n))
    want = sorted(expected)
    if have != want:
        extra = sorted(set(want) - set(have))[:5]
        missing = sorted(set(have) - set(want))[:5]
        raise StaleTopologyError(
            f"{level} partitions {[n.raw_id for n in nodes][:5]}: Dagster's partition mapping "
            f"is stale (it maps children {extra} that the source of truth does not hold, and "
            f"misses {missing}); the tree changed since the code location loaded: reload it "
            "(hltm reload, or 'Reload definitions' in the UI)"
        )
