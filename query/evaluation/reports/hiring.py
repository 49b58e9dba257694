"""The hiring benchmark's report: one row per system, mean ± SEM where the paper has it."""

from __future__ import annotations

from hltm_resources.tokens import encoding_name


def correctness_label(judged: bool) -> str:
    return "LLM judge" if judged else "entity-recall proxy"


def markdown_table(scores: dict[str, dict], judged: bool = False) -> str:
    """The results table (mean ± SEM where the paper reports it)."""
    cols = [
        ("summary_correctness", f"correctness ({correctness_label(judged)})"),
        ("summary_token_f1", "token-F1"),
        ("summary_bleu1", "BLEU-1"),
        ("retrieval_precision", "precision"),
        ("retrieval_recall", "recall"),
        ("retrieval_f1", "retrieval F1"),
    ]
    head = (
        "| system | "
        + " | ".join(c[1] for c in cols)
        + " | leak (query) | leak (entity) | p50 ms | p95 ms | context tokens | LLM calls |"
    )
    lines = [head, "|" + " --- |" * (len(cols) + 7)]
    for system, row in scores.items():
        cells = [f"{row[c]:.3f} ± {row[c + '_sem']:.3f}" for c, _ in cols]
        cells += [
            f"{row['leak_query_ratio']:.1%}",
            f"{row['leak_entity_ratio']:.1%}",
            f"{row['latency_p50_ms']:.1f}",
            f"{row['latency_p95_ms']:.1f}",
            f"{row['context_tokens_mean']:.0f}",
            f"{row['llm_calls_per_query']:.2f}",
        ]
        lines.append(f"| {system} | " + " | ".join(cells) + " |")
    lines.append(f"\nTokens counted with {encoding_name()}.")
    return "\n".join(lines)
