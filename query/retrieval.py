"""The three retrievers of the paper (section 3.5), over one identity-scoped subtree.

Every store read carries the scope's subtree filter inside the LanceDB query (a prefilter), so
nothing outside the scope is ever a candidate. A scope's rows (with vectors) are fetched once
per table version and reused: later questions in the same scope are pure numpy. Scopes larger
than ``MAX_CACHED_ROWS`` per view are searched in LanceDB every time instead.

Scores:

- facet: ``s_facet(q, v) = 1/(k |F_q|) * sum_f sum_{f' in TopK(f, F_v)} cos(f, f')``
- QA: ``s_qa(q, v) = max_{q' in Q_v} cos(q, q')``
- summary: ``s_summary(q, v) = cos(q, S_v)``
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from hltm_resources.engines.base import ContextItem, NodeContext, RetrievedContext
from hltm_resources.schema import TreeSchema
from hltm_resources.stores.vectors import (
    CONTEXT_BOOST,
    CONTEXT_VECTOR,
    VectorStore,
    node_filter,
    passage_filter,
)

MAX_CACHED_ROWS = 20_000
MAX_MATCHED_NODES = 500
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
        "vector",
        "context_vector",
    ],
}
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
    cos = micro_vecs @ facet_vecs.T  # (|F_q|, rows); vectors are L2-normalized
    rows_of: dict[str, list[int]] = defaultdict(list)
    for i, n in enumerate(facet_nodes):
        rows_of[n].append(i)
    scores: dict[str, float] = {}
    best: dict[str, list[float]] = {}
    for node, rows in rows_of.items():
        sub = cos[:, rows]
        top = -np.sort(-sub, axis=1)[:, :k]
        scores[node] = float(top.sum() / (k * len(micro_vecs)))
        best[node] = [float(x) for x in sub.max(axis=1)]
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
            context = _matrix(table, CONTEXT_VECTOR["evidence"])
        return cls(cols, _matrix(table, "vector"), context)

    def __len__(self) -> int:
        return len(self.vectors)

    def take(self, idx: Sequence[int]) -> ViewRows:
        idx = list(idx)
        context = self.context[idx] if self.context is not None else None
        return ViewRows(
            {c: [v[i] for i in idx] for c, v in self.cols.items()}, self.vectors[idx], context
        )


def _matrix(table: pa.Table, column: str) -> np.ndarray:
    if not table.num_rows:
        return np.zeros((0, 1), dtype=np.float32)
    flat = table.column(column).combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float32).reshape(table.num_rows, -1)


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

    def __init__(self, vectors: VectorStore, schema: TreeSchema):
        self.vectors = vectors
        self.schema = schema
        self._cache: OrderedDict[tuple, ViewRows | None] = OrderedDict()
        self._lock = threading.Lock()

    def rows(self, view: str, where: str, scope_key: str) -> ViewRows | None:
        """All rows of ``view`` in scope (cached per table version), or None when too many."""
        version = self.vectors.version(view)
        key = (view, scope_key, where, version)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        count = self.vectors.table(view).count_rows(where)
        rows = None
        if count <= MAX_CACHED_ROWS:
            rows = ViewRows.from_arrow(self.vectors.scan(view, COLUMNS[view], where))
        with self._lock:
            self._cache[key] = rows
            while len(self._cache) > CACHED_SCOPES * 3:
                self._cache.popitem(last=False)
        return rows

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
        rows = self.rows("facets", where, scope_key)
        if rows is None:
            candidates: list[str] = []
            for vec in micro_vecs:
                hit = self.vectors.search("facets", vec, where, CANDIDATE_LIMIT, ["node_id"])
                candidates.extend(
                    n for n in hit.column("node_id").to_pylist() if n not in candidates
                )
            if not candidates:
                return []
            rows = ViewRows.from_arrow(
                self.vectors.scan(
                    "facets", COLUMNS["facets"], f"{where} AND {node_filter(candidates)}"
                )
            )
        if not len(rows):
            return []
        nodes = rows.cols["node_id"]
        scores, best = facet_scores(micro_vecs, rows.vectors, nodes, top_k)
        relevance = (micro_vecs @ rows.vectors.T).max(axis=0)
        by_node: dict[str, list[ContextItem]] = defaultdict(list)
        level_of: dict[str, str] = {}
        for i, n in enumerate(nodes):
            level_of[n] = rows.cols["level"][i]
            by_node[n].append(
                ContextItem(
                    "facet",
                    n,
                    rows.cols["level"][i],
                    float(relevance[i]),
                    f"{rows.cols['key'][i]}: {rows.cols['value'][i]}",
                    key=rows.cols["key"][i],
                    value=rows.cols["value"][i],
                    support=rows.cols["support"][i],
                    source_ids=tuple(rows.cols["source_ids"][i]),
                )
            )
        rank = self.schema.rank
        ranked = sorted(scores, key=lambda n: (-scores[n], rank(level_of[n]), n))
        wanted = [i for i, v in enumerate(valued) if v]
        matches = [n for n in ranked if wanted and all(best[n][i] >= match_cosine for i in wanted)]
        top = ranked[:k_facet]
        ranked = top + [n for n in matches if n not in top][: max(0, max_matches - len(top))]
        out = []
        for n in ranked:
            items = sorted(by_node[n], key=lambda f: (-f.score, f.text))
            asked = [f for f in items if f.key in keys]
            items = asked + [f for f in items if f.key not in keys][:MAX_FACETS_PER_NODE]
            out.append(NodeContext(n, level_of[n], n, scores[n], 1, tuple(items), tuple(best[n])))
        return out

    # -- QA and summaries ----------------------------------------------------------------
    def _top(
        self, view: str, qvec: np.ndarray, where: str, scope_key: str, k: int
    ) -> tuple[ViewRows, np.ndarray]:
        rows = self.rows(view, where, scope_key)
        if rows is None:
            rows = self._search_rows(view, qvec, where, k)
        if not len(rows):
            return rows, np.zeros(0, dtype=np.float32)
        cos = rows.vectors @ qvec
        order = sorted(range(len(rows)), key=lambda i: (-cos[i], rows.cols["node_id"][i]))[:k]
        return rows.take(order), cos[order]

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
    def text_hits(self, question: str, where: str) -> list[str]:
        """Passage ids by BM25 (LanceDB's full-text index over passage and context) inside the
        scope's subtree; needs no vector, so it may run while the question is embedded."""
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
        by_words: list[str] | None = None,
    ) -> list[ContextItem]:
        """Passages by hybrid search: dense (a passage's cosine plus half its context's) and
        BM25 (``text_hits``, searched here unless given), fused by rank; both inside the
        scope's subtree."""
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
            by_words = self.text_hits(question, where)
        row_of = {p: i for i, p in enumerate(ids)}
        unseen = [p for p in by_words if p not in row_of]  # a scope too large to cache
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
            ids = rows.cols["passage_id"]
            row_of = {p: i for i, p in enumerate(ids)}
        fused = rrf([by_dense, by_words])
        ranked = sorted((p for p in fused if p in row_of), key=lambda p: (-fused[p], p))[:k]
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
