"""The public benchmarks' report: result tables with the definitions they need."""

from __future__ import annotations

from collections import Counter

from hltm_resources.tokens import encoding_name
from query.evaluation.data.public import LOCOMO_CATEGORIES
from query.evaluation.runners.public import KS, PublicRun, group_key

#: Published anchor (LoCoMo paper, RAG over dialog turns).
LOCOMO_ANCHOR = {5: 0.588, 10: 0.675, 25: 0.799}


def markdown(run: PublicRun) -> str:
    """Systems as rows: the headline table, recall@10 per group, and the definitions."""
    lines = [_title(run), "", *_results(run), *_by_group(run), "", *_notes(run)]
    return "\n".join(lines)


def _title(run: PublicRun) -> str:
    data, first = run.data, next(iter(run.scores.values()))
    sample = "conversations" if data.benchmark == "locomo" else "questions, round-robin by type"
    limited = f", limit {run.limit} {sample}" if run.limit else ""
    return (
        f"## {data.benchmark}: {first['questions']} scored questions from {run.data_path} "
        f"({len(data.conversations)} seats, {len(data.sessions)} sessions, "
        f"{len(data.turns)} turns{limited}; memory in {run.home})"
    )


def _cell(row: dict, column: str) -> str:
    value = row.get(column)
    if value is None:
        return "-"
    if column.startswith("context_tokens"):
        return f"{value:.0f}"
    if f"{column}_sem" in row:
        return f"{value:.3f} ± {row[f'{column}_sem']:.3f}"
    return f"{value:.3f}"


def _results(run: PublicRun) -> list[str]:
    first = next(iter(run.scores.values()))
    cols = [f"recall@{k}" for k in KS] + [f"context_tokens@{k}" for k in KS]
    if run.data.benchmark == "longmemeval":
        cols[len(KS) : len(KS)] = [f"turn_recall@{k}" for k in KS]
    cols += ["token_f1"] if "token_f1" in first else []
    head = ["system", *cols, "ranked turns", "p50 ms", "p95 ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for system, row in run.scores.items():
        cells = [_cell(row, c) for c in cols] + [
            f"{row['ranked_turns_mean']:.1f}",
            f"{row['latency_p50_ms']:.1f}",
            f"{row['latency_p95_ms']:.1f}",
        ]
        lines.append(f"| {system} | " + " | ".join(cells) + " |")
    return lines


def _by_group(run: PublicRun) -> list[str]:
    data = run.data
    counts = Counter(group_key(data, q.group) for q in data.questions if q.skip is None)
    groups = sorted(counts)
    if not groups:
        return []
    locomo = data.benchmark == "locomo"
    unit = "evidence (dialog-turn)" if locomo else "session"
    by = "category" if locomo else "question type"
    names = [
        f"{g} {LOCOMO_CATEGORIES[int(g[3:])]} (n={counts[g]})" if locomo else f"{g} (n={counts[g]})"
        for g in groups
    ]
    lines = []
    metrics = [(f"{unit.capitalize()} recall", "recall", k) for k in (5, 10)]
    if not locomo:
        metrics.append(("Turn recall", "turn_recall", 5))
    for title, metric, k in metrics:
        lines += ["", f"{title}@{k} by {by}:", ""]
        lines += ["| system | " + " | ".join(names) + " |", "|" + " --- |" * (len(groups) + 1)]
        for system, row in run.scores.items():
            cells = [f"{row.get(f'{metric}@{k}_{g}', float('nan')):.3f}" for g in groups]
            lines.append(f"| {system} | " + " | ".join(cells) + " |")
    return lines


def _notes(run: PublicRun) -> list[str]:
    locomo = run.data.benchmark == "locomo"
    first = next(iter(run.scores.values()))
    unit = "evidence (dialog-turn)" if locomo else "session"
    latency = "retrieval and answer" if locomo else "retrieval"
    lines = [
        f"Recall@k: share of gold {unit} ids among the first k distinct ranked ones "
        "(mean ± SEM over questions). context_tokens@k: tokens of the distinct turns among "
        f"the first k ranked turns ({encoding_name()}). hltm lists the turns behind its "
        "retrieval in one ranking fused across views (evidence passages by hybrid dense + "
        "BM25 search lead, QA pairs and facets of leaves follow); its list holds only what its "
        f"default retrieval returns (see ranked turns). Latency: {latency} per question."
    ]
    if locomo:
        anchor = ", ".join(f"recall@{k} {v:.1%}" for k, v in LOCOMO_ANCHOR.items())
        lines += [
            f"Categories 1-4 scored; {first['adversarial_skipped']} adversarial (5) and "
            f"{first['no_evidence_skipped']} without valid evidence not scored; "
            f"{first['malformed_evidence']} malformed or unknown evidence ids skipped. "
            "token_f1 is the offline extractive answer against the gold answer.",
            f"Published anchor (LoCoMo paper, RAG over dialog turns, not our number): {anchor}.",
        ]
    else:
        lines.append(
            f"{first['abstention_skipped']} abstention questions (_abs) not scored. "
            "turn_recall@k: gold = has_answer turns. Sessions are ranked by the first "
            "appearance of any of their turns."
        )
    return lines
