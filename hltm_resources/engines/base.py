"""The interface of the memory "agents" and the data they exchange with the query path.

One implementation is deterministic and extractive (no model); another calls an
OpenAI-compatible endpoint. Assets and the query module only ever see :class:`MemoryAgents`.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from hltm_resources.dates import instant
from hltm_resources.models import Document, Facet, Memory, NodeInfo, QAPair, Summary
from hltm_resources.schema import DEFAULT_SCHEMA, TreeSchema


@dataclass(frozen=True)
class Hints:
    """Adaptation hints mined from the query log (version 0 means none)."""

    version: int = 0
    patterns: tuple[str, ...] = ()
    facet_names: tuple[str, ...] = ()


@dataclass
class Usage:
    """Counts of agent work: calls per agent, LLM calls and tokens, cache hits."""

    engine_calls: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    retries: int = 0
    token_encoding: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for key, value in counts.items():
                setattr(self, key, getattr(self, key) + value)
        node = _NODE_USAGE.get()
        if node is not None and node is not self:
            node.add(**counts)

    def snapshot(self) -> dict[str, int | str | None]:
        with self._lock:
            return {
                "engine_calls": self.engine_calls,
                "llm_calls": self.llm_calls,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "cache_hits": self.cache_hits,
                "retries": self.retries,
                "token_encoding": self.token_encoding,
            }


#: The usage of the node this thread is building (see :func:`node_usage`).
_NODE_USAGE: ContextVar[Usage | None] = ContextVar("hltm_node_usage", default=None)


@contextmanager
def node_usage() -> Iterator[Usage]:
    """Inside this block, every :meth:`Usage.add` of this thread also counts in the usage it
    yields: what building one node cost, while the engine's own usage keeps the total (nodes
    are built on a thread each, and one node's LLM calls all happen on its thread)."""
    usage = Usage()
    token = _NODE_USAGE.set(usage)
    try:
        yield usage
    finally:
        _NODE_USAGE.reset(token)


def dated(facets: Sequence[Facet], docs: Sequence[Document]) -> list[Facet]:
    """``facets``, each holding from the earliest date of its sources among ``docs`` (its
    own ``valid_from`` when it has one)."""
    when = {d.doc_id: instant(d.updated_at) for d in docs}
    out = []
    for f in facets:
        dates = [when[s] for s in f.source_ids if when.get(s)]
        out.append(replace(f, valid_from=f.valid_from or min(dates, default="")))
    return out


@dataclass(frozen=True)
class MicroQuery:
    """A facet micro-query parsed from a question; ``value`` is None for key-only queries."""

    key: str
    value: str | None = None

    @property
    def text(self) -> str:
        return f"{self.key}: {self.value}" if self.value else self.key.replace("_", " ")


@dataclass(frozen=True)
class ParsedQuery:
    """What a question asks: its style, micro-queries, target keys and unmatched constraints."""

    kind: str  # "summary" | "retrieval"
    micro: tuple[MicroQuery, ...] = ()
    target_keys: tuple[str, ...] = ()
    unmatched: tuple[str, ...] = ()


