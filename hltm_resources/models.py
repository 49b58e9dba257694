"""Data structures of the memory tree: documents, memory items, node memories, the topology."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from functools import cached_property

from hltm_resources.schema import TreeSchema


@dataclass(frozen=True)
class Document:
    """A raw document hanging off a leaf (``leaf_id`` is the leaf's raw id)."""

    doc_id: str
    leaf_id: str
    kind: str
    text: str
    updated_at: str


@dataclass(frozen=True)
class Facet:
    """One key-value fact. ``support`` counts the leaf projects behind it (1 at a leaf)."""

    key: str
    value: str
    support: int
    source_ids: tuple[str, ...]
    #: When it became true: the date of the first of the leaf's documents from which memory
    #: holds it (ISO, :func:`hltm_resources.dates.instant`; "" at parents, or undated).
    valid_from: str = ""
    #: When it stopped being true: the date of the document that replaced it ("" while it
    #: holds; only facts of :attr:`Memory.history` have one).
    valid_to: str = ""

    @property
    def text(self) -> str:
        """The linearized form that gets embedded."""
        return f"{self.key}: {self.value}"


@dataclass(frozen=True)
class QAPair:
    """An answerable question with its answer; the question gets embedded."""

    question: str
    answer: str
    source_ids: tuple[str, ...]


@dataclass(frozen=True)
class Summary:
    """A detailed paragraph and a one-sentence summary; the sentence gets embedded."""

    detailed: str
    concise: str
    source_ids: tuple[str, ...]


@dataclass(frozen=True)
class Passage:
    """A span of one document kept verbatim as leaf evidence: a turn, a sentence or a few.

    ``context`` is the passage with its neighbours in the leaf (what it says in context);
    both are embedded, and both are searchable by words."""

    passage_id: str
    doc_id: str
    text: str
    context: str
    updated_at: str
    kind: str


@dataclass(frozen=True)
class NodeInfo:
    """A node of the tree as the source of truth describes it."""

    node_id: str
    level: str
    raw_id: str
    name: str
    parent_id: str | None
    path: str


@dataclass(frozen=True)
class Memory:
    """``M_v = (F_v, Q_v, S_v)`` of one node, plus how many leaves it covers, plus (at leaves)
    the evidence ``E_v``: every document's text as passages."""

    node_id: str
    level: str
    facets: tuple[Facet, ...]
    qa: tuple[QAPair, ...]
    summary: Summary
    leaf_count: int = 1
    evidence: tuple[Passage, ...] = ()
    #: (leaves) Facts that held once and were replaced by a later document, each with its
    #: ``valid_from`` and ``valid_to``: history, not errors (``facets`` are what holds now).
    history: tuple[Facet, ...] = ()
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    def canonical(self) -> dict:
        """A JSON-ready dict of the content (no timestamps), used for hashing and verify."""
        return {
            "node_id": self.node_id,
            "level": self.level,
            "leaf_count": self.leaf_count,
            "facets": [asdict(f) | {"source_ids": list(f.source_ids)} for f in self.facets],
            "qa": [asdict(q) | {"source_ids": list(q.source_ids)} for q in self.qa],
            "summary": asdict(self.summary) | {"source_ids": list(self.summary.source_ids)},
            "evidence": [asdict(p) for p in self.evidence],
            "history": [asdict(f) | {"source_ids": list(f.source_ids)} for f in self.history],
        }

    def content_hash(self) -> str:
        """sha256 of the canonical content."""
        return stable_hash(self.canonical())


def stable_hash(obj: object) -> str:
    """sha256 hex of ``obj`` serialized as canonical JSON."""
    data = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Topology:
    """The tree as the SOT holds it: per level, raw id -> node, in path order (the nodes of one
    parent are contiguous)."""

    schema: TreeSchema
    levels: dict[str, dict[str, NodeInfo]]

    @classmethod
    def empty(cls, schema: TreeSchema) -> Topology:
        return cls(schema, {name: {} for name in schema.names})

    def level(self, level: str) -> dict[str, NodeInfo]:
        return self.levels[level]

    @property
    def leaves(self) -> dict[str, NodeInfo]:
        return self.levels[self.schema.leaf.name]

    @cached_property
    def _children(self) -> dict[str, list[NodeInfo]]:
        out: dict[str, list[NodeInfo]] = {}
        for nodes in self.levels.values():
            for node in nodes.values():
                if node.parent_id is not None:
                    out.setdefault(node.parent_id, []).append(node)
        return out

    def children(self, node: NodeInfo) -> list[NodeInfo]:
        return list(self._children.get(node.node_id, ()))

    def descendants(self, node: NodeInfo) -> list[NodeInfo]:
        """Every node below ``node``, level by level."""
        out, frontier = [], [node]
        while frontier:
            frontier = [c for n in frontier for c in self.children(n)]
            out.extend(frontier)
        return out

    def node(self, node_id: str) -> NodeInfo | None:
        level, _, raw = node_id.partition(":")
        return self.levels[level].get(raw) if level in self.levels else None

    def ancestors(self, node: NodeInfo) -> list[NodeInfo]:
        """Parent, grandparent, ... up to the root."""
        out = []
        parent = node.parent_id
        while parent is not None and (info := self.node(parent)) is not None:
            out.append(info)
            parent = info.parent_id
        return out

    def counts(self) -> dict[str, int]:
        return {self.schema.level(name).plural: len(nodes) for name, nodes in self.levels.items()}
