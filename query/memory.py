"""``Memory``: the serving API. Open a home once, then ``retrieve`` and ``ask`` many times."""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
import warnings
import weakref
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path

import duckdb
import numpy as np

from hltm_resources.config import Settings
from hltm_resources.dates import TimeAsked, as_of_date, instant, time_asked, time_window
from hltm_resources.embedding import Embedder, make_embedder, setting_for_model
from hltm_resources.engines import (
    MemoryAgents,
    MicroQuery,
    NodeContext,
    RetrievedContext,
    ScopeVocabulary,
    make_agents,
)
from hltm_resources.engines.aliases import as_written, value_aliases
from hltm_resources.engines.base import (
    Analysis,
    Answer,
    ContextItem,
    Finding,
    LeafMatch,
    ParsedQuery,
)
from hltm_resources.engines.extractive.questions import MATCH_COSINE, MENTION_KEY
from hltm_resources.engines.understanding import COUNTRY_KEY, REJECTION_WORDS, analyze
from hltm_resources.engines.vocabulary import (
    CLOSED_VALUES,
    KEY_DESCRIPTIONS,
    NUMBER_DESCRIPTIONS,
    YES_NO_KEYS,
    canonical_value,
    names_a_site,
    region_of,
    same_place,
    same_value_key,
)
from hltm_resources.errors import QuestionError, ScopeError, ScopeLeakError
from hltm_resources.indexing.erasure import GONE, pending_erasures
from hltm_resources.stores import database
from hltm_resources.stores.database import StoreBusyError
from hltm_resources.stores.vectors import (
    TABLES,
    EmbeddingModelMismatch,
    VectorStore,
    level_filter,
    node_filter,
)
from hltm_resources.text import fold, humanize_key
from query.as_of import AsOfAnswer, answer_as_of, answer_changes, answer_when
from query.citations import why_cited
from query.findings import (
    OFFERED,
    PAY_ASKED,
    cause_findings,
    evidence_findings,
    key_findings,
    kind_asked,
    kind_keys,
    mentioned_values,
    offer_findings,
    part_findings,
    states_key,
    why_findings,
)
from query.retrieval import Retriever, ViewRows
from query.scope import Scope, check_open, resolve_scope, validate_scope
from query.verification import (
    KnownValues,
    ScopeLeaves,
    ValueSetCache,
    group_passages,
    one_valued,
)

#: The longest question asked (a question, not a document: remember those).
MAX_QUESTION_CHARS = 4000
DEFAULT_K_FACET = 25
DEFAULT_K_QA = 8
DEFAULT_K_SUMMARY = 5
DEFAULT_K_EVIDENCE = 25
#: How close in meaning a summary question must be to a key's description to be about it
#: (calibrated on the hiring benchmark's dev phrasing, BENCHMARKS.md).
KEY_MEANING_COSINE = 0.35
#: How close a question whose words name something no key holds ("the office attendance
#: expectation") must be to a key's description to be about that key.
PHRASE_MEANING_COSINE = 0.45
#: How close a question must be to a rejection reason to name it in its own words, and by how
#: much closer than to the next reason.
REASON_COSINE = 0.5
REASON_MARGIN = 0.03
KEYWORD_BONUS = 0.1
#: How many of a learned key's values describe it to a summary question no canonical key fits.
PROFILE_VALUES = 5
#: Key descriptions and labels whose vectors a ``Memory`` keeps.
KEY_VECTOR_CACHE = 4096
#: Scopes whose leaves a ``Memory`` keeps indexed for verification (:class:`ScopeLeaves`).
CACHED_SCOPE_LEAVES = 64


#: How often a question is retried on the latest table versions when the one it read was
#: removed under it (an erasure completing, a table rewritten).
STALE_RETRIES = 3
#: A question about what changed ("what changed since March", "anything new since ...").
_CHANGED = re.compile(r"\b(?:chang\w*|new|different|updat\w*|moved?)\b", re.I)


def _dated_first(retrieval: Retrieval, question: str, asked_at: str | None) -> Retrieval:
    """``retrieval`` with the evidence passages dated in the time the question names
    (counted back from ``asked_at``) first, each group in its own order; as it was when it
    names none."""
    window = time_window(question, asked_at) if asked_at else None
    if window is None:
        return retrieval
    first, last = window
    evidence = retrieval.context.evidence
    inside = [e for e in evidence if first <= instant(e.date)[:10] <= last]
    if inside:
        kept = {id(e) for e in inside}
        retrieval.context.evidence = inside + [e for e in evidence if id(e) not in kept]
    return retrieval


def _stale_version(exc: BaseException) -> bool:
    text = str(exc)
    return "lance" in text.lower() and ("Not found" in text or "not found" in text)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None


@lru_cache(maxsize=200_000)
def _written(key: str, value: str) -> tuple[str, ...]:
    """An alias's value as its key's values are written: list items, workplace words, a
    title without its seniority word (:func:`~hltm_resources.engines.aliases.as_written`)."""
    return tuple(as_written(key, value))


#: The paper's TopK of the facet score. Without the exact-match expansion of the facet view,
#: k=2 let unrelated facets dilute leaves with one exact match and lost recall; with it, k=1 and
#: k=2 score the same on the hiring benchmark (BENCHMARKS.md), and 1 is the simpler default.
DEFAULT_FACET_TOP_K = 1
#: Writes announced to a Memory (:meth:`Memory.writing`) remembered per table; past them
#: every scope reads its rows again.
MAX_ANNOUNCED_WRITES = 256
#: How long the tree's facet values (those outside a question's scope) may lag announced
#: writes; the scope's own are always read at the version its last write made.
TREE_VOCAB_TTL_S = 5.0
#: How stale a long-lived Memory may be: it looks for new table versions this often.
READ_CONSISTENCY = timedelta(seconds=2)
#: Seconds a reader of a shared lake (the distributed deployment) keeps the set of nodes being
#: erased before asking the lake again (a local home's file says when it changed).
LAKE_ERASING_TTL_S = 1.0


@dataclass
class Retrieval:
    """What the three retrievers found for one question in one scope."""

    context: RetrievedContext
    scope: Scope
    timings: dict[str, float]

    @property
    def contexts(self) -> dict[str, list[dict]]:
        """Per view, the retrieved items with scores and provenance (JSON-ready)."""
        return contexts_as_dicts(self.context)


#: Words of a question about a role's pay band, not about what one offer pays ("what base
#: range are we offering").
_A_BAND = re.compile(r"\b(?:range|band|bracket|scale)\b", re.I)


@dataclass
class Examined:
    """What :meth:`Memory._examine` found (see there)."""

    matches: list[LeafMatch] | None
    distributions: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    counted: int = 0
    findings: list[Finding] = field(default_factory=list)
    groups: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    #: For a one-value key memory holds no value of: the values its passages mention.
    mentioned: list[Finding] = field(default_factory=list)
    #: The question as the leaves read it, where they tell more than its words (a value no
    #: leaf it names holds is what it asks about).
    analysis: Analysis | None = None


def _grouped(leaves: list[str], level: str, catalog: dict) -> dict[str, tuple[str, list[str]]]:
    """The nodes of ``level`` above ``leaves``: each with its name and its leaves among them
    (in order)."""
    by_path = {entry[1]: n for n, entry in catalog.items() if entry[0] == level}
    out: dict[str, tuple[str, list[str]]] = {}
    for leaf in leaves:
        path = catalog.get(leaf, ("", ""))[1]
        parts = path.split("/")
        for i in range(len(parts), 0, -1):
            node = by_path.get("/".join(parts[:i]))
            if node is not None:
                out.setdefault(node, (catalog[node][2], []))[1].append(leaf)
                break
    return dict(sorted(out.items()))


