"""Does adaptation help? A before/after on the hiring benchmark without leakage.

The scopes are split in two halves. Only the training half's questions are asked (and so
logged); hints are mined from that log, approved, and the memory rebuilt. Both memories (with
and without hints) then answer the *other* half's questions: no test question ever reaches the
query log, only the patterns they share with the training questions do.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path

from hltm_resources.config import Settings
from hltm_resources.indexing import adaptation
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.stores import database
from query.evaluation import metrics
from query.evaluation.runners.hiring import HiringHarness, load_queries
from query.memory import Memory

SYSTEMS = ("hltm", "hltm_qa_only")


def split_by_scope(queries: list[dict], seed: int) -> tuple[list[dict], list[dict]]:
    scopes = sorted({q["scope"] for q in queries})
    random.Random(seed).shuffle(scopes)
    train = set(scopes[: len(scopes) // 2])
    return (
        [q for q in queries if q["scope"] in train],
        [q for q in queries if q["scope"] not in train],
    )


def qa_view_recall(memory: Memory, queries: list[dict], k_qa: int = 8) -> dict[str, list[float]]:
    """Per template, the share of gold projects among the QA view's top-k nodes."""
    out: dict[str, list[float]] = defaultdict(list)
    for q in queries:
        if q["type"] != "retrieval" or not q["gold_references"]:
            continue
        ctx = memory.retrieve(q["question"], scope=q["scope"], views=("qa",), k_qa=k_qa).context
        nodes = [i.node_id for i in ctx.qa]
        out[q["template"]].append(metrics.recall_at_k(nodes, q["gold_references"], k_qa))
    return out


def eval_adaptation(
    settings: Settings, seed: int = 11, params: adaptation.MiningParams | None = None
) -> dict:
    """Scores with and without adaptation on the held-out half, and what was mined."""
    params = params or adaptation.MiningParams(min_queries=3, min_scopes=2)
    queries = load_queries(settings.home / "queries.jsonl")
    train, test = split_by_scope(queries, seed)
    with tempfile.TemporaryDirectory(prefix="hltm-adapt-eval-") as tmp:
        base = settings.with_home(Path(tmp) / "without")
        adapted = settings.with_home(Path(tmp) / "with")
        for target in (base, adapted):
            shutil.copytree(settings.home, target.home, ignore=shutil.ignore_patterns("eval"))
            with database.connect(target.duckdb_path) as con:
                con.execute("DELETE FROM query_log")
                con.execute("DELETE FROM adapt_hints")
        logger = Memory(adapted, log_batch=500)
        for q in train:
            logger.ask(q["question"], scope=q["scope"], query_id=q["query_id"])
        logger.flush()
        proposal, _ = adaptation.propose(adapted, params)
        adaptation.approve(adapted, proposal.version)
        plan = Indexer(adapted).build_all()
        with database.connect(adapted.duckdb_path, read_only=True) as con:
            logged_test = con.execute(
                "SELECT count(*) FROM query_log WHERE query_id IN (SELECT unnest(?))",
                [[q["query_id"] for q in test]],
            ).fetchone()[0]
        results = {}
        recalls = {}
        for name, home in (("without_adaptation", base), ("with_adaptation", adapted)):
            memory = Memory(home, log_queries=False)
            harness = HiringHarness(memory, systems=SYSTEMS)
            scores = harness.score(test, harness.run(test))
            results[name] = scores
            recalls[name] = qa_view_recall(memory, test)
    recurring = {p["pattern"] for p in proposal.patterns}
    by_template = {}
    for template in sorted(recalls["with_adaptation"]):
        norm = template.lower()
        before = metrics.mean_sem(recalls["without_adaptation"][template])[0]
        after = metrics.mean_sem(recalls["with_adaptation"][template])[0]
        by_template[template] = {
            "recurs_in_training": norm in recurring,
            "qa_view_recall_without": round(before, 4),
            "qa_view_recall_with": round(after, 4),
        }
    return {
        "train_queries": len(train),
        "test_queries": len(test),
        "test_questions_in_query_log": logged_test,
        "hints": {
            "version": proposal.version,
            "patterns": proposal.patterns,
            "facets": proposal.facets,
        },
        "rebuilt": plan.counts(),
        "scores": results,
        "qa_view_recall_by_template": by_template,
    }
