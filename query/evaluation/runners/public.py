"""Public long-term-memory benchmarks (LoCoMo, LongMemEval_S): run HLTM and flat RAG, score.

The dataset's tree (:mod:`query.evaluation.data.public`) is built once into a sub-home with the
plain indexer. Two systems answer every question at its conversation's scope, in the same run:

- ``hltm``: :meth:`Memory.retrieve` (through :meth:`Memory.ask` on LoCoMo, which also
  answers), its sources in the one ranking fused across views
  (:func:`query.retrieval.ranked_sources`: evidence passages by hybrid search lead, QA pairs
  and facets of leaves follow at lower weight).
- ``flat_rag``: fixed-size chunks of the turns, same embedder, searched inside the same
  subtree (:class:`query.evaluation.runners.baselines.ChunkIndex`); ranked doc ids in chunk
  order.

Metrics (ratios are fractions in [0, 1]):

- LoCoMo: evidence recall@k over dialog ids (categories 1-4; 5 is adversarial and not scored),
  per category and overall; ``context_tokens@k`` = tokens of the distinct turns among the first
  k ranked turns; answer token-F1 (categories 1-4).
- LongMemEval_S: session recall@k of ``answer_session_ids`` (sessions ranked by the first
  appearance of any of their turns), per ``question_type`` and overall; abstention questions
  (``_abs``) are not scored. ``turn_recall@k`` of the ``has_answer`` turns;
  ``context_tokens@k`` = tokens of the first k ranked *turns* (not sessions, whose turns would
  be most of the haystack).
- Latency p50 / p95 per system.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hltm_resources.config import Settings
from hltm_resources.engines.base import RetrievedContext
from hltm_resources.indexing.loading import load_and_build
from hltm_resources.tokens import count_tokens
from query.evaluation import metrics
from query.evaluation.data.public import (
    BENCHMARKS,
    PublicData,
    load_public,
    write_public_snapshot,
)
from query.evaluation.runners.baselines import ChunkIndex, read_extractively
from query.retrieval import ranked_sources

if TYPE_CHECKING:
    from tqdm import tqdm

SYSTEMS = ("hltm", "flat_rag")
KS = (5, 10, 25)
#: Bump when the snapshot layout changes, so a sub-home built by an older loader is rebuilt.
LOADER_VERSION = "1"
#: Chunks the flat-RAG reader answers from (as in the hiring benchmark).
FLAT_RAG_READ_K = 10
#: Chunks fetched to rank turns (LoCoMo turns are one chunk each) or sessions (LongMemEval turns
#: are long; enough chunks to rank more than max(KS) sessions).
FLAT_RAG_SEARCH_K = {"locomo": 60, "longmemeval": 600}


@dataclass
class PublicRun:
    """A scored run: per system, its metrics (``scores``), and what a report needs."""

    data: PublicData
    scores: dict[str, dict]
    data_path: Path
    home: Path
    limit: int | None = None


# -- ranking ----------------------------------------------------------------------------------


def hltm_ranked_docs(context: RetrievedContext, data: PublicData) -> list[str]:
    """The turns behind a retrieval, in HLTM's one ranking fused across views."""
    return [d for d in ranked_sources(context, data.schema) if d in data.doc_session]


def chunk_ranked_docs(chunks: Iterable) -> list[str]:
    """Doc ids in the order their first chunk ranks (chunk ids are ``doc_id#i``)."""
    return list(dict.fromkeys(c.chunk_id.rsplit("#", 1)[0] for c in chunks))


def ranked_sessions(docs: Sequence[str], data: PublicData) -> list[str]:
    """Original session ids by the first appearance of any of their turns."""
    return list(dict.fromkeys(data.original_session[data.doc_session[d]] for d in docs))


# -- running ----------------------------------------------------------------------------------


def _marker(data_path: Path, limit: int | None) -> str:
    path = Path(data_path).resolve()
    key = f"{LOADER_VERSION}|{path}|{path.stat().st_size}|{limit or 'all'}"
    return hashlib.sha256(key.encode()).hexdigest()


