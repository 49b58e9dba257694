"""The three retrievers of the paper (section 3.5), over one identity-scoped subtree.

Every store read carries the scope's subtree filter inside the LanceDB query (a prefilter), so
nothing outside the scope is ever a candidate. A scope's rows (with vectors) are fetched once
per table version and reused: later questions in the same scope are pure numpy. A scope with
more than ``MAX_CACHED_ROWS`` rows in a view keeps less: its facet rows without vectors and
one vector per distinct text (:class:`TextFacets`, still scored exactly), its summaries'
vectors; its QA pairs and passages are searched in LanceDB every time.

Scores:

- facet: ``s_facet(q, v) = 1/(k |F_q|) * sum_f sum_{f' in TopK(f, F_v)} cos(f, f')``
- QA: ``s_qa(q, v) = max_{q' in Q_v} cos(q, q')``
- summary: ``s_summary(q, v) = cos(q, S_v)``
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hltm_resources.engines.base import ContextItem, NodeContext, RetrievedContext
from hltm_resources.schema import TreeSchema
from hltm_resources.stores.vectors import (
    CONTEXT_BOOST,
    CONTEXT_VECTOR,
    EXACT_FACET_ROWS,
    EXACT_FACET_TEXTS,
    VectorStore,
    node_filter,
    passage_filter,
    vector_matrix,
)
from query.text_search import PassageIndex

MAX_CACHED_ROWS = 20_000
#: The row id column of a scan (see :meth:`VectorStore.take`).
ROW_ID = "_rowid"
#: Rows per view of a scope too large to search in numpy that are still kept, to read the
#: rows of the nodes LanceDB's search picks from (not scanned again for each question).
MAX_HELD_SCOPE_ROWS = 100_000
#: Vectors the cached scopes may hold together (384 float32 each: about 600 MB), least
#: recently asked scopes forgotten first; a scope of MAX_CACHED_ROWS rows per view fits many
#: times.
MAX_HELD_ROWS = 400_000
MAX_MATCHED_NODES = 500
#: Views with one row per node: in a scope too large for ``MAX_CACHED_ROWS`` (an account of
#: 30k projects) their vectors alone are held (up to ``MAX_HELD_SCOPE_ROWS``) and searched
#: exactly in numpy; only the top rows' payload is read (10-20 ms with that read, against
#: about 30 ms for LanceDB's flat search of an account's 30k summaries at 100k leaves).
ONE_ROW_PER_NODE = ("summaries",)
VECTORS_ONLY = ("node_id", "vector", ROW_ID)
#: Facet rows a scope too large to hold may keep as :class:`TextFacets` (payload alone, about
#: 100 bytes a row), and the distinct texts it may have (one vector each); a scope past
#: either is searched through LanceDB's index for ``CANDIDATE_LIMIT`` rows per micro-query.
#: The index is made only for a facets table that can hold such a scope (``VectorStore.tidy``).
MAX_TEXT_FACET_ROWS = EXACT_FACET_ROWS
MAX_FACET_TEXTS = EXACT_FACET_TEXTS
CANDIDATE_LIMIT = 400
MAX_FACETS_PER_NODE = 12
CACHED_SCOPES = 64

COLUMNS = {
    "facets": ["node_id", "level", "key", "value", "support", "source_ids", "vector"],
    "qa": ["node_id", "level", "text", "answer", "source_ids", "vector"],
    "summaries": ["node_id", "level", "text", "detailed", "source_ids", "leaf_count", "vector"],
    "evidence": [
        "node_id",
        "level",
        "text",
        "passage_id",
        "source_ids",
        "updated_at",
        "kind",
        "context",
        "vector",
        "context_vector",
    ],
}
TEXT_FACET_COLUMNS = [c for c in COLUMNS["facets"] if c != "vector"]
#: Rows without vectors count against ``MAX_HELD_ROWS`` as a vector per this many bytes
#: (a 384-dimension float32 vector's).
PAYLOAD_BYTES_PER_VECTOR = 384 * 4
#: What a facet item shows of its row (and its text).
FACET_PAYLOAD = ("level", "key", "value", "support", "source_ids")
#: Reciprocal rank fusion constant: a small k lets the first ranks of each list dominate.
RRF_K = 20
#: Candidates each evidence search contributes to the fusion.
EVIDENCE_CANDIDATES = 100


def facet_scores(
    micro_vecs: np.ndarray, facet_vecs: np.ndarray, facet_nodes: Sequence[str], k: int
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Per node: the facet score and the best cosine per micro-query.

    A node with fewer than ``k`` facets counts the missing ones as zero, as the formula's
    ``1/k`` does.
    """
    if len(micro_vecs) == 0 or len(facet_vecs) == 0:
        return {}, {}
    groups = NodeGroups.of(facet_nodes)
    scores, best = node_scores(micro_vecs @ facet_vecs.T, groups, k)
    return (
        dict(zip(groups.nodes, scores.tolist(), strict=True)),
        dict(zip(groups.nodes, best.T.tolist(), strict=True)),
    )