@dataclass
class AskResult:
    """An answer with its node-id references, the contexts it used, timings and costs."""

    question: str
    scope: str
    answer: str
    references: list[str]
    rationale: str
    contexts: dict[str, list[dict]]
    timings: dict[str, float]
    llm_calls: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    retries: int = 0  # requests repeated after an invalid reply or a transient error
    cache_hits: int = 0  # agent calls answered from the reply cache (no LLM call)
    parsed: dict = field(default_factory=dict)
    retrieved: RetrievedContext | None = field(default=None, repr=False, compare=False)
    #: Why each reference is cited (:func:`query.citations.why_cited`): per node id, the
    #: constraints it met (by facet or by a document), the facts it holds, or the view that
    #: retrieved it.
    reasons: dict[str, list[dict]] = field(default_factory=dict)
    #: The instant the answer is as of (None: now).
    as_of: str | None = None

    def as_dict(self) -> dict:
        return {
            "as_of": self.as_of,
            "question": self.question,
            "scope": self.scope,
            "answer": self.answer,
            "references": self.references,
            "rationale": self.rationale,
            "timings": self.timings,
            "llm_calls": self.llm_calls,
            "tokens": self.tokens,
            "retries": self.retries,
            "cache_hits": self.cache_hits,
            "parsed": self.parsed,
            "contexts": self.contexts,
            "reasons": self.reasons,
        }


def contexts_as_dicts(ctx: RetrievedContext) -> dict[str, list[dict]]:
    def item(i: ContextItem) -> dict:
        d = {
            "node_id": i.node_id,
            "level": i.level,
            "score": round(i.score, 4),
            "text": i.text,
            "source_ids": list(i.source_ids),
        }
        for extra in ("answer", "detailed", "key", "value", "support", "date"):
            if getattr(i, extra) is not None:
                d[extra] = getattr(i, extra)
        return d

    return {
        "facets": [
            {
                "node_id": n.node_id,
                "level": n.level,
                "name": n.name,
                "score": round(n.score, 4),
                "leaf_count": n.leaf_count,
                "facets": [item(f) for f in n.facets],
            }
            for n in ctx.facets
        ],
        "qa": [item(i) for i in ctx.qa],
        "summaries": [item(i) for i in ctx.summaries],
        "evidence": [item(i) for i in ctx.evidence],
    }


def _one_identity(key: str, values: list[str]) -> list[str]:
    """``values`` with those that are the same value as an earlier one left out ("Berlin
    HQ" and "Berlin, DE" after "Berlin, Germany"; ``same_value_key``), so a count over leaves
    counts one place once. Two places of one name in different regions stay apart
    ("Portland, Oregon", "Portland, Maine"); a region written as a code does not."""
    groups: list[list[str]] = []
    by_identity: dict[str, list[list[str]]] = {}
    for v in values:
        same = same_value_key(key, v)
        group = next(
            (g for g in by_identity.get(same, ()) if all(_same_place(key, v, w) for w in g)),
            None,
        )
        if group is None:
            group = []
            groups.append(group)
            by_identity.setdefault(same, []).append(group)
        group.append(v)
    if key == "location":
        # A place written with a part of it after its name ("Rotterdam Waalhaven") is that
        # place, when the scope knows it by its name alone.
        for same in sorted(by_identity, key=len, reverse=True):
            words = same.split()
            head = next(
                (
                    " ".join(words[:n])
                    for n in range(len(words) - 1, 0, -1)
                    if " ".join(words[:n]) in by_identity
                ),
                None,
            )
            if head is not None:
                for group in by_identity.pop(same):
                    by_identity[head][0].extend(group)
                    groups.remove(group)

    # Each value by its plainest full spelling: "Berlin, Germany", not "Berlin (Kreuzberg)"
    # or "Berlin HQ" or "Berlin, DE" or "Berlin, Siemensstadt campus"; then the most
    # supported (first).
    def plain(v: str) -> tuple[bool, bool, bool, bool]:
        head = fold(v.split(",")[0])
        rest = v.split(",", 1)[1].strip() if "," in v else ""
        site = key == "location" and names_a_site(v)
        return (site, "(" in v or head != same_value_key(key, v), not rest, len(rest) <= 3)

    if key in YES_NO_KEYS:  # "yes", not the first note's "yes, for the frontend roles"
        return [same_value_key(key, g[0]) for g in groups]
    return [min(g, key=plain) for g in groups]


def _same_place(key: str, a: str, b: str) -> bool:
    if key != "location":
        return True
    if not same_place(a, b):
        return False  # "Portland, ME" and "Portland, OR"
    rest = [fold(x.split(",", 1)[1]) if "," in x else "" for x in (a, b)]
    return (
        not rest[0]
        or not rest[1]
        or rest[0] == rest[1]
        or min(map(len, rest)) <= 3
        or (region_of(a) == region_of(b))
    )


