"""The hiring benchmark: HLTM, its ablations and the baselines on generated queries with gold.

Queries (JSONL): ``query_id``, ``scope``, ``question``, ``type`` (summary | retrieval),
``gold_answer``, ``gold_references`` (node ids), optional ``gold_entities`` and ``probe``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hltm_resources.config import Settings
from hltm_resources.engines.base import Answer
from hltm_resources.engines.llm.prompts import render_context
from hltm_resources.indexing.loading import load_and_build
from hltm_resources.stores import database
from hltm_resources.stores.sot import read_topology
from hltm_resources.tokens import count_tokens
from query.evaluation import metrics
from query.evaluation.data.sample_world import (
    generate_world,
    make_queries,
    write_queries,
    write_snapshot,
)
from query.evaluation.runners.baselines import (
    Chunk,
    ChunkIndex,
    budgeted,
    read_extractively,
    render_chunks,
)
from query.memory import Memory

HLTM_SYSTEMS = {
    "hltm": {},
    "hltm_no_aggregation": {"levels": "leaves"},
    "hltm_facet_only": {"views": ("facets",)},
    "hltm_qa_only": {"views": ("qa",)},
    "hltm_summary_only": {"views": ("summaries",)},
    "hltm_facet_top2": {"facet_top_k": 2},
}
BASELINES = ("flat_rag", "flat_rag_unscoped", "full_context", "schema_filter")
DEFAULT_SYSTEMS = (
    "hltm",
    "flat_rag",
    "flat_rag_unscoped",
    "full_context",
    "schema_filter",
    "hltm_no_aggregation",
    "hltm_facet_only",
    "hltm_qa_only",
    "hltm_summary_only",
)
FLAT_RAG_K = 10


@dataclass
class Outcome:
    """One system's answer to one query, with what it cost."""

    answer: str
    references: list[str]
    latency_ms: float
    context_tokens: int
    llm_calls: int = 0
    tokens: int = 0


@dataclass
class SystemResult:
    name: str
    per_query: dict[str, Outcome] = field(default_factory=dict)


def load_queries(path: Path) -> list[dict]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def subtree_nodes(settings: Settings) -> dict[str, set[str]]:
    """Per scope node id, every node id in its subtree (for leakage)."""
    with database.connect(settings.duckdb_path, read_only=True) as con:
        topology = read_topology(con, settings.schema)
    return {
        node.node_id: {node.node_id, *(d.node_id for d in topology.descendants(node))}
        for nodes in topology.levels.values()
        for node in nodes.values()
    }