@dataclass(frozen=True)
class Analysis:
    """What a question asks, read against its scope's memory
    (:func:`hltm_resources.engines.understanding.analyze`): the same for every engine."""

    #: "fact" | "list" | "count" | "distribution" | "why"
    form: str
    #: The facet key asked about (None: not a facet key).
    asked_key: str | None = None
    #: Words naming what is asked when they name no facet key the scope holds ("code name"):
    #: looked for in the evidence.
    asked_phrase: str = ""
    #: What the answer is: "value", "person", "number", "date", "nodes" or "quote".
    answer_type: str = "value"
    #: The level whose nodes a list or count names (the leaves unless it names another).
    level: str = ""
    #: Values the answer's nodes must hold (identity, not similarity).
    constraints: tuple[MicroQuery, ...] = ()
    #: Names looked for in the evidence (a candidate; a value no facet holds).
    mentions: tuple[str, ...] = ()
    #: A node of the scope the question names ("Kaito's searches"): the answer stays in it.
    within: str | None = None
    #: Values named in another role ("the onsite interview"): words for the evidence only.
    context_words: tuple[str, ...] = ()
    #: A yes/no question ("Is this role remote?").
    yes_no: bool = False
    #: The options a question lists for what it asks ("remote, hybrid or on-site?").
    options: tuple[str, ...] = ()
    #: How the asked key was found: "words" (words that go with a key, a hint), "meaning",
    #: or "" (named outright, or none).
    asked_by: str = ""
    #: The keys the question's words go with ("where", "office" -> location), best first.
    worded: tuple[str, ...] = ()
    #: Values the answer's nodes must not hold ("... but not in Toronto").
    excluded: tuple[MicroQuery, ...] = ()
    #: Keys the answer's nodes must state, whatever the value ("searches that have a code
    #: name").
    holding: tuple[str, ...] = ()
    #: Values the question named that no node meeting its other values holds: the answer is
    #: about the closest nodes, and says which value they do not meet.
    unmet: tuple[MicroQuery, ...] = ()
    #: A kind of thing the question asks for that no document names as such ("which
    #: JavaScript framework"): the answer lists the role's values of ``asked_key`` closest in
    #: meaning first, for a person to pick.
    kind: str = ""

    def describe(self) -> dict:
        """JSON-ready, for ``ask --json``, the query log and the LLM engine's prompt."""
        out = {
            "form": self.form,
            "asked_key": self.asked_key,
            "asked_phrase": self.asked_phrase,
            "answer_type": self.answer_type,
            "level": self.level,
            "constraints": [f"{m.key}: {m.value}" for m in self.constraints],
            "mentions": list(self.mentions),
            "within": self.within,
        }
        if self.options:
            out["options"] = list(self.options)
        if self.excluded:
            out["excluded"] = [f"{m.key}: {m.value}" for m in self.excluded]
        if self.holding:
            out["holding"] = list(self.holding)
        if self.unmet:
            out["unmet"] = [f"{m.key}: {m.value}" for m in self.unmet]
        if self.kind:
            out["kind"] = self.kind
        return out


@dataclass(frozen=True)
class Finding:
    """One fact an answer states: the node holding it, its value, the documents it comes
    from and, read from a passage, the words that state it."""

    node_id: str
    name: str
    value: str
    key: str | None = None
    source_ids: tuple[str, ...] = ()
    quote: str = ""


@dataclass
class ScopeVocabulary:
    """The facet keys and values of one scope, then the other values of the tree (a value
    named outside the scope is recognized, and matches nothing in it)."""

    values: dict[str, list[str]] = field(default_factory=dict)
    #: Keys that count leaves (``project_count``): never a constraint a question states.
    count_keys: tuple[str, ...] = ()
    #: Keys the data shows to be another name of a canonical key (``vacancyName`` -> title).
    aliases: dict[str, str] = field(default_factory=dict)
    #: Per key, the values that only nodes outside the scope hold.
    outside: dict[str, frozenset[str]] = field(default_factory=dict)
    #: What a parser derives from ``values`` once and reuses for every question (an index of
    #: the values): a vocabulary is not changed once questions are parsed against it.
    derived: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    @property
    def keys(self) -> list[str]:
        return sorted(self.values)


@dataclass(frozen=True)
class ContextItem:
    """One retrieved memory item with its score and provenance."""

    view: str
    node_id: str
    level: str
    score: float
    text: str
    answer: str | None = None
    detailed: str | None = None
    key: str | None = None
    value: str | None = None
    support: int | None = None
    source_ids: tuple[str, ...] = ()
    #: Evidence: the date of the passage's document and its dense score (``score`` is the
    #: fused rank score).
    date: str | None = None
    cosine: float | None = None


@dataclass(frozen=True)
class NodeContext:
    """A node returned by the facet retriever: its score, leaf count and facets."""

    node_id: str
    level: str
    name: str
    score: float
    leaf_count: int
    facets: tuple[ContextItem, ...]
    best: tuple[float, ...] = ()  # best cosine per micro-query, in parse order


@dataclass(frozen=True)
class LeafMatch:
    """A leaf verified against every constraint of a question; per constraint, how:
    ``facet`` or the id of the document whose text states it."""

    node_id: str
    how: tuple[str, ...]
    name: str = ""
    #: The constraints met, in the order of ``how`` (empty where none were checked); an
    #: account of the match, not part of what it is (equal matches may differ here).
    met: tuple[MicroQuery, ...] = field(default=(), compare=False)
    #: Per constraint met, the leaf's facet value that is the constraint's ("" where its
    #: evidence stated it, or a number was compared with a bound).
    held: tuple[str, ...] = field(default=(), compare=False)

    @property
    def source_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(h for h in self.how if h != "facet"))