def prepare(
    settings: Settings,
    benchmark: str,
    data_path: Path,
    limit: int | None = None,
    bar: tqdm | None = None,
) -> tuple[Settings, PublicData, bool]:
    """Load the dataset, build its memory in a sub-home unless already built; (settings,
    data, built now)."""

    data = load_public(benchmark, data_path, limit)
    if not data.questions:
        raise ValueError(f"{data_path} holds no {benchmark} questions to evaluate")
    sub = settings.with_home(settings.home / "eval" / f"{benchmark}-{limit or 'all'}")
    marker = sub.home / "public-data.txt"
    digest = _marker(data_path, limit)
    if marker.is_file() and marker.read_text() == digest:
        return sub, data, False
    if bar is not None:
        bar.set_description(f"{benchmark}: building memory of {len(data.sessions)} sessions")
    sub.home.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)  # a half-built home must not pass for a built one
    load_and_build(sub, write_public_snapshot(data, sub.home / "snapshot"))
    marker.write_text(digest)
    return sub, data, True


@dataclass
class Outcome:
    """One system on one question: ranked turns, answer, latency."""

    ranked: list[str]
    answer: str | None
    latency_ms: float


def _tokens_at(ranked: Sequence[str], k: int, tokens: dict[str, int], data: PublicData) -> int:
    total = 0
    for d in ranked[:k]:
        if d not in tokens:
            tokens[d] = count_tokens(data.doc_text[d])
        total += tokens[d]
    return total


def _run_questions(
    settings: Settings, data: PublicData, rebuilt: bool, bar: tqdm | None = None
) -> dict[str, dict[str, Outcome]]:
    from query.memory import Memory

    memory = Memory(settings, log_queries=False)
    if bar is not None:
        bar.set_description(f"{data.benchmark}: embedding chunks for flat_rag")
    chunks = ChunkIndex(settings, memory.embedder, rebuild=rebuilt)
    search_k = FLAT_RAG_SEARCH_K[data.benchmark]
    answer = data.benchmark == "locomo"  # LongMemEval is scored on retrieval only
    paths: dict[str, str] = {}
    scored = [q for q in data.questions if q.skip is None]
    out: dict[str, dict[str, Outcome]] = {s: {} for s in SYSTEMS}
    memory.embedder.embed(["warm-up"])  # the model loads here, not inside a timed question
    if bar is not None:
        bar.set_description(f"{data.benchmark}: questions")
    for q in scored:
        t0 = time.perf_counter()
        if answer:
            r = memory.ask(q.question, scope=q.scope)
            assert r.retrieved is not None
            context, said = r.retrieved, r.answer
        else:
            context = memory.retrieve(q.question, scope=q.scope, asked_at=q.asked_at).context
            said = None
        ms = (time.perf_counter() - t0) * 1000
        out["hltm"][q.qid] = Outcome(hltm_ranked_docs(context, data), said, ms)
        t0 = time.perf_counter()
        if q.scope not in paths:
            paths[q.scope] = memory.resolve(q.scope).path
        hits = chunks.search(q.question, search_k, paths[q.scope])
        said = read_extractively(q.question, hits[:FLAT_RAG_READ_K]).answer if answer else None
        ms = (time.perf_counter() - t0) * 1000
        out["flat_rag"][q.qid] = Outcome(chunk_ranked_docs(hits), said, ms)
        if bar is not None:
            bar.update(1)
    return out


def _mean(values: Sequence[float]) -> tuple[float, float]:
    mean, sem = metrics.mean_sem(values)
    return round(mean, 4), round(sem, 4)