@dataclass(frozen=True)
class NodeGroups:
    """Rows grouped per node: ``order`` lists row indices node by node (a node's rows in
    their order), node ``j``'s rows are ``order[starts[j]:ends[j]]``; nodes in the order their
    first row comes."""

    nodes: list[str]
    order: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    @classmethod
    def of(cls, row_nodes: Sequence[str] | pa.ChunkedArray) -> NodeGroups:
        if isinstance(row_nodes, pa.ChunkedArray):  # in Arrow: codes by first appearance too
            encoded = pc.dictionary_encode(row_nodes).combine_chunks()
            nodes = encoded.dictionary.to_pylist()
            idx = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        else:
            codes: dict[str, int] = {}
            idx = np.fromiter(
                (codes.setdefault(n, len(codes)) for n in row_nodes),
                dtype=np.int64,
                count=len(row_nodes),
            )
            nodes = list(codes)
        ends = np.cumsum(np.bincount(idx, minlength=len(nodes)))
        starts = np.concatenate([np.zeros(1, dtype=ends.dtype), ends[:-1]])
        return cls(nodes, np.argsort(idx, kind="stable"), starts, ends)

    def rows(self, j: int) -> np.ndarray:
        return self.order[self.starts[j] : self.ends[j]]


def node_scores(cos: np.ndarray, groups: NodeGroups, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per node (in ``groups.nodes`` order) its facet score, and its best cosine per
    micro-query (``|F_q| x nodes``), from the cosines of every row (``|F_q| x rows``).

    The same numbers, to the bit, as scoring one node at a time: the score sums each node's
    top cosines as ``top.sum()`` does (one pairwise sum of ``|F_q| x k`` values)."""
    m = cos.shape[0]
    if not groups.nodes:
        return np.zeros(0, dtype=cos.dtype), np.zeros((m, 0), dtype=cos.dtype)
    best = np.maximum.reduceat(cos[:, groups.order], groups.starts, axis=1)
    if k == 1:
        scores = np.ascontiguousarray(best.T).sum(axis=1) / (k * m)
        return scores, best
    scores = np.empty(len(groups.nodes), dtype=cos.dtype)
    for j in range(len(groups.nodes)):
        top = -np.sort(-cos[:, groups.rows(j)], axis=1)[:, :k]
        scores[j] = top.sum() / (k * m)
    return scores, best


def qa_scores(cosines: Sequence[float], nodes: Sequence[str]) -> dict[str, float]:
    """Per node, its best question cosine."""
    out: dict[str, float] = {}
    for c, n in zip(cosines, nodes, strict=True):
        out[n] = max(out.get(n, -1.0), float(c))
    return out


@dataclass
class ViewRows:
    """The rows of one view inside one scope, columns as lists plus a vector matrix (and, for
    evidence, the matrix of context vectors)."""

    cols: dict[str, list]
    vectors: np.ndarray
    context: np.ndarray | None = None

    @classmethod
    def from_arrow(cls, table: pa.Table) -> ViewRows:
        vector_columns = ("vector", CONTEXT_VECTOR["evidence"])
        cols = {
            c: table.column(c).to_pylist() for c in table.column_names if c not in vector_columns
        }
        context = None
        if CONTEXT_VECTOR["evidence"] in table.column_names:
            context = vector_matrix(table, CONTEXT_VECTOR["evidence"])
        return cls(cols, vector_matrix(table), context)

    def __len__(self) -> int:
        return len(self.vectors)

    @cached_property
    def groups(self) -> NodeGroups:
        """The rows grouped per node (computed once per cached scope)."""
        return NodeGroups.of(self.cols["node_id"])

    @cached_property
    def node_index(self) -> dict[str, int]:
        """Each node's position in :attr:`groups`."""
        return {n: j for j, n in enumerate(self.groups.nodes)}

    @cached_property
    def node_rank(self) -> np.ndarray:
        """Per row, the rank of its node id among the sorted node ids (ties broken by id)."""
        nodes = self.cols["node_id"]
        rank = {n: i for i, n in enumerate(sorted(set(nodes)))}
        return np.fromiter((rank[n] for n in nodes), dtype=np.int64, count=len(nodes))

    @cached_property
    def passage_index(self) -> PassageIndex:
        """BM25 over these passages and their contexts (evidence; made on first use)."""
        c = self.cols
        return PassageIndex(c["passage_id"], [(c["text"], 1.0), (c["context"], CONTEXT_BOOST)])

    @cached_property
    def row_of(self) -> dict[str, int]:
        """Row index per passage id (evidence)."""
        return {p: i for i, p in enumerate(self.cols["passage_id"])}

    def take(self, idx: Sequence[int]) -> ViewRows:
        idx = list(idx)
        context = self.context[idx] if self.context is not None else None
        return ViewRows(
            {c: [v[i] for i in idx] for c, v in self.cols.items()}, self.vectors[idx], context
        )

    def cosines(self, vecs: np.ndarray) -> np.ndarray:
        """Cosine of each of ``vecs`` with each row, ``(len(vecs), rows)`` (L2-normalized)."""
        return vecs @ self.vectors.T

    def facet_payload(self, idx: Sequence[int]) -> dict[str, list]:
        """What a facet item shows of rows ``idx``, column by column, with its ``text``."""
        out = {c: [self.cols[c][i] for i in idx] for c in FACET_PAYLOAD}
        out["text"] = [f"{k}: {v}" for k, v in zip(out["key"], out["value"], strict=True)]
        return out

    def asked(self, idx: np.ndarray, keys: set[str]) -> np.ndarray:
        """Per row of ``idx``: is its facet key one of ``keys``?"""
        key = self.cols["key"]
        return np.fromiter((key[i] in keys for i in idx.tolist()), dtype=bool, count=len(idx))

    def text_ranks(self, idx: np.ndarray) -> np.ndarray:
        """Per row of ``idx``, the rank of its facet's ``key: value`` among theirs."""
        c = self.cols
        texts = [f"{c['key'][i]}: {c['value'][i]}" for i in idx.tolist()]
        rank = {t: r for r, t in enumerate(sorted(set(texts)))}
        return np.fromiter((rank[t] for t in texts), dtype=np.int64, count=len(texts))

    @property
    def weight(self) -> int:
        """How many vectors these rows hold (a passage has two)."""
        return len(self) * (1 if self.context is None else 2)


@dataclass
class TextFacets:
    """The facets of a scope too large to hold with a vector per row, for exact scoring in
    numpy: every row's payload (Arrow, no vectors) and one vector per distinct ``key: value``
    text, which is what a facet embeds. Parents repeat their children's facets, and values
    recur: at 100k leaves an account of 30k projects had 380,315 facet rows and 5,704
    distinct texts. ``codes[i]`` is row ``i``'s text in ``vectors``."""

    payload: pa.Table
    codes: np.ndarray
    texts: list[str]  # the distinct texts, in the order of ``vectors``
    text_keys: list[str]  # the key of each
    text_values: list[str]  # and its value
    vectors: np.ndarray
    rank: Callable[[str], int]  # a level's depth (the tree schema's)

    def __len__(self) -> int:
        return self.payload.num_rows

    @cached_property
    def groups(self) -> NodeGroups:
        return NodeGroups.of(self.payload.column("node_id"))

    @cached_property
    def levels(self) -> list[str]:
        """Each node's level (in :attr:`groups` order)."""
        level = self.payload.column("level")
        return level.take(pa.array(self.groups.order[self.groups.ends - 1])).to_pylist()

    @cached_property
    def tiebreak(self) -> np.ndarray:
        """:func:`node_ranks` of the nodes, sorted in Arrow (the order of UTF-8 bytes is that
        of code points, as Python compares strings)."""
        depth = {level: self.rank(level) for level in set(self.levels)}
        nodes = pa.table(
            {"depth": [depth[level] for level in self.levels], "node": self.groups.nodes}
        )
        order = pc.sort_indices(nodes, [("depth", "ascending"), ("node", "ascending")])
        out = np.empty(len(nodes), dtype=np.int64)
        out[order.to_numpy()] = np.arange(len(nodes))
        return out

    def cosines(self, vecs: np.ndarray) -> np.ndarray:
        """Cosine of each of ``vecs`` with each row: with each distinct text, spread to its
        rows."""
        return (vecs @ self.vectors.T)[:, self.codes]

    def facet_payload(self, idx: Sequence[int]) -> dict[str, list]:
        # Texts, keys and values by code: only the rest is read from Arrow.
        codes = self.codes[np.asarray(idx, dtype=np.int64)].tolist()
        out = (
            self.payload.select(["level", "support", "source_ids"])
            .take(pa.array(idx, pa.int64()))
            .to_pydict()
        )
        out["text"] = [self.texts[c] for c in codes]
        out["key"] = [self.text_keys[c] for c in codes]
        out["value"] = [self.text_values[c] for c in codes]
        return out

    def asked(self, idx: np.ndarray, keys: set[str]) -> np.ndarray:
        return np.array([k in keys for k in self.text_keys], dtype=bool)[self.codes[idx]]

    def text_ranks(self, idx: np.ndarray) -> np.ndarray:
        return self._text_rank[self.codes[idx]]

    @cached_property
    def _text_rank(self) -> np.ndarray:
        """Per distinct text, its rank among them (Python's order of strings)."""
        out = np.empty(len(self.texts), dtype=np.int64)
        out[sorted(range(len(self.texts)), key=self.texts.__getitem__)] = np.arange(len(out))
        return out

    @property
    def weight(self) -> int:
        """What this holds, counted in vectors (a payload row is some 15 times smaller)."""
        per_vector = max(1, self.vectors.shape[1] * self.vectors.itemsize)
        return len(self.vectors) + self.payload.nbytes // per_vector


def node_ranks(
    nodes: Sequence[str], levels: Sequence[str], rank: Callable[[str], int]
) -> np.ndarray:
    """Per node, its place in the order of (level by ``rank``, node id)."""
    out = np.empty(len(nodes), dtype=np.int64)
    order = sorted(range(len(nodes)), key=lambda j: (rank(levels[j]), nodes[j]))
    out[order] = np.arange(len(nodes))
    return out


def _remember(seen: dict, key: tuple, size: int, value: object = None) -> None:
    """Add ``key`` (with ``value``) to an insertion-ordered dict of at most ``size`` keys
    (the oldest go)."""
    seen[key] = value
    while len(seen) > size:
        seen.pop(next(iter(seen)))


def _weight(rows: ViewRows | TextFacets | pa.Table | None) -> int:
    """How many vectors a cache entry holds, or its size counted in vectors."""
    if isinstance(rows, pa.Table):
        return rows.nbytes // PAYLOAD_BYTES_PER_VECTOR
    return 0 if rows is None else rows.weight


def rrf(
    rankings: Sequence[Sequence[str]], weights: Sequence[float] = (), k: int = RRF_K
) -> dict[str, float]:
    """Weighted reciprocal rank fusion: ``sum w / (k + rank)`` over the rankings an id is in."""
    scores: dict[str, float] = defaultdict(float)
    for n, ranking in enumerate(rankings):
        weight = weights[n] if n < len(weights) else 1.0
        for rank, key in enumerate(ranking, start=1):
            scores[key] += weight / (k + rank)
    return scores


#: Weight of each view in the fused ranking of sources. Evidence leads: on LoCoMo dev, equal
#: weights put QA pairs (the same turns, by question cosine alone) and facets into top slots
#: and cost 0.10 of evidence recall@10; these weights cost 0.01 (BENCHMARKS.md).
VIEW_WEIGHTS = {"evidence": 1.0, "qa": 0.15, "facets": 0.15}


def ranked_sources(context: RetrievedContext, schema: TreeSchema) -> list[str]:
    """The leaf documents behind a retrieval, in one ranking fused across views: each view
    ranks the documents its leaf items cite (a parent's items cite children, not documents)."""

    def docs(items: Sequence[ContextItem]) -> list[str]:
        out = [d for i in items if schema.is_leaf(i.level) for d in i.source_ids]
        return list(dict.fromkeys(out))

    facets = sorted((f for n in context.facets for f in n.facets), key=lambda f: -f.score)
    views = {"evidence": context.evidence, "qa": context.qa, "facets": facets}
    fused = rrf([docs(v) for v in views.values()], [VIEW_WEIGHTS[n] for n in views])
    return sorted(fused, key=lambda d: -fused[d])


class Retriever:
    """Runs the three retrievers against a :class:`VectorStore`, caching scopes' rows."""

    def __init__(
        self,
        vectors: VectorStore,
        schema: TreeSchema,
        scope_version: Callable[[str, str], int] | None = None,
    ):
        self.vectors = vectors
        self.schema = schema
        #: The version a scope's rows are kept under, given the view and the scope's node id
        #: (``Memory.scope_version``: rows of a scope no write touched outlive other scopes'
        #: writes); default the table's current version.
        self._scope_version = scope_version
        self._cache: OrderedDict[tuple, ViewRows | TextFacets | pa.Table | None] = OrderedDict()
        self._held = 0  # vectors the cache holds (see MAX_HELD_ROWS)
        self._asked: dict[tuple, None] = {}  # large scopes searched once (see _rows_of_nodes)
        self._counts: dict[tuple, int] = {}  # rows per (view, filter, version)
        self._pending: dict[tuple, Future] = {}  # cache entries being made (see _once)
        self._lock = threading.Lock()

    def version(self, view: str, scope_key: str) -> int:
        """The version the rows of the scope ``scope_key`` (a node id) are cached under."""
        if self._scope_version is None:
            return self.vectors.version(view)
        return self._scope_version(view, scope_key)

    def rows(self, view: str, where: str, scope_key: str) -> ViewRows | None:
        """All rows of ``view`` in scope (cached per table version), or None when too many."""
        return self._cached(view, where, scope_key, MAX_CACHED_ROWS)

    def held_rows(self, view: str, where: str, scope_key: str) -> ViewRows | None:
        """All rows of ``view`` in a scope too large for :meth:`rows` (searched in LanceDB),
        when it is small enough to keep (``MAX_HELD_SCOPE_ROWS``): the rows of the nodes a
        search picks are then read from them, not scanned for again."""
        return self._cached(view, where, scope_key, MAX_HELD_SCOPE_ROWS)

    def _cached(
        self, view: str, where: str, scope_key: str, limit: int, columns: Sequence[str] = ()
    ) -> ViewRows | None:
        """The scope's rows of ``view`` (``columns``, else all the retrievers read), or None
        when there are more than ``limit``."""
        version = self.version(view, scope_key)
        columns = list(columns or COLUMNS[view])

        def read() -> tuple[ViewRows | None, bool]:
            if self._count(view, where, version) > limit:
                return None, True
            names = [c for c in columns if c != ROW_ID]
            scan = self.vectors.scan(view, names, where, row_ids=ROW_ID in columns)
            return ViewRows.from_arrow(scan), True

        return self._once((view, scope_key, where, version, limit, tuple(columns)), read)

    def prepare(self, view: str, where: str, scope_key: str) -> None:
        """Read what questions in this scope read of ``view``: the rows held for it, or, for
        a scope too large to hold, what is kept of it (the vectors of its summaries, its
        :meth:`text_facets`). Run in the background as a question starts, so that a scope's
        first question reads its views side by side; errors are left to the question's own
        read."""
        if self.rows(view, where, scope_key) is not None:
            return
        if view == "facets":
            self.text_facets(where, scope_key)
        elif view in ONE_ROW_PER_NODE:
            self._cached(view, where, scope_key, MAX_HELD_SCOPE_ROWS, VECTORS_ONLY)

    def _once(self, key: tuple, make: Callable[[], tuple[object, bool]]):
        """The cache entry ``key``; when missing, ``make`` returns it and whether to keep it.
        One thread makes an entry while others asking for it wait, so the reads of a scope's
        first question and of :meth:`prepare` are never done twice."""
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            pending = self._pending.get(key)
            mine = pending is None
            if mine:
                pending = self._pending[key] = Future()
        if not mine:
            return pending.result()
        try:
            value, keep = make()
            if keep:
                self._keep(key, value)
            pending.set_result(value)
            return value
        except BaseException as exc:
            pending.set_exception(exc)
            raise
        finally:
            with self._lock:
                self._pending.pop(key, None)

    def _count(self, view: str, where: str, version: int) -> int:
        """Rows of ``view`` in scope (remembered per table version)."""
        key = (view, where, version)
        with self._lock:
            if key in self._counts:
                return self._counts[key]
        count = self.vectors.table(view).count_rows(where)
        with self._lock:
            _remember(self._counts, key, CACHED_SCOPES * 3, count)
        return count

    def _keep(self, key: tuple, rows: ViewRows | TextFacets | None) -> None:
        """Cache ``rows``, forgetting the least recently asked entries past the bounds."""
        with self._lock:
            self._held -= _weight(self._cache.pop(key, None))
            self._cache[key] = rows
            self._held += _weight(rows)
            while len(self._cache) > 1 and (
                len(self._cache) > CACHED_SCOPES * 3 or self._held > MAX_HELD_ROWS
            ):
                self._held -= _weight(self._cache.popitem(last=False)[1])

    def _drop(self, key: tuple) -> None:
        """Forget the cache entry ``key`` (if any)."""
        with self._lock:
            self._held -= _weight(self._cache.pop(key, None))

    def text_facets(self, where: str, scope_key: str) -> TextFacets | None:
        """The facets of a scope too large for :meth:`rows` as :class:`TextFacets` (cached
        per table version), or None past ``MAX_TEXT_FACET_ROWS`` rows or ``MAX_FACET_TEXTS``
        distinct texts.

        Each distinct text's vector is read from its first row, by the row ids of the scan;
        should the table change in between (row ids hold for one version), what is read is
        not what was scanned, nothing is kept and None is returned."""
        version = self.version("facets", scope_key)
        key = ("facets", scope_key, where, version, TextFacets)
        return self._once(key, lambda: self._read_text_facets(where, scope_key, version))

    def facet_rows(self, where: str, scope_key: str, version: int | None = None) -> pa.Table | None:
        """Every facet row of a scope too large for :meth:`rows`, without vectors but with
        row ids (what :meth:`text_facets` is made from, read first: a question's vocabulary
        is read from them while the rest is made), or None past ``MAX_TEXT_FACET_ROWS``.
        Cached on its own, and counted against ``MAX_HELD_ROWS`` both here and in the
        :class:`TextFacets` that shares its buffers."""
        if version is None:
            version = self.version("facets", scope_key)

        def read() -> tuple[pa.Table | None, bool]:
            if self._count("facets", where, version) > MAX_TEXT_FACET_ROWS:
                return None, True
            scan = self.vectors.scan("facets", TEXT_FACET_COLUMNS, where, row_ids=True)
            return scan.combine_chunks(), True

        return self._once(("facets", scope_key, where, version, pa.Table), read)

    def _read_text_facets(
        self, where: str, scope_key: str, version: int
    ) -> tuple[TextFacets | None, bool]:
        payload = self.facet_rows(where, scope_key, version)
        if payload is None:
            return None, True
        texts = pc.binary_join_element_wise(payload["key"], payload["value"], ": ")
        encoded = pc.dictionary_encode(texts).combine_chunks()
        distinct = encoded.dictionary.to_pylist()
        if len(distinct) > MAX_FACET_TEXTS:  # the candidate search: its rows not needed
            self._drop(("facets", scope_key, where, version, pa.Table))
            return None, True
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        first = np.unique(codes, return_index=True)[1]  # each text's first row
        row_ids = payload[ROW_ID].to_numpy(zero_copy_only=False)[first]
        read = self.vectors.take("facets", row_ids.tolist(), ["key", "value", "vector"])
        read_texts = pc.binary_join_element_wise(read["key"], read["value"], ": ").to_pylist()
        if sorted(read_texts) != sorted(distinct):
            # The table changed since the scan: LanceDB's search this time, and the rows
            # read again next time.
            self._drop(("facets", scope_key, where, version, pa.Table))
            return None, False
        position = {t: i for i, t in enumerate(distinct)}
        vectors = np.empty((len(distinct), read.schema.field("vector").type.list_size), "f4")
        vectors[[position[t] for t in read_texts]] = vector_matrix(read)
        facets = TextFacets(
            payload.drop_columns([ROW_ID]),  # the same buffers as the rows read
            codes,
            distinct,
            payload["key"].take(pa.array(first)).to_pylist(),
            payload["value"].take(pa.array(first)).to_pylist(),
            vectors,
            self.schema.rank,
        )
        facets.tiebreak  # noqa: B018 -- the nodes' order, made here rather than by a question
        return facets, True

    def _rows_of_nodes(self, view: str, where: str, scope_key: str, nodes: list[str]) -> ViewRows:
        """The rows of ``nodes`` in scope, in the order a scan returns them (the table's).

        A scope's rows are kept from its second question on: reading them all costs the
        first question of a scope asked only once more than scanning for those it needs."""
        asked = (view, scope_key, where, self.version(view, scope_key))
        held = None
        if asked in self._asked:
            held = self.held_rows(view, where, scope_key)
        else:
            _remember(self._asked, asked, CACHED_SCOPES * 3)
        if held is not None:
            index = held.node_index
            if all(n in index for n in nodes):
                groups = held.groups
                picked = [groups.rows(index[n]) for n in nodes]
                return held.take(np.sort(np.concatenate(picked)).tolist())
        return ViewRows.from_arrow(
            self.vectors.scan(view, COLUMNS[view], f"{where} AND {node_filter(nodes)}")
        )

    def _search_rows(self, view: str, vec: np.ndarray, where: str, limit: int) -> ViewRows:
        hits = self.vectors.search(view, vec, where, limit, COLUMNS[view])
        return ViewRows.from_arrow(hits.drop_columns(["_distance"]))

    # -- facets --------------------------------------------------------------------------
    def facets(
        self,
        micro_vecs: np.ndarray,
        where: str,
        scope_key: str,
        k_facet: int,
        top_k: int,
        valued: Sequence[bool] = (),
        match_cosine: float = 1.0,
        max_matches: int = MAX_MATCHED_NODES,
        keys: Sequence[str] = (),
    ) -> list[NodeContext]:
        """The top ``k_facet`` nodes by facet score, plus every node that matches each valued
        micro-query (best cosine >= ``match_cosine``), up to ``max_matches`` in all: a
        "which projects ..." question is not cut short by ``k_facet``.

        Each node's facet set lists every facet of the micro-queries' ``keys`` first, then its
        other facets by relevance, :data:`MAX_FACETS_PER_NODE` of those at most."""
        rows: ViewRows | TextFacets | None = self.rows("facets", where, scope_key)
        if rows is None:
            rows = self.text_facets(where, scope_key)
        if rows is None:
            # Candidate nodes only: every row of each is read and scored on its full vector
            # below, so the index's own re-ranking (``refine``) is not needed. In the 30k-
            # project account at 100k leaves it cost 16-30 ms a question; with it and without
            # it, 12 questions' top 25 nodes had the scores of exact scoring (measured at
            # commit 43fb501, before such scopes were held as TextFacets).
            hits = self.vectors.search_many(
                "facets", micro_vecs, where, CANDIDATE_LIMIT, ["node_id"], refine=None
            )
            candidates = list(
                dict.fromkeys(n for hit in hits for n in hit.column("node_id").to_pylist())
            )
            if not candidates:
                return []
            rows = self._rows_of_nodes("facets", where, scope_key, candidates)
        if not len(rows):
            return []
        cos = rows.cosines(micro_vecs)  # (|F_q|, rows)
        groups = rows.groups
        scores, best = node_scores(cos, groups, top_k)
        if isinstance(rows, TextFacets):
            level, tiebreak = rows.levels, rows.tiebreak
        else:
            level = [rows.cols["level"][i] for i in groups.order[groups.ends - 1]]
            tiebreak = node_ranks(groups.nodes, level, self.schema.rank)
        # Ranked by score, then level, then id: the tiebreak is fixed per scope, the sort is
        # numpy's (stable, so equal keys keep the tiebreak's order).
        ranked = np.lexsort((tiebreak, -scores))
        top = ranked[:k_facet].tolist()
        wanted = [i for i, v in enumerate(valued) if v]
        if wanted:
            # Compared as Python floats, as the scores are reported.
            matched = np.all(best[wanted].astype(np.float64) >= match_cosine, axis=0)
            seen = set(top)
            more = [j for j in ranked[matched[ranked]].tolist() if j not in seen]
            top += more[: max(0, max_matches - len(top))]
        # Each node's facets: those of the asked keys, then the others by relevance (ties by
        # text), picked on the rows' cosines before their payload is read.
        node_rows = [groups.rows(j) for j in top]
        if not node_rows:
            return []
        idx = np.concatenate(node_rows)
        owner = np.repeat(np.arange(len(top)), [len(r) for r in node_rows])
        relevance = cos[:, idx].max(axis=0)
        order = np.lexsort((rows.text_ranks(idx), -relevance, owner))  # node by node
        asked = rows.asked(idx, set(keys))[order]
        other = np.cumsum(~asked)  # a node's other facets counted from its first row on
        first = np.searchsorted(owner[order], np.arange(len(top)))
        before = np.concatenate([[0], other])[first][owner[order]]
        keep = asked | (other - before <= MAX_FACETS_PER_NODE)
        kept = order[keep]
        # Asked first, each part in its order; rows stay node by node.
        kept = kept[np.lexsort((np.arange(len(kept)), ~asked[keep], owner[kept]))]
        cols = rows.facet_payload(idx[kept].tolist())
        named = [groups.nodes[j] for j in top]
        items = [
            ContextItem(
                "facet",
                named[o],
                level_,
                score,
                text,
                key=key,
                value=value,
                support=support,
                source_ids=tuple(sources),
            )
            for score, o, level_, text, key, value, support, sources in zip(
                relevance[kept].tolist(),
                owner[kept].tolist(),
                cols["level"],
                cols["text"],
                cols["key"],
                cols["value"],
                cols["support"],
                cols["source_ids"],
                strict=True,
            )
        ]
        ends = np.cumsum(np.bincount(owner[kept], minlength=len(top))).tolist()
        out = []
        for o, (j, end) in enumerate(zip(top, ends, strict=True)):
            facets = tuple(items[ends[o - 1] if o else 0 : end])
            score, node_best = float(scores[j]), tuple(best[:, j].tolist())
            out.append(NodeContext(named[o], level[j], named[o], score, 1, facets, node_best))
        return out

    # -- QA and summaries ----------------------------------------------------------------
    def _top(
        self, view: str, qvec: np.ndarray, where: str, scope_key: str, k: int
    ) -> tuple[ViewRows, np.ndarray]:
        rows = self.rows(view, where, scope_key)
        if rows is None and view in ONE_ROW_PER_NODE:
            held = self._cached(view, where, scope_key, MAX_HELD_SCOPE_ROWS, VECTORS_ONLY)
            if held is not None:
                return self._top_of_held(view, held, qvec, where, k)
        if rows is None:
            rows = self._search_rows(view, qvec, where, k)
        if not len(rows):
            return rows, np.zeros(0, dtype=np.float32)
        cos = rows.vectors @ qvec
        # By cosine, then node id (numpy's stable sort: a node's rows keep their order).
        order = np.lexsort((rows.node_rank, -cos))[:k].tolist()
        return rows.take(order), cos[order]

    def _top_of_held(
        self, view: str, held: ViewRows, qvec: np.ndarray, where: str, k: int
    ) -> tuple[ViewRows, np.ndarray]:
        """The top ``k`` of a scope whose vectors are held (node ids, vectors, row ids): exact
        cosines in numpy, then the payload of those ``k`` rows read by row id (a few ms), or,
        should the table have changed since (row ids hold for one version: other nodes come
        back, or fewer), by node id in scope."""
        if not len(held):
            return held, np.zeros(0, dtype=np.float32)
        cos = held.vectors @ qvec
        order = np.lexsort((held.node_rank, -cos))[:k].tolist()
        nodes = [held.cols["node_id"][i] for i in order]
        row_ids = [held.cols[ROW_ID][i] for i in order]
        found = ViewRows.from_arrow(self.vectors.take(view, row_ids, COLUMNS[view]))
        if sorted(found.cols["node_id"]) != sorted(nodes):
            found = ViewRows.from_arrow(
                self.vectors.scan(view, COLUMNS[view], f"{where} AND {node_filter(nodes)}")
            )
        row_of = {n: i for i, n in enumerate(found.cols["node_id"])}
        kept = [i for i, n in zip(order, nodes, strict=True) if n in row_of]  # if just erased
        return found.take([row_of[held.cols["node_id"][i]] for i in kept]), cos[kept]

    def _items(
        self, view: str, kind: str, extra: str, qvec: np.ndarray, where: str, scope_key: str, k: int
    ) -> list[ContextItem]:
        """The top ``k`` rows of a view as context items (``extra``: the payload column)."""
        rows, cos = self._top(view, qvec, where, scope_key, k)
        c = rows.cols
        return [
            ContextItem(
                kind,
                c["node_id"][i],
                c["level"][i],
                float(cos[i]),
                c["text"][i],
                source_ids=tuple(c["source_ids"][i]),
                **{extra: c[extra][i]},
            )
            for i in range(len(rows))
        ]

    def qa(self, qvec: np.ndarray, where: str, scope_key: str, k: int) -> list[ContextItem]:
        return self._items("qa", "qa", "answer", qvec, where, scope_key, k)

    def summaries(self, qvec: np.ndarray, where: str, scope_key: str, k: int) -> list[ContextItem]:
        return self._items("summaries", "summary", "detailed", qvec, where, scope_key, k)

    # -- evidence ------------------------------------------------------------------------
    def text_hits(self, question: str, where: str, scope_key: str) -> list[str]:
        """Passage ids by BM25 over passage and context inside the scope's subtree; needs no
        vector, so it may run while the question is embedded. A scope whose rows are held is
        searched with its own statistics (:mod:`query.text_search`); a larger one through
        LanceDB's full-text index, with the table's."""
        rows = self.rows("evidence", where, scope_key)
        if rows is not None:
            return rows.passage_index.search(question, EVIDENCE_CANDIDATES)
        hits = self.vectors.text_search(
            "evidence", question, where, EVIDENCE_CANDIDATES, ["passage_id"]
        )
        return hits.column("passage_id").to_pylist()

    def evidence(
        self,
        qvec: np.ndarray,
        question: str,
        where: str,
        scope_key: str,
        k: int,
        by_words: list[str] | Future | None = None,
    ) -> list[ContextItem]:
        """Passages by hybrid search: dense (a passage's cosine plus half its context's) and
        BM25 (``text_hits``, searched here unless given, or waited for once the dense search
        is done when given as a future), fused by rank; both inside the scope's subtree."""
        rows = self.rows("evidence", where, scope_key)
        if rows is None:
            rows = self._search_rows("evidence", qvec, where, EVIDENCE_CANDIDATES)
        if not len(rows):
            return []
        dense = rows.vectors @ qvec
        if rows.context is not None:
            dense = dense + CONTEXT_BOOST * (rows.context @ qvec)
        ids = rows.cols["passage_id"]
        by_dense = [ids[i] for i in np.argsort(-dense, kind="stable")[:EVIDENCE_CANDIDATES]]
        if by_words is None:
            by_words = self.text_hits(question, where, scope_key)
        elif isinstance(by_words, Future):
            by_words = by_words.result()
        fused = rrf([by_dense, by_words])
        order = sorted(fused, key=lambda p: (-fused[p], p))
        row_of = rows.row_of
        ranked: list[str] = []
        start = 0
        while len(ranked) < k and start < len(order):
            # Passages found by words only (a scope too large to hold) are read when they
            # reach the top k, not all of them: a passage that cannot be read (erased since)
            # is passed over, as if never found.
            window = order[start : start + k - len(ranked)]
            start += len(window)
            unseen = [p for p in window if p not in row_of]
            if unseen:
                more = ViewRows.from_arrow(
                    self.vectors.scan(
                        "evidence", COLUMNS["evidence"], f"{where} AND {passage_filter(unseen)}"
                    )
                )
                rows = ViewRows(
                    {c: rows.cols[c] + more.cols[c] for c in rows.cols},
                    np.vstack([rows.vectors, more.vectors]),
                    np.vstack([rows.context, more.context]),
                )
                extra = more.vectors @ qvec + CONTEXT_BOOST * (more.context @ qvec)
                dense = np.concatenate([dense, extra])
                row_of = {p: i for i, p in enumerate(rows.cols["passage_id"])}
            ranked += [p for p in window if p in row_of]
        c = rows.cols
        return [
            ContextItem(
                "evidence",
                c["node_id"][i],
                c["level"][i],
                fused[p],
                c["text"][i],
                source_ids=tuple(c["source_ids"][i]),
                date=c["updated_at"][i],
                cosine=float(dense[i]),
            )
            for p in ranked
            for i in (row_of[p],)
        ]