class HiringHarness:
    """Runs every system over the same queries and home."""

    def __init__(
        self,
        memory: Memory,
        systems: Sequence[str] = DEFAULT_SYSTEMS,
        judge: Callable[[str, str, str], float] | None = None,
    ):
        self.memory = memory
        self.settings = memory.settings
        self.systems = list(systems)
        self.judge = judge
        self.scopes = subtree_nodes(self.settings)
        self._chunks: ChunkIndex | None = None
        self._schema: dict[str, list] | None = None

    # -- systems ---------------------------------------------------------------------------
    @property
    def chunks(self) -> ChunkIndex:
        if self._chunks is None:
            self._chunks = ChunkIndex(self.settings, self.memory.embedder)
        return self._chunks

    def _path(self, scope: str) -> str:
        return self.memory.resolve(scope).path

    def _read(self, question: str, chunks: list[Chunk]) -> tuple[Answer, int, int]:
        """Answer from raw chunks with the configured engine; (answer, llm calls, tokens)."""
        context = render_chunks(chunks)
        answer_raw = getattr(self.memory.agents, "answer_raw", None)
        if answer_raw is not None:
            before = self.memory.agents.usage.snapshot()
            answer = answer_raw(question, context, [c.node_id for c in chunks])
            after = self.memory.agents.usage.snapshot()
            tokens = (
                after["prompt_tokens"]
                - before["prompt_tokens"]
                + after["completion_tokens"]
                - before["completion_tokens"]
            )
            return answer, after["llm_calls"] - before["llm_calls"], tokens
        return read_extractively(question, chunks), 0, 0

    def _options(self, system: str) -> dict:
        """Retrieval options of an HLTM system (``levels: "leaves"`` = the leaf level only)."""
        options = dict(HLTM_SYSTEMS[system])
        if options.get("levels") == "leaves":
            options["levels"] = (self.settings.schema.leaf.name,)
        return options

    def run_query(self, system: str, q: dict) -> Outcome:
        t0 = time.perf_counter()
        if system in HLTM_SYSTEMS:
            r = self.memory.ask(
                q["question"], scope=q["scope"], query_id=q["query_id"], **self._options(system)
            )
            tokens = (
                count_tokens(render_context(r.retrieved, self.settings.schema))
                if r.retrieved
                else 0
            )
            return Outcome(
                r.answer,
                r.references,
                r.timings["total_ms"],
                tokens,
                r.llm_calls,
                r.tokens.get("prompt", 0) + r.tokens.get("completion", 0),
            )
        if system in ("flat_rag", "flat_rag_unscoped"):
            path = None if system == "flat_rag_unscoped" else self._path(q["scope"])
            context = self.chunks.search(q["question"], FLAT_RAG_K, path)
        elif system == "full_context":
            context = budgeted(self.chunks.in_scope(self._path(q["scope"])))
        elif system == "schema_filter":
            context = self._schema_filter(q)
        else:
            raise ValueError(f"unknown system {system!r}")
        answer, calls, tokens = self._read(q["question"], context)
        refs = list(dict.fromkeys(answer.references))
        return Outcome(
            answer.answer,
            refs,
            (time.perf_counter() - t0) * 1000,
            count_tokens(render_chunks(context)),
            calls,
            tokens,
        )

    def _schema_filter(self, q: dict) -> list[Chunk]:
        """Documents (whole) whose ingest-time facet rows satisfy every parsed filter."""
        from hltm_resources.engines.base import ScopeVocabulary
        from hltm_resources.engines.extractive.documents import document_facets
        from hltm_resources.engines.extractive.questions import parse_question
        from hltm_resources.text import fold

        if self._schema is None:  # the table, built once at "ingest"
            docs: dict[str, Chunk] = {}
            for c in self.chunks.chunks:
                doc_id = c.chunk_id.split("#")[0]
                prev = docs.get(doc_id)
                docs[doc_id] = Chunk(
                    doc_id,
                    c.node_id,
                    c.path,
                    c.kind,
                    c.updated_at,
                    (prev.text + " " if prev else "") + c.text,
                )
            self._schema = {
                d: (
                    doc,
                    {(f.key, fold(f.value), f.value) for f in document_facets(doc.as_document())},
                )
                for d, doc in docs.items()
            }
        path = self._path(q["scope"])
        rows = [
            (doc, facets)
            for doc, facets in self._schema.values()
            if doc.path == path or doc.path.startswith(path + "/")
        ]
        vocab: dict[str, list[str]] = {}
        for _, facets in rows:
            for key, _, value in facets:
                vocab.setdefault(key, []).append(value)
        parsed = parse_question(
            q["question"], ScopeVocabulary({k: sorted(set(v)) for k, v in vocab.items()})
        )
        filters = [(m.key, fold(m.value)) for m in parsed.micro if m.value]
        return [
            doc for doc, facets in rows if all(f in {(k, v) for k, v, _ in facets} for f in filters)
        ]

    # -- scoring ---------------------------------------------------------------------------
    def run(
        self, queries: Sequence[dict], progress: Callable[[int], None] | None = None
    ) -> dict[str, SystemResult]:
        results = {s: SystemResult(s) for s in self.systems}
        for q in queries:
            for system in self.systems:
                results[system].per_query[q["query_id"]] = self.run_query(system, q)
            if progress:
                progress(1)
        self.memory.flush()
        return results

    def score(self, queries: Sequence[dict], results: dict[str, SystemResult]) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for system, result in results.items():
            f1s, bleus, correct, prec, rec, rf1 = [], [], [], [], [], []
            leak_q, leak_e, lat, ctx, calls, toks = [], [], [], [], [], []
            for q in queries:
                o = result.per_query[q["query_id"]]
                scope_nodes = self.scopes.get(q["scope"], {q["scope"]})
                leaked, share = metrics.leakage(o.references, scope_nodes)
                leak_q.append(1.0 if leaked else 0.0)
                leak_e.append(share)
                lat.append(o.latency_ms)
                ctx.append(o.context_tokens)
                calls.append(o.llm_calls)
                toks.append(o.tokens)
                if q["type"] == "summary":
                    f1s.append(metrics.token_f1(o.answer, q["gold_answer"]))
                    bleus.append(metrics.bleu1(o.answer, q["gold_answer"]))
                    if self.judge is not None:
                        correct.append(self.judge(q["question"], o.answer, q["gold_answer"]))
                    else:
                        correct.append(
                            metrics.entity_recall(o.answer, q.get("gold_entities") or [])
                        )
                else:
                    leaf = f"{self.settings.schema.leaf.name}:"
                    leaves = [r for r in o.references if r.startswith(leaf)]
                    p, r, f = metrics.prf(leaves, q["gold_references"])
                    prec.append(p)
                    rec.append(r)
                    rf1.append(f)
            row: dict[str, float] = {}
            for name, values in (
                ("summary_token_f1", f1s),
                ("summary_bleu1", bleus),
                ("summary_correctness", correct),
                ("retrieval_precision", prec),
                ("retrieval_recall", rec),
                ("retrieval_f1", rf1),
            ):
                mean, sem = metrics.mean_sem(values)
                row[name] = round(mean, 4)
                row[f"{name}_sem"] = round(sem, 4)
            row["leak_query_ratio"] = round(sum(leak_q) / len(leak_q), 4)
            row["leak_entity_ratio"] = round(sum(leak_e) / len(leak_e), 4)
            row["latency_p50_ms"] = round(metrics.percentile(lat, 50), 2)
            row["latency_p95_ms"] = round(metrics.percentile(lat, 95), 2)
            row["context_tokens_mean"] = round(sum(ctx) / len(ctx), 1)
            row["llm_calls_per_query"] = round(sum(calls) / len(calls), 3)
            row["llm_tokens_per_query"] = round(sum(toks) / len(toks), 1)
            row["queries"] = len(queries)
            out[system] = row
        return out