def score(data: PublicData, outcomes: dict[str, dict[str, Outcome]]) -> dict[str, dict]:
    """Per system, the metrics of the module docstring."""
    scored = [q for q in data.questions if q.skip is None]
    skipped: dict[str, int] = defaultdict(int)
    for q in data.questions:
        if q.skip:
            skipped[q.skip] += 1
    tokens: dict[str, int] = {}
    result: dict[str, dict] = {}
    for system, per_q in outcomes.items():
        recall: dict[str, list[float]] = defaultdict(list)
        ctx: dict[int, list[int]] = defaultdict(list)
        f1s, lat, length = [], [], []
        for q in scored:
            o = per_q[q.qid]
            lat.append(o.latency_ms)
            length.append(len(o.ranked))
            if data.benchmark == "locomo":
                units = list(dict.fromkeys(data.doc_unit[d] for d in o.ranked))
                turn_gold: tuple[str, ...] = ()
            else:
                units = ranked_sessions(o.ranked, data)
                turn_gold = q.gold_turns
            for k in KS:
                r = metrics.recall_at_k(units, q.gold, k)
                recall[f"recall@{k}"].append(r)
                recall[f"recall@{k}_{group_key(data, q.group)}"].append(r)
                if turn_gold:
                    turns = metrics.recall_at_k(o.ranked, turn_gold, k)
                    recall[f"turn_recall@{k}"].append(turns)
                    recall[f"turn_recall@{k}_{group_key(data, q.group)}"].append(turns)
                ctx[k].append(_tokens_at(o.ranked, k, tokens, data))
            if o.answer is not None and q.answer is not None:
                f1s.append(metrics.token_f1(o.answer, q.answer))
        row: dict[str, float | int] = {"questions": len(scored)}
        for name in sorted(recall, key=_metric_order):
            row[name], sem = _mean(recall[name])
            if "_" not in name.split("@")[1]:
                row[f"{name}_sem"] = sem
        for k in KS:
            row[f"context_tokens@{k}"] = round(sum(ctx[k]) / max(1, len(ctx[k])), 1)
        if f1s:
            row["token_f1"], row["token_f1_sem"] = _mean(f1s)
        row["ranked_turns_mean"] = round(sum(length) / max(1, len(length)), 1)
        row["latency_p50_ms"] = round(metrics.percentile(lat, 50), 2)
        row["latency_p95_ms"] = round(metrics.percentile(lat, 95), 2)
        if data.benchmark == "locomo":
            row["malformed_evidence"] = data.malformed_evidence
            row["adversarial_skipped"] = skipped["adversarial"]
        else:
            row["abstention_skipped"] = skipped["abstention"]
        row["no_evidence_skipped"] = skipped["no_evidence"]
        result[system] = row
    return result


def group_key(data: PublicData, group: str) -> str:
    return f"cat{group}" if data.benchmark == "locomo" else group


def _metric_order(name: str) -> tuple:
    base, _, group = name.partition("_") if name.startswith("recall") else (name, "", "")
    kind = 1 if name.startswith("turn_") else 0
    k = int(re.search(r"@(\d+)", name).group(1))  # type: ignore[union-attr]
    return (kind, group != "", group, k, base)


def run_public(
    settings: Settings,
    benchmark: str,
    data_path: Path,
    limit: int | None = None,
    show_progress: bool = False,
) -> PublicRun:
    """Build the benchmark's memory (once) and score hltm and flat_rag on its questions."""
    if benchmark not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {benchmark!r}: use one of {', '.join(BENCHMARKS)}")
    data_path = Path(data_path)
    bar: tqdm | None = None
    if show_progress:
        from tqdm import tqdm

        # One bar from the start: building and embedding take most of a first run.
        bar = tqdm(total=None, desc=f"{benchmark}: loading {data_path.name}", unit="q")
    try:
        sub, data, rebuilt = prepare(settings, benchmark, data_path, limit, bar)
        if bar is not None:
            bar.reset(total=sum(1 for q in data.questions if q.skip is None))
        outcomes = _run_questions(sub, data, rebuilt, bar)
    finally:
        if bar is not None:
            bar.close()
    return PublicRun(data, score(data, outcomes), data_path, sub.home, limit)