class Memory:
    """Identity-scoped retrieval and answering over one home's memory.

    Opening is cheap (nothing is loaded); the embedder, the engine and the LanceDB tables load
    on first use and are reused by every later call, as are the rows of scopes already asked.
    """

    def __init__(
        self,
        settings: Settings,
        agents: MemoryAgents | None = None,
        embedder: Embedder | None = None,
        log_queries: bool = True,
        log_batch: int = 1,
        read_consistency: timedelta | None = None,
    ):
        self.settings = settings
        #: How stale the LanceDB tables this process reads may be (default
        #: :data:`READ_CONSISTENCY`; the memory service reads its own writes: 0, each question
        #: checks for a newer version).
        self.read_consistency = READ_CONSISTENCY if read_consistency is None else read_consistency
        self._agents = agents
        self._embedder = embedder
        self._vectors: VectorStore | None = None
        self._retriever: Retriever | None = None
        self._catalog: tuple[int, dict[str, tuple[str, str, str, int]]] | None = None
        self._labels: tuple[int, bool] | None = None
        self._names: dict[str, str] = {}
        self._vocab: dict[tuple, ScopeVocabulary] = {}
        self._value_sets = ValueSetCache()
        self._key_vectors: dict[str, np.ndarray] = {}  # description text -> vector
        self._tree_vocab: tuple[int, dict[str, list[str]], dict[str, str]] | None = None
        self._tree_vocab_at = 0.0
        self._leaves: dict[tuple, tuple[weakref.ref, weakref.ref, ScopeLeaves]] = {}
        self._pool: ThreadPoolExecutor | None = None
        #: Rows read for a scope stay in use across writes elsewhere: per view, the versions
        #: written inside :meth:`writing` blocks with the paths of the nodes they replaced,
        #: the version before the first of them, and the version last seen.
        self._touched: dict[str, list[tuple[int, frozenset[str]]]] = {}
        self._base: dict[str, int] = {}
        self._seen: dict[str, int] = {}
        #: The paths the writer of this process is replacing now (None: not writing, or
        #: anything may change).
        self._writing: frozenset[str] | None = None
        self._tracking = threading.Lock()
        self._erasing_stamp: tuple | None = None
        self._erasing_nodes: dict[str, str] = {}
        self.log_queries = log_queries
        self.log_batch = max(1, log_batch)
        self._pending: list[list] = []

    @classmethod
    def open(
        cls, home: str | Path | None = None, log_queries: bool = True, **overrides: object
    ) -> Memory:
        """Memory of ``home`` (default ``$HLTM_HOME`` or ``./.hltm``), engine from the env."""
        return cls(Settings.from_env(home=home, **overrides), log_queries=log_queries)

    def warm_up(self) -> Memory:
        """Load now what the first question would: the embedding model, the tables and their
        indexes, the catalog of nodes and the tree's facet values with their spellings (a
        server calls this before it takes questions; each scope's own rows still load on its
        first question)."""
        self.embedder.embed(["warm up"])
        _ = self.agents  # the engine loads on first use
        catalog = self.catalog()
        if catalog:  # every scope offers the tree's values: their spellings are sorted once
            scope = self.resolve(min(catalog))
            for known in self._vocabulary(scope, scope.where).values.values():
                KnownValues(known)  # and their words indexed once (shared by equal sets)
        nowhere = "path = ''"  # no node has it: each search only loads the table's indexes
        for name in TABLES:
            if self.vectors.exists(name):
                self.vectors.search(name, np.zeros(self.embedder.dim), nowhere, 1, ["node_id"])
        if self.vectors.exists("evidence"):
            self.vectors.text_search("evidence", "warm up", nowhere, 1, ["passage_id"])
        return self

    def close(self) -> None:
        """Write queued query-log rows; stop the search threads."""
        self.flush()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- lazily loaded parts -------------------------------------------------------------
    @property
    def agents(self) -> MemoryAgents:
        if self._agents is None:
            self._agents = make_agents(self.settings)
        return self._agents

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = make_embedder(self.settings, serving=True)
        return self._embedder

    @property
    def vectors(self) -> VectorStore:
        if self._vectors is None:
            check_open(self.settings.duckdb_path)
            # A tree other than the home's (HLTM_TREE) names tables it does not have.
            database.check_tree(self.settings.duckdb_path, self.settings.schema)
            store = VectorStore(
                self.settings.lancedb_path, None, None, read_consistency=self.read_consistency
            )
            for name in TABLES:
                if not store.exists(name):
                    raise FileNotFoundError(f"no vectors under {store.path}: run hltm index")
                model, dim = store.table_model(name)
                if (model, dim) != (self.embedder.model_id, self.embedder.dim):
                    raise EmbeddingModelMismatch(
                        f"the memory at {self.settings.home} was embedded with {model!r} "
                        f"(dim {dim}) but this query embeds with {self.embedder.model_id!r} "
                        f"(dim {self.embedder.dim}); query with the model the memory was built "
                        f"with ({setting_for_model(model)}) or rebuild it"
                    )
            self._vectors = store
            self._retriever = Retriever(store, self.settings.schema, self.scope_version)
        return self._vectors

    @property
    def retriever(self) -> Retriever:
        self.vectors  # noqa: B018 - loads the store and the retriever
        assert self._retriever is not None
        return self._retriever

    def catalog(self) -> dict[str, tuple[str, str, str, int]]:
        """node id -> (level, path, name, leaf count) of every built node."""
        # Announced writes rebuild nodes in place: no node comes, goes, moves or is renamed.
        version = self._scope_version("summaries", None)
        if self._catalog is None or self._catalog[0] != version:
            rows = self.vectors.scan(
                "summaries", ["node_id", "level", "path", "name", "leaf_count"]
            )
            cols = [rows.column(c).to_pylist() for c in rows.column_names]
            self._catalog = (
                version,
                {n: (lv, p, nm, lc) for n, lv, p, nm, lc in zip(*cols, strict=True)},
            )
            self._names = {n: entry[2] for n, entry in self._catalog[1].items()}
        return self._catalog[1]

    def _labeled(self) -> bool:
        """Whether the vector tables carry scope labels (see ``Scope.where``); asked once
        per version of the summaries table."""
        version = self._scope_version("summaries", None)
        if self._labels is None or self._labels[0] != version:
            self._labels = (version, self.vectors.has_scope_labels())
        return self._labels[1]

    def names(self) -> dict[str, str]:
        """node id -> name of every built node."""
        self.catalog()
        return self._names

    def resolve(self, scope: object) -> Scope:
        """The scope node, or :class:`ScopeError` (malformed ids never reach a store)."""
        node_id = validate_scope(scope, self.settings.schema)
        if self._erasing().get(node_id) == GONE:
            raise ScopeError(f"scope {node_id!r} was deleted; its erasure is being completed")
        entry = self.catalog().get(node_id)
        if entry is not None:
            level, path, name, _ = entry
            return Scope(node_id, level, name, path, labeled=self._labeled())
        # Not built yet, or emptied by a deletion or a move below it and not rebuilt yet:
        # what its subtree holds is served meanwhile.
        with database.connect(self.settings.duckdb_path, read_only=True) as con:
            return resolve_scope(con, node_id, self.settings.schema)  # raises, saying why

    # -- retrieval -----------------------------------------------------------------------
    def _vocabulary(self, scope: Scope, where: str) -> ScopeVocabulary:
        """The values a question may state: the scope's own first (most supported first),
        then the rest of the tree's, so a constraint the scope does not hold is still read
        (and matches nothing); an alias's values join its key's (cached per scope and
        table version)."""
        tree, aliases = self._tree_vocabulary()
        cache_key = (
            scope.node_id,
            where,
            self._scope_version("facets", scope.path),
            self._tree_vocab[0],
        )
        if cache_key in self._vocab:
            return self._vocab[cache_key]
        rows = self.retriever.rows("facets", where, scope.node_id)
        support: dict[tuple[str, str], int] = {}
        if rows is None:  # a large scope: its rows summed per value in Arrow
            held = self.retriever.facet_rows(where, scope.node_id)  # read for scoring too
            if held is not None:
                table = held.select(["key", "value", "support"])
            else:
                table = self.vectors.scan("facets", ["key", "value", "support"], where)
            summed = table.group_by(["key", "value"]).aggregate([("support", "sum")])
            for k, v, s in zip(
                *(summed.column(c).to_pylist() for c in ("key", "value", "support_sum")),
                strict=True,
            ):
                support[(k, v)] = int(s)
        else:
            cols = rows.cols
            for k, v, s in zip(cols["key"], cols["value"], cols["support"], strict=True):
                support[(k, v)] = support.get((k, v), 0) + int(s)
        values: dict[str, list[str]] = {}
        for (k, v), _ in sorted(support.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][1])):
            values.setdefault(k, []).append(v)
        outside: dict[str, frozenset[str]] = {}
        for key, known in tree.items():
            have = values.setdefault(key, [])
            seen = set(have)
            outside[key] = frozenset(v for v in known if v not in seen)
            have += [v for v in known if v not in seen]
        for key in sorted(set(aliases.values())):  # an alias's values are its key's
            have = values.setdefault(key, [])
            offered = [
                item
                for a, k in aliases.items()
                if k == key
                for v in values.pop(a, [])
                for item in _written(key, v)
                if canonical_value(key, item) is not None  # "no" is no rejection reason
            ]
            seen = {fold(v) for v in have}
            fresh = []
            for v in offered:
                if fold(v) not in seen:
                    seen.add(fold(v))
                    fresh.append(v)
            have += self._value_sets.new_values(key, have, fresh)
        values = {k: _one_identity(k, self._value_sets.one_spelling(v)) for k, v in values.items()}
        vocab = ScopeVocabulary(values, (self.settings.schema.leaf_count_key,), aliases, outside)
        if len(self._vocab) > 256:
            self._vocab.clear()
        self._vocab[cache_key] = vocab
        return vocab

    def _tree_vocabulary(self) -> tuple[dict[str, list[str]], dict[str, str]]:
        """Every facet value of the tree per key, and the keys that are aliases (cached per
        table version)."""
        version = self.vectors.version("facets")
        if self._tree_vocab is not None and self._tree_vocab[0] != version:
            # Announced writes (Memory.writing): the scopes they touched read their own
            # values afresh; the rest of the tree's values (what a question may name outside
            # its scope) is read again at most every TREE_VOCAB_TTL_S.
            fresh = time.monotonic() - self._tree_vocab_at < TREE_VOCAB_TTL_S
            if fresh and self._tree_vocab[0] >= self._scope_version("facets", None):
                version = self._tree_vocab[0]
        if self._tree_vocab is None or self._tree_vocab[0] != version:
            self._tree_vocab_at = time.monotonic()
            # Distinct pairs in Arrow first: the table holds every node's facets.
            table = self.vectors.scan("facets", ["key", "value"]).group_by(["key", "value"])
            table = table.aggregate([])
            values: dict[str, set[str]] = {}
            count = self.settings.schema.leaf_count_key
            for k, v in zip(
                table.column("key").to_pylist(), table.column("value").to_pylist(), strict=True
            ):
                if k != count:
                    values.setdefault(k, set()).add(v)
            for key, closed in CLOSED_VALUES.items():  # where the tree has the key
                if key in values:
                    values[key].update(closed)
            tree = {k: sorted(v) for k, v in values.items()}
            self._tree_vocab = (version, tree, value_aliases(tree))
        return self._tree_vocab[1], self._tree_vocab[2]

    def retrieve(
        self,
        question: str,
        scope: str,
        k_facet: int = DEFAULT_K_FACET,
        k_qa: int = DEFAULT_K_QA,
        k_summary: int = DEFAULT_K_SUMMARY,
        k_evidence: int = DEFAULT_K_EVIDENCE,
        facet_top_k: int = DEFAULT_FACET_TOP_K,
        views: tuple[str, ...] = ("facets", "qa", "summaries", "evidence"),
        levels: tuple[str, ...] | None = None,
        asked_at: str | None = None,
    ) -> Retrieval:
        """Top nodes per view for ``question`` inside ``scope`` (no answer, no log).

        ``views`` and ``levels`` restrict the pool (used by the ablations). ``asked_at``:
        when the question is asked (a date in any form ``dates.instant`` reads; None: no
        time is counted back): a time it names counted back from then ("a week ago") puts
        the passages of documents dated then first among those retrieved
        (:func:`~hltm_resources.dates.time_window`).
        """
        args = (question, scope, k_facet, k_qa, k_summary, k_evidence, facet_top_k, views, levels)
        for _ in range(STALE_RETRIES):
            try:
                return _dated_first(self._retrieve(*args), question, asked_at)
            except (RuntimeError, OSError, ValueError) as exc:
                # An erasure or rebuild removed the table version this process was reading,
                # or the catalog and the rows come from versions a move separates: read the
                # latest ones (the erased rows are then gone from the answer too).
                if not (isinstance(exc, ScopeLeakError) or _stale_version(exc)):
                    raise
                self.refresh()
        return _dated_first(self._retrieve(*args), question, asked_at)

    def saw_write(self) -> None:
        """A writer of this process (the memory service) just committed: the next question
        reads the tables' versions afresh, so it finds what was written."""
        if self._vectors is not None:
            self._vectors.forget_versions()

    @contextmanager
    def writing(self, paths: Iterable[str]):
        """Around a write of this process that replaces the rows of the nodes at ``paths``
        and nothing else (no node comes, goes, moves or is renamed): rows read for a scope
        holding none of them stay in use. Every version written outside such a block has
        every scope read its rows again."""
        with self._tracking:
            self._writing = frozenset(paths)
        try:
            yield
        finally:
            self.saw_write()
            with self._tracking:
                if self._vectors is not None:
                    for view in TABLES:  # the versions it wrote, before it ends
                        self._observe(view)
                self._writing = None

    def _observe(self, view: str) -> None:
        """Take note of the version of ``view`` (under ``_tracking``)."""
        current = self.vectors.version(view)
        seen = self._seen.get(view)
        if seen == current:
            return
        history = self._touched.setdefault(view, [])
        if seen is None or self._writing is None or len(history) >= MAX_ANNOUNCED_WRITES:
            history.clear()  # not announced (or too many): every scope reads afresh
            self._base[view] = current
        else:
            history.append((current, self._writing))
        self._seen[view] = current

    def scope_version(self, view: str, node_id: str) -> int:
        """:meth:`_scope_version` of the built node ``node_id`` (the table's current version
        for a node not built yet)."""
        entry = self.catalog().get(node_id)
        if entry is None:
            return self.vectors.version(view)
        return self._scope_version(view, entry[1])

    def _scope_version(self, view: str, path: str | None) -> int:
        """The version of ``view`` that rows read for the scope at ``path`` are kept under:
        the last version a :meth:`writing` block inside the scope made, or the one before
        every such block. ``path`` None: the one before every such block (what they leave as
        it was: which nodes exist, their names and paths)."""
        with self._tracking:
            self._observe(view)
            found = self._base[view]
            if path is None:
                return found
            inside = path + "/"
            for version, paths in self._touched[view]:
                if path in paths or any(p.startswith(inside) for p in paths):
                    found = version
            return found

    def refresh(self) -> None:
        """Forget the open tables and everything read from them (the next call reopens)."""
        self._vectors = None
        self._retriever = None
        self._catalog = None
        self._labels = None
        self._tree_vocab = None
        self._vocab.clear()
        self._leaves.clear()
        with self._tracking:
            self._touched.clear()
            self._base.clear()
            self._seen.clear()

    def _retrieve(
        self,
        question: str,
        scope: str,
        k_facet: int,
        k_qa: int,
        k_summary: int,
        k_evidence: int,
        facet_top_k: int,
        views: tuple[str, ...],
        levels: tuple[str, ...] | None,
    ) -> Retrieval:
        validate_scope(scope, self.settings.schema)
        if not isinstance(question, str) or not question.strip():
            raise QuestionError("the question is empty: ask something (a non-blank string)")
        if len(question) > MAX_QUESTION_CHARS:
            raise QuestionError(
                f"the question is {len(question):,} characters long: ask in at most "
                f"{MAX_QUESTION_CHARS:,} (memory keeps documents; remember long texts instead)"
            )
        t0 = time.perf_counter()
        usage0 = self.agents.usage.snapshot()
        resolved = self.resolve(scope)
        where = resolved.where
        erasing = self._erasing()
        if erasing:  # recorded for erasure, not yet gone from every store: never served
            where = f"{where} AND NOT ({node_filter(sorted(erasing))})"
        if levels:
            where = f"{where} AND {level_filter(levels, self.settings.schema)}"
        retriever = self.retriever
        # What the question will read of each view is read meanwhile, side by side (on a
        # scope's first question; a look-up in the cache after).
        for view in ("facets", "qa", "summaries"):
            if view in views:
                self._background().submit(retriever.prepare, view, where, resolved.node_id)
        # The full-text search needs no vector: it runs while the question is parsed and
        # embedded (both release the interpreter), its result waited for by the fusion.
        by_words = (
            self._background().submit(retriever.text_hits, question, where, resolved.node_id)
            if "evidence" in views and k_evidence > 0
            else None
        )
        vocab = self._vocabulary(resolved, where)
        t_parse = time.perf_counter()
        named, above = self._named_nodes(resolved)
        analysis = analyze(
            question,
            vocab,
            self.settings.schema,
            resolved.level,
            named,
            resolved.node_id,
            above,
        )
        t_embed = time.perf_counter()
        # One model call: the question and the micro-queries not embedded before (labels
        # such as "location: Berlin" recur across questions and stay cached).
        valued = [m.text for m in analysis.constraints]
        vectors = self._meanings(valued, fresh=question)
        qvec = vectors[question]
        analysis = self._asked_by_meaning(analysis, qvec, vocab)
        if not self.settings.schema.is_leaf(resolved.level):
            analysis = self._free_text_value(analysis, question, qvec, vocab)
        parsed = self.agents.parse_query(question, vocab, analysis)
        micro = list(parsed.micro) or [MicroQuery("question", None)]
        micro_vecs = np.vstack(
            [
                qvec
                if m.key == "question"
                else vectors[m.text]
                if m.text in vectors
                else self._meanings([m.text])[m.text]  # a key alone: a label, cached
                for m in micro
            ]
        )
        t_search = time.perf_counter()
        # QA, summaries and evidence search while the facets are scored here: in a scope too
        # large to hold, each is a LanceDB query that releases the interpreter.
        pool = self._background()
        qa_hits = (
            pool.submit(retriever.qa, qvec, where, resolved.node_id, k_qa)
            if "qa" in views and k_qa
            else None
        )
        summary_hits = (
            pool.submit(retriever.summaries, qvec, where, resolved.node_id, k_summary)
            if "summaries" in views and k_summary > 0
            else None
        )
        evidence_hits = (
            pool.submit(
                retriever.evidence, qvec, question, where, resolved.node_id, k_evidence, by_words
            )
            if by_words is not None
            else None
        )
        facets: list[NodeContext] = []
        if "facets" in views and k_facet > 0:
            facets = retriever.facets(
                micro_vecs,
                where,
                resolved.node_id,
                k_facet,
                facet_top_k,
                valued=[bool(m.value) for m in micro],
                match_cosine=MATCH_COSINE,
                keys=[m.key for m in micro],
            )
        qa = qa_hits.result() if qa_hits is not None else []
        summaries = summary_hits.result() if summary_hits is not None else []
        evidence = evidence_hits.result() if evidence_hits is not None else []
        catalog = self.catalog()
        facets = [
            NodeContext(
                n.node_id,
                n.level,
                catalog.get(n.node_id, ("", "", n.node_id, 1))[2],
                n.score,
                catalog.get(n.node_id, ("", "", "", 1))[3],
                n.facets,
                n.best,
            )
            for n in facets
        ]
        examined = self._examine(analysis, question, where, resolved, vocab, qvec)
        t_end = time.perf_counter()
        context = RetrievedContext(
            resolved.node_id,
            question,
            parsed,
            facets,
            qa,
            summaries,
            evidence,
            examined.matches,
            examined.distributions,
            examined.counted,
            examined.analysis or analysis,
            examined.findings,
            examined.groups,
            examined.mentioned,
        )
        context = self._kept_in_scope(context, resolved, catalog)
        usage1 = self.agents.usage.snapshot()
        timings = {
            "retrieval_ms": (t_end - t0) * 1000,
            "parse_ms": (t_embed - t_parse) * 1000,
            "embed_ms": (t_search - t_embed) * 1000,
            "search_ms": (t_end - t_search) * 1000,
            "parse_llm_calls": usage1["llm_calls"] - usage0["llm_calls"],
        }
        return Retrieval(context, resolved, timings)

    def _asked_by_meaning(
        self, analysis: Analysis, qvec: np.ndarray, vocab: ScopeVocabulary
    ) -> Analysis:
        """What a question asks about, by meaning where its words name no key.

        A fact or distribution question whose words name no key of the scope is about the
        key whose description it is closest to in meaning (MiniLM cosine with the closest of
        a few one-line descriptions per key, ``KEY_MEANING_COSINE``; when no canonical key
        fits, a key learned from the data, described by its name and commonest values). A
        question whose words name something no key holds ("the code name") needs a closer
        fit (``PHRASE_MEANING_COSINE``) and keeps its words for the evidence. A distribution
        question naming a value of the very key it asks about ("Do these jobs mostly let
        people work from home?") is that key's distribution."""
        if analysis.form == "fact" and analysis.answer_type == "number" and not analysis.asked_key:
            # "How many people are we hiring?": the key holding that number, by meaning.
            numbered = {
                k: NUMBER_DESCRIPTIONS[k] for k in NUMBER_DESCRIPTIONS if vocab.values.get(k)
            }
            vectors = self._meanings([t for texts in numbered.values() for t in texts])
            scores = {k: max(float(vectors[t] @ qvec) for t in ts) for k, ts in numbered.items()}
            best = max(scores, key=lambda k: scores[k]) if scores else None
            if best is not None and scores[best] >= KEY_MEANING_COSINE:
                return replace(analysis, asked_key=best, asked_by="meaning")
            return analysis
        if analysis.form not in ("fact", "distribution") or analysis.answer_type != "value":
            return analysis
        if analysis.asked_key and analysis.asked_by != "words":
            return analysis  # the question names its key outright
        described = {k: KEY_DESCRIPTIONS[k] for k in KEY_DESCRIPTIONS if vocab.values.get(k)}
        vectors = self._meanings([t for texts in described.values() for t in texts])
        score = {
            k: max(float(vectors[t] @ qvec) for t in texts) + KEYWORD_BONUS * (k in analysis.worded)
            for k, texts in described.items()
        }
        if analysis.form == "distribution" and (
            not score or max(score.values()) < KEY_MEANING_COSINE
        ):
            profiles = {
                k: f"{humanize_key(k)}: {', '.join(v[:PROFILE_VALUES])}"
                for k, v in vocab.values.items()
                if k not in KEY_DESCRIPTIONS and k not in vocab.count_keys and len(v) >= 2
            }
            vectors = self._meanings(list(profiles.values()))
            score = {k: float(vectors[t] @ qvec) for k, t in profiles.items()}
        if not score:
            return analysis
        key = max(score, key=lambda k: score[k])
        floor = PHRASE_MEANING_COSINE if analysis.asked_phrase else KEY_MEANING_COSINE
        if score[key] < floor or key == analysis.asked_key:
            return analysis
        constraints = analysis.constraints
        if analysis.form == "distribution" and {c.key for c in constraints} == {key}:
            constraints = ()  # "mostly remote?": the key's distribution answers
        elif any(c.key == key for c in constraints) and analysis.form == "fact":
            return analysis  # "Is this role remote?" names the value it asks about
        return replace(analysis, asked_key=key, asked_by="meaning", constraints=constraints)

    def _free_text_value(
        self, analysis: Analysis, question: str, qvec: np.ndarray, vocab: ScopeVocabulary
    ) -> Analysis:
        """A rejection reason a question states in its own words ("we couldn't sponsor a
        visa" for "no visa sponsorship available"). Reasons are sentences, not categories:
        the one closest in meaning to the question is the one it names, when it is close
        (``REASON_COSINE``) and clearly closer than the next (``REASON_MARGIN``); the leaves
        that hold it are then matched by identity, as any other value."""
        key = "rejection_reason"
        known = vocab.values.get(key, [])
        if not known or any(c.key == key for c in analysis.constraints):
            return analysis
        about = analysis.asked_key == key or analysis.form == "why"
        if not about and REJECTION_WORDS.search(question):
            # A reason is named only by a question about candidates turned down: "Which
            # searches can sponsor a visa?" names no reason "no visa sponsorship available".
            reasons = self._meanings(list(KEY_DESCRIPTIONS[key]))
            about = max(float(v @ qvec) for v in reasons.values()) >= KEY_MEANING_COSINE
        if not about or analysis.form == "distribution":
            return analysis
        texts = {v: f"{humanize_key(key)}: {v}" for v in known[: KEY_VECTOR_CACHE // 4]}
        vectors = self._meanings(list(texts.values()))
        ranked = sorted(((float(vectors[t] @ qvec), v) for v, t in texts.items()), reverse=True)
        best = ranked[0]
        second = ranked[1][0] if len(ranked) > 1 else 0.0
        if best[0] < REASON_COSINE or best[0] - second < REASON_MARGIN:
            return analysis
        constraints = (*analysis.constraints, MicroQuery(key, best[1]))
        form = "list" if analysis.form == "why" else analysis.form
        level = analysis.level or self.settings.schema.leaf.name
        answer_type = "nodes" if form == "list" else analysis.answer_type
        return replace(
            analysis,
            constraints=constraints,
            form=form,
            level=level,
            answer_type=answer_type,
            asked_key=None if form == "list" else analysis.asked_key,
        )

    def _meanings(self, texts: list[str], fresh: str | None = None) -> dict[str, np.ndarray]:
        """Embeddings of key descriptions and labels, the missing ones in one call (cached),
        and of ``fresh`` (a question: embedded in the same call, never cached)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._key_vectors))
        if len(self._key_vectors) + len(missing) > KEY_VECTOR_CACHE:
            self._key_vectors.clear()
            missing = list(dict.fromkeys(texts))
        batch = missing + ([fresh] if fresh is not None else [])
        vectors = self.embedder.embed(batch) if batch else []
        self._key_vectors.update(zip(missing, vectors[: len(missing)], strict=True))
        out = {t: self._key_vectors[t] for t in texts}
        if fresh is not None:
            out[fresh] = vectors[-1]
        return out

    def _erasing(self) -> dict[str, str]:
        """Nodes whose erasure a delete, load or move recorded and has not finished in every
        store (a process killed half-way, or one still at work). Re-read when the DuckDB file
        changes (a shared lake: at most every :data:`LAKE_ERASING_TTL_S`); while a writer
        keeps the file locked, the last set read stands."""
        db = self.settings.duckdb_path
        if isinstance(db, Path):
            stamp = tuple(
                (s.st_mtime_ns, s.st_size) if (s := _stat(p)) else None
                for p in (db, db.with_name(db.name + ".wal"))
            )
        else:
            stamp = int(time.monotonic() / LAKE_ERASING_TTL_S)
        if stamp != self._erasing_stamp:
            try:
                self._erasing_nodes = pending_erasures(self.settings, timeout_s=0.2)
                self._erasing_stamp = stamp
            except StoreBusyError:
                pass
        return self._erasing_nodes

    def _background(self) -> ThreadPoolExecutor:
        """Threads for store queries that overlap the model call (made on first use)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hltm-search")
        return self._pool

    def _scope_leaves(
        self, where: str, scope: Scope, aliases: dict[str, str]
    ) -> tuple[ScopeLeaves, ViewRows] | None:
        """The leaves of the scope as verification reads them (facet values per key, aliases
        folded onto their key; evidence passages), with the scope's facet rows; None for a
        scope too large to hold. Indexed once per scope and table versions."""
        rows = self.retriever.rows("facets", where, scope.node_id)
        evidence = self.retriever.rows("evidence", where, scope.node_id)
        if rows is None or evidence is None:
            return None
        cache_key = (
            scope.node_id,
            where,
            self._scope_version("facets", scope.path),
            self._scope_version("evidence", scope.path),
        )
        # Kept while the retriever keeps the rows it was read from (weakly held: the
        # retriever's cache bounds both).
        self._leaves = {k: v for k, v in self._leaves.items() if v[0]() and v[1]()}
        cached = self._leaves.get(cache_key)
        if cached is not None and cached[0]() is rows and cached[1]() is evidence:
            return cached[2], rows
        schema = self.settings.schema
        native: dict[str, dict[str, list[str]]] = {}
        aliased: dict[str, dict[str, list[str]]] = {}
        sources: dict[str, dict[tuple[str, str], tuple[str, ...]]] = {}
        for node, level, key, value, docs in zip(
            rows.cols["node_id"],
            rows.cols["level"],
            rows.cols["key"],
            rows.cols["value"],
            rows.cols["source_ids"],
            strict=True,
        ):
            if not schema.is_leaf(level):
                continue
            target = aliases.get(key, key)
            named = _written(target, value) if target != key else (value,)
            into = native if target == key else aliased
            for item in named:
                into.setdefault(node, {}).setdefault(target, []).append(item)
                sources.setdefault(node, {})[(target, item)] = tuple(docs or ())
        # A leaf's own value of a one-value key stands over one an alias lends it.
        values = native
        for node, keys in aliased.items():
            mine = values.setdefault(node, {})
            for key, items in keys.items():
                if key in mine and one_valued(key):
                    continue
                mine[key] = list(dict.fromkeys(mine.get(key, []) + items))
        leaves = ScopeLeaves.build(values, group_passages(evidence.cols), sources)
        if len(self._leaves) >= CACHED_SCOPE_LEAVES:
            self._leaves.pop(next(iter(self._leaves)))
        self._leaves[cache_key] = (weakref.ref(rows), weakref.ref(evidence), leaves)
        return leaves, rows

    def _named_nodes(self, scope: Scope) -> tuple[dict[str, str], set[str]]:
        """The nodes a question may name ("Kaito's searches"), by id, with their names: the
        scope node, the nodes above it, and the nodes above the leaves inside it; and which
        of them are above the scope."""
        leaf = self.settings.schema.leaf.name
        named, above = {}, set()
        for n, entry in self.catalog().items():
            if entry[0] == leaf and n != scope.node_id:
                continue
            if scope.contains(entry[1]):
                named[n] = entry[2]
            elif scope.path.startswith(entry[1] + "/"):
                named[n] = entry[2]
                above.add(n)
        return named, above

    def _examine(
        self,
        analysis: Analysis,
        question: str,
        where: str,
        scope: Scope,
        vocab: ScopeVocabulary,
        qvec: np.ndarray | None = None,
    ) -> Examined:
        """The leaves a question is about (its constraints verified on every leaf of the
        scope, by facet identity or by evidence) and what answers it: the facts with their
        nodes and documents, the nodes a list or count names, the distribution of the key a
        distribution question asks about."""
        held = self._scope_leaves(where, scope, vocab.aliases)
        if held is None:
            return Examined(None)  # a scope too large to hold: the facet view decides
        leaves, _ = held
        schema = self.settings.schema
        names = self.names()
        catalog = self.catalog()
        pool = leaves.leaves
        if schema.is_leaf(scope.level):
            pool = [scope.node_id]
        elif analysis.within and analysis.within in catalog:
            inner = catalog[analysis.within][1]
            pool = [n for n in pool if n in catalog and f"{catalog[n][1]}/".startswith(f"{inner}/")]
        pool = [n for n in pool if schema.is_leaf(n.split(":", 1)[0])]
        wanted = list(analysis.constraints) + [
            MicroQuery(MENTION_KEY, m) for m in analysis.mentions
        ]
        at_leaf = schema.is_leaf(scope.level)
        either: list[list[MicroQuery]] = [wanted]
        if analysis.form in ("list", "count") and analysis.options and analysis.asked_key:
            # "Staff or Principal": the leaves holding either option, with the rest.
            either = [[*wanted, MicroQuery(analysis.asked_key, o)] for o in analysis.options]
            wanted = either[0]
        twice = [c for c in wanted if c.value and one_valued(c.key)]
        twice = [c for c in twice if sum(o.key == c.key for o in twice) > 1]
        if twice and len(either) == 1:
            # "senior-level (L4)", "Grade 7 / G7": a role holds one value of the key, so two
            # of its values are two names of one, or either of two.
            rest = [c for c in wanted if c not in twice]
            either = [[*rest, c] for c in twice]
            wanted = either[0]
        constrained = bool(wanted or analysis.excluded or analysis.holding)
        if constrained and not at_leaf:
            kept = set(pool)
            found: dict[str, LeafMatch] = {}
            for one in either if wanted else []:
                query = ParsedQuery("retrieval", tuple(one))
                for m in leaves.verify(query, schema, vocab.values, names):
                    if m.node_id in kept:
                        found.setdefault(m.node_id, m)
            if not wanted:  # only exclusions or keys held: every leaf of the scope, then those
                found = {n: LeafMatch(n, (), names.get(n, n)) for n in pool}
            for key in analysis.holding:  # "... that have a code name": they state one
                found = {n: m for n, m in found.items() if states_key(leaves.facts.get(n), key)}
            for m in analysis.excluded:  # "... but not in Toronto": those leaves leave
                query = ParsedQuery("retrieval", (m,))
                for hit in leaves.verify(query, schema, vocab.values, names):
                    found.pop(hit.node_id, None)
            matches = [found[n] for n in sorted(found)]
        else:
            matches = [LeafMatch(n, (), names.get(n, n)) for n in pool] if constrained else []
        subjects = [m.node_id for m in matches] if constrained and not at_leaf else pool
        if analysis.form == "fact" and analysis.mentions and analysis.constraints and not subjects:
            # "... pitching it as a Staff role, is that right?": a name no note states says
            # nothing of which role; the values the question names do.
            query = ParsedQuery("retrieval", tuple(analysis.constraints))
            hits = leaves.verify(query, schema, vocab.values, names)
            in_pool = set(pool)
            matches = [m for m in hits if m.node_id in in_pool]
            subjects = [m.node_id for m in matches]
        if (
            analysis.form == "fact"
            and not analysis.asked_key
            and analysis.answer_type == "value"
            and len(analysis.constraints) > 1
            and not subjects
            and not at_leaf
        ):
            # "the Bastion analyst roles - remote still?": the role the other values name is
            # asked about the value it does not hold; its own value of that key answers.
            in_pool = set(pool)
            for asked in analysis.constraints:
                if not one_valued(asked.key):
                    continue
                rest = tuple(c for c in analysis.constraints if c != asked)
                hits = leaves.verify(ParsedQuery("retrieval", rest), schema, vocab.values, names)
                hits = [m for m in hits if m.node_id in in_pool]
                if hits:
                    matches, subjects = hits, [m.node_id for m in hits]
                    analysis = replace(analysis, asked_key=asked.key, constraints=rest)
                    break
        if (
            analysis.form == "fact"
            and analysis.asked_key
            and len(analysis.constraints) > 1
            and not subjects
            and not at_leaf
        ):
            # "the store manager job in Valencia (Spain)" where no leaf states all three: a
            # question about one fact names one role, and the role that meets all its words
            # but one is the closest the memory holds (the fewest such roles, the best).
            in_pool = set(pool)
            closest = []
            for n, dropped in enumerate(analysis.constraints):
                rest = tuple(c for c in analysis.constraints if c != dropped)
                hits = leaves.verify(ParsedQuery("retrieval", rest), schema, vocab.values, names)
                hits = [m for m in hits if m.node_id in in_pool]
                if hits:
                    closest.append((len(hits), n, rest, dropped, hits))
            if closest:
                _, _, rest, dropped, hits = min(closest, key=lambda c: (c[0], c[1]))
                matches, subjects = hits, [m.node_id for m in hits]
                analysis = replace(analysis, constraints=rest, unmet=(dropped,))
        if analysis.form == "why" and wanted and not subjects and not at_leaf:
            # "Why did the fraud roles move out of Cork?": the value the question names is
            # the one the role left; its notes name it.
            said = [MicroQuery(MENTION_KEY, c.value) for c in wanted if c.value]
            query = ParsedQuery("retrieval", tuple(said))
            in_pool = set(pool)
            hits = leaves.verify(query, schema, vocab.values, names)
            subjects = [m.node_id for m in hits if m.node_id in in_pool]
        out = Examined(matches if (constrained and not at_leaf) else None, analysis=analysis)
        key = analysis.asked_key
        if analysis.form in ("list", "count"):
            if (
                analysis.level
                and schema.has(analysis.level)
                and schema.rank(scope.level) < schema.rank(analysis.level) < len(schema.names) - 1
            ):
                out.groups = _grouped(subjects, analysis.level, catalog)
            if not constrained:
                out.matches = [LeafMatch(n, (), names.get(n, n)) for n in subjects]
        elif analysis.form == "distribution" and key == COUNTRY_KEY:
            spread = leaves.countries(subjects, vocab.values.get("location", []))
            if spread:
                out.distributions = {key: spread}
                out.counted = len(subjects)
        elif analysis.form == "distribution" and key:
            known = vocab.values.get(key, [])
            spread = leaves.distribution(subjects, key, known) if known else []
            if spread:
                out.distributions = {key: spread}
                out.counted = len(subjects)
        elif analysis.form == "why":
            if key == "rejection_reason":
                known = vocab.values.get("rejection_reason", [])
                out.findings = why_findings(leaves, subjects, analysis, known, names)
            else:  # "why did this go from 2 seats to 1?": a cause the notes give
                meaning = self._passage_meaning(where, scope, qvec)
                out.findings = cause_findings(leaves, subjects, question, names, meaning)
        elif analysis.form == "fact":
            if not key:  # "which JavaScript framework ...": a kind of skill no key holds
                self._kind_findings(out, analysis, question, leaves, subjects, vocab, names)
            if (
                not out.findings
                and OFFERED.search(question)
                and not _A_BAND.search(question)
                and (key == "salary_range" or PAY_ASKED.search(question))
            ):
                # "What salary did the tools programmer get offered?": the offer's, not the band
                out.findings = offer_findings(leaves, subjects, names)
            if key and not out.findings:
                # An export object holding the attribute in parts ("salary": min, max, ...).
                out.findings = part_findings(leaves, subjects, key, names)
            if key and key in vocab.values and not out.findings:
                out.findings = key_findings(leaves, subjects, key, vocab.values[key], names)
                if not out.findings and len(subjects) == 1 and one_valued(key):
                    out.mentioned = mentioned_values(
                        leaves, subjects[0], key, vocab.values[key], names
                    )
            if key and not out.findings and not out.mentioned:
                # "which languages are a plus": no language facet here; among its skills
                self._kind_findings(out, analysis, question, leaves, subjects, vocab, names)
            if not out.findings and not out.mentioned and key and not analysis.asked_phrase:
                # No facet holds it here: the passages may say it in the key's own words.
                analysis = replace(analysis, asked_phrase=humanize_key(key).lower())
            if not out.findings and (analysis.asked_phrase or analysis.answer_type != "value"):
                known = {
                    fold(part)  # "United Kingdom" of "London, United Kingdom" is no person
                    for values in vocab.values.values()
                    for v in values
                    for part in (v, *v.split(","))
                }
                out.findings = evidence_findings(
                    leaves,
                    subjects,
                    analysis,
                    question,
                    names,
                    known,
                    meaning=self._passage_meaning(where, scope, qvec),
                )
        return out

    def _kind_findings(
        self,
        out: Examined,
        analysis: Analysis,
        question: str,
        leaves: ScopeLeaves,
        subjects: list[str],
        vocab: ScopeVocabulary,
        names: dict[str, str],
    ) -> None:
        """ "Which JavaScript framework is the role built around?": no document says which of
        the role's skills is one; its skills, closest in meaning to the kind first."""
        kind = kind_asked(analysis, question)
        if not kind or not subjects:
            return
        for key in kind_keys(question):
            known = vocab.values.get(key, [])
            found = key_findings(leaves, subjects[:3], key, known, names)
            found = [f for f in found if not f.value.strip().isdigit()]  # no skill is "1"
            if found:
                out.findings = self._closest_first(found, kind)
                out.analysis = replace(analysis, asked_key=key, kind=kind)
                return

    def _closest_first(self, findings: list[Finding], kind: str) -> list[Finding]:
        """``findings`` ordered by the closeness in meaning of their values to ``kind``."""
        vectors = self.embedder.embed([kind, *(f.value for f in findings)])
        vectors = np.asarray(vectors, dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9
        close = vectors[1:] @ vectors[0]
        order = sorted(range(len(findings)), key=lambda i: (-close[i], i))
        return [findings[i] for i in order]

    def _passage_meaning(
        self, where: str, scope: Scope, qvec: np.ndarray | None
    ) -> dict[str, float]:
        """Each passage of the scope by its closeness in meaning to the question (MiniLM
        cosine; the vectors are the evidence view's, held for the scope)."""
        rows = self.retriever.rows("evidence", where, scope.node_id)
        if qvec is None or rows is None or rows.vectors is None or not len(rows):
            return {}
        return dict(zip(rows.cols["passage_id"], (rows.vectors @ qvec).tolist(), strict=True))

    @staticmethod
    def _kept_in_scope(
        context: RetrievedContext, scope: Scope, catalog: dict[str, tuple[str, str, str, int]]
    ) -> RetrievedContext:
        """The context, checked once more against the scope: the store prefilter guarantees
        it, and checking costs microseconds. A node the catalog places outside the scope is
        an error, never an answer (:class:`ScopeLeakError`); items of a node the catalog does
        not know yet (an index writing its tables one after the other) are left out."""
        unknown = set()
        for node in context.node_ids() - {scope.node_id}:
            entry = catalog.get(node)
            if entry is None:
                unknown.add(node)
            elif not scope.contains(entry[1]):
                raise ScopeLeakError(f"retrieval returned {node} outside {scope.node_id}")
        if not unknown:
            return context

        def kept(items):
            return [i for i in items if i.node_id not in unknown]

        return replace(
            context,
            facets=kept(context.facets),
            qa=kept(context.qa),
            summaries=kept(context.summaries),
            evidence=kept(context.evidence),
            matches=None if context.matches is None else kept(context.matches),
        )

    # -- answering -----------------------------------------------------------------------
    def ask(
        self,
        question: str,
        scope: str,
        query_id: str | None = None,
        as_of: str | None = None,
        **retrieve_kwargs: object,
    ) -> AskResult:
        """Retrieve, answer with the engine, keep only in-scope citations, log the query.

        ``as_of`` (a date, ``2026-03-02`` or ``2026-03-02T09:30``): answer with the facts
        that held then (:mod:`query.as_of`) instead of what holds now."""
        if as_of is not None:
            as_of = as_of_date(as_of)  # a date this cannot read fails before any work
        usage0 = self.agents.usage.snapshot()
        # Words of time ("in March") are read for when, and the rest for what is asked.
        asked = time_asked(question) if as_of is None else None
        plain = question if asked is None else asked.without(question)
        retrieval = self.retrieve(plain, scope, **retrieve_kwargs)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        timed = self._answer_in_time(question, retrieval, as_of, asked)
        if timed is None and plain != question:  # not about facts kept with validity
            retrieval = self.retrieve(question, scope, **retrieve_kwargs)  # type: ignore[arg-type]
            t0 = time.perf_counter()
        if timed is None:
            answer = self.agents.answer(retrieval.context)
            allowed = retrieval.context.node_ids()
            reasons = None
        else:
            then, what, as_of = timed
            answer = Answer(then.answer, tuple(then.references), what)
            allowed, reasons = set(then.references), then.reasons
        answer_ms = (time.perf_counter() - t0) * 1000
        references = [r for r in dict.fromkeys(answer.references) if r in allowed]
        usage1 = self.agents.usage.snapshot()
        timings = dict(
            retrieval.timings,
            answer_ms=answer_ms,
            total_ms=retrieval.timings["retrieval_ms"] + answer_ms,
        )
        parsed = retrieval.context.parsed
        result = AskResult(
            question=question,
            scope=retrieval.scope.node_id,
            answer=answer.answer,
            references=references,
            rationale=answer.rationale,
            contexts=retrieval.contexts,
            timings={k: round(v, 3) for k, v in timings.items()},
            llm_calls=usage1["llm_calls"] - usage0["llm_calls"],
            tokens={
                "prompt": usage1["prompt_tokens"] - usage0["prompt_tokens"],
                "completion": usage1["completion_tokens"] - usage0["completion_tokens"],
            },
            retries=usage1["retries"] - usage0["retries"],
            cache_hits=usage1["cache_hits"] - usage0["cache_hits"],
            parsed={
                "kind": parsed.kind,
                "micro_queries": [m.text for m in parsed.micro],
                "matched_keys": sorted({m.key for m in parsed.micro}),
                "target_keys": list(parsed.target_keys),
                "unmatched": list(parsed.unmatched),
                "analysis": retrieval.context.analysis.describe()
                if retrieval.context.analysis
                else None,
            },
            retrieved=retrieval.context,
            reasons=why_cited(references, retrieval.context) if reasons is None else reasons,
            as_of=as_of,
        )
        if self.log_queries:
            self._pending.append(
                [
                    query_id or uuid.uuid4().hex,
                    datetime.now(UTC).replace(tzinfo=None),
                    result.scope,
                    result.question,
                    result.references,
                    result.timings["total_ms"],
                    result.parsed["matched_keys"],
                    result.parsed["kind"],
                    self.agents.engine_id,
                ]
            )
            if len(self._pending) >= self.log_batch:
                self.flush()
        return result

    def _answer_in_time(
        self, question: str, retrieval: Retrieval, as_of: str | None, asked: TimeAsked | None
    ) -> tuple[AsOfAnswer, str, str | None] | None:
        """The answer from the facts' validity (:mod:`query.as_of`), what it answers and the
        instant it is as of (None: it answers when, or what changed), for
        a question asked ``as_of`` a date or one whose words ask of time ("what was the
        location in March", "what changed since March", "when did the role move"); None for
        the engine to answer. Words of time apply to the attributes memory keeps with
        validity: a question naming none ("what did I buy in May") is answered as any."""
        if asked is None and as_of is None:
            return None
        context = retrieval.context
        scope = retrieval.scope
        aliases = self._tree_vocabulary()[1]
        place = (scope.node_id, scope.name, scope.path)
        skip = frozenset(self._erasing())  # recorded for erasure: never served
        about_facts = context.analysis is not None and bool(
            context.analysis.asked_key or context.analysis.constraints
        )
        if asked is not None and asked.kind == "when" and about_facts:
            when = answer_when(self.settings, context.analysis, *place, aliases, skip)
            return None if when is None else (when, "when the facts held", None)
        if asked is not None and asked.kind == "since" and _CHANGED.search(question):
            changed = answer_changes(
                self.settings, context.analysis, *place, asked.moment, aliases, skip
            )
            return changed, f"changes since {asked.moment}", None
        if asked is not None and asked.kind == "as_of" and about_facts:
            as_of = asked.moment
        if as_of is None:
            return None

        def read_now() -> tuple[str, list[str], list[str]]:
            now = self.agents.answer(context)
            refs = [r for r in dict.fromkeys(now.references) if r in context.node_ids()]
            held = [f for f in (*context.findings, *context.mentioned) if f.node_id in refs]
            return now.answer, refs, sorted({s for f in held for s in f.source_ids})

        then = answer_as_of(
            self.settings,
            context.analysis,
            *place,
            self.settings.schema.is_leaf(scope.level),
            as_of,
            read_now,
            aliases,
            skip,
        )
        return then, f"as of {then.moment}: the facts that held then", then.moment

    def flush(self) -> None:
        """Append queued asks to ``query_log`` in one short write."""
        if not self._pending:
            return
        rows, self._pending = self._pending, []
        try:
            with database.connect(self.settings.duckdb_path) as con:
                con.executemany("INSERT INTO query_log VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        except (OSError, duckdb.Error, StoreBusyError) as exc:
            # A read-only home (or one a writer kept locked too long) still answers; the log
            # only feeds adaptation.
            warnings.warn(
                f"query log not written ({len(rows)} questions): {exc}",
                RuntimeWarning,
                stacklevel=2,
            )