@dataclass
class RetrievedContext:
    """Everything the answer agent may use: nothing outside ``scope`` ever gets in."""

    scope: str
    question: str
    parsed: ParsedQuery
    facets: list[NodeContext]
    qa: list[ContextItem]
    summaries: list[ContextItem]
    evidence: list[ContextItem] = field(default_factory=list)
    #: Leaves verified against every constraint of the question (None: not verified, e.g. a
    #: scope too large to hold in memory; the facet matches are then all there is).
    matches: list[LeafMatch] | None = None
    #: For a summary question, per asked key, how many of the leaves concerned (all leaves in
    #: scope, or the verified matches of its filters) state each value, counted over leaves
    #: (facets and evidence); and how many leaves that is.
    distributions: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    leaves_counted: int = 0
    #: What the question asks (None: not analyzed, e.g. the baselines' contexts).
    analysis: Analysis | None = None
    #: The facts that answer it, each with its node and documents (one-fact and "why"
    #: questions), and for lists and counts at another level than the leaves, those nodes.
    findings: list[Finding] = field(default_factory=list)
    #: Nodes a list or count at a level above the leaves names (recruiters), each with its
    #: name and the leaves of its that match.
    groups: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    #: For a one-fact question whose answer memory does not hold as a fact (two values of a
    #: one-value attribute are named, and nothing says which is the role's): the values the
    #: node's documents mention, each quoted, for a person to decide.
    mentioned: list[Finding] = field(default_factory=list)

    def node_ids(self) -> set[str]:
        ids = {n.node_id for n in self.facets}
        for items in (
            self.qa,
            self.summaries,
            self.evidence,
            self.matches or (),
            self.findings,
            self.mentioned,
        ):
            ids.update(i.node_id for i in items)
        ids.update(self.groups)
        if self.distributions:
            ids.add(self.scope)
        return ids


@dataclass(frozen=True)
class Answer:
    """The answer agent's output: text, ranked node-id citations and a rationale."""

    answer: str
    references: tuple[str, ...]
    rationale: str


class MemoryAgents(ABC):
    """Facet extraction, QA generation, summarization, aggregation, query parsing, answering."""

    #: Identifies the engine and its prompt/template version; part of every input hash.
    engine_id: str = "abstract"

    def __init__(self, schema: TreeSchema = DEFAULT_SCHEMA) -> None:
        self.schema = schema
        self.usage = Usage()

    # -- indexing ------------------------------------------------------------------------
    @abstractmethod
    def extract_facets(self, node: NodeInfo, docs: Sequence[Document], hints: Hints) -> list[Facet]:
        """Facets of a leaf from its documents."""

    @abstractmethod
    def generate_qa(
        self, node: NodeInfo, docs: Sequence[Document], facets: Sequence[Facet], hints: Hints
    ) -> list[QAPair]:
        """Answerable question-answer pairs of a leaf."""

    @abstractmethod
    def summarize(
        self, node: NodeInfo, docs: Sequence[Document], facets: Sequence[Facet], hints: Hints
    ) -> Summary:
        """A detailed paragraph and a one-sentence summary of a leaf."""

    @abstractmethod
    def aggregate(
        self,
        node: NodeInfo,
        children: Sequence[tuple[NodeInfo, Memory]],
        hints: Hints,
    ) -> Memory:
        """A parent's memory from its children's memories."""

    def facet_timeline(
        self, node: NodeInfo, docs: Sequence[Document], hints: Hints
    ) -> tuple[list[Facet], list[Facet]]:
        """A leaf's facts that hold now, each with when it became true, and the facts that
        held once and a later document replaced (each with ``valid_from`` and ``valid_to``).

        This default reads the documents once: each fact holds from the earliest of its
        sources, and nothing is history. An engine that can read the documents as they
        stood at each date overrides it."""
        facets = self.extract_facets(node, docs, hints)
        return dated(facets, docs), []

    def build_leaf(self, node: NodeInfo, docs: Sequence[Document], hints: Hints) -> Memory:
        """A leaf's memory: facets (what holds now, and its history), then QA pairs and
        summary of what holds now."""
        facets, history = self.facet_timeline(node, docs, hints)
        qa = self.generate_qa(node, docs, facets, hints)
        summary = self.summarize(node, docs, facets, hints)
        return Memory(
            node.node_id,
            node.level,
            tuple(facets),
            tuple(qa),
            summary,
            leaf_count=1,
            history=tuple(history),
        )

    # -- serving -------------------------------------------------------------------------
    @abstractmethod
    def parse_query(
        self, question: str, vocabulary: ScopeVocabulary, analysis: Analysis | None = None
    ) -> ParsedQuery:
        """Micro-queries and style of a question, against the scope's vocabulary and what
        the question was read to ask (``analysis``, the same for every engine)."""

    @abstractmethod
    def answer(self, context: RetrievedContext) -> Answer:
        """An answer citing node ids that are in ``context``."""