def eval_hiring(
    settings: Settings,
    seed: int = 11,
    systems=DEFAULT_SYSTEMS,
    limit: int | None = None,
    show_progress: bool = False,
    queries_path: Path | None = None,
    split: str = "heldout",
    variety: str = "adversarial",
) -> tuple[dict, dict]:
    """Generate a world (unless the home already holds it), build, evaluate.

    ``split`` ("dev" to tune, "heldout" to report) and ``variety`` ("adversarial" or "plain")
    choose how the world and its questions are phrased; the home's marker records them with
    the seed, so a change of any of the three regenerates the world.
    """
    home = settings.home
    marker = home / "eval-world.txt"
    stamp = f"seed={seed} split={split} variety={variety}"
    if not marker.exists() or marker.read_text() != stamp:
        world = generate_world(seed=seed, split=split, variety=variety)
        snapshot = write_snapshot(world, home / "snapshot")
        load_and_build(settings, snapshot)
        write_queries(make_queries(world, seed=seed), home / "queries.jsonl")
        marker.write_text(stamp)
    queries = load_queries(queries_path or home / "queries.jsonl")
    if limit:
        queries = queries[:limit]
    judge = None
    memory = Memory(settings, log_batch=200)
    if settings.engine != "extractive":
        judge = memory.agents.judge  # type: ignore[attr-defined]
    harness = HiringHarness(memory, systems=systems, judge=judge)
    bar = None
    if show_progress:
        from tqdm import tqdm

        bar = tqdm(total=len(queries), desc="queries", unit="q")
    results = harness.run(queries, progress=bar.update if bar else None)
    if bar:
        bar.close()
    return harness.score(queries, results), {
        "queries": len(queries),
        "seed": seed,
        "split": split,
        "variety": variety,
        "judged": judge is not None,
    }
