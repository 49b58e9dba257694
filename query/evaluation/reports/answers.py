"""Reports of the answers a person can check and of memory accuracy (markdown)."""

from __future__ import annotations

COLUMNS = (
    ("fact@project", "fact, project"),
    ("fact@seat", "fact, seat"),
    ("fact@account", "fact, account"),
    ("list", "list F1"),
    ("tag:near-miss", "near-miss"),
    ("tag:negation", "negation"),
    ("count", "count"),
    ("distribution", "distribution"),
    ("why", "why"),
    ("all", "all"),
)


def answers_table(result: dict) -> str:
    """One row per system: mean ± SEM (n) per family and scope level, and p50 latency."""
    head = "| system | " + " | ".join(label for _, label in COLUMNS) + " | p50 ms |"
    lines = [head, "|" + " --- |" * (len(COLUMNS) + 2)]
    for system, row in result["systems"].items():
        cells = []
        for key, _ in COLUMNS:
            s = row["scores"].get(key)
            cells.append(f"{s['mean']:.3f} ± {s['sem']:.3f} ({s['n']})" if s else "-")
        lines.append(f"| {system} | " + " | ".join(cells) + f" | {row['latency_p50_ms']:.1f} |")
    return "\n".join(lines)


def failures_text(result: dict, system: str = "hltm") -> str:
    """The questions ``system`` did not get fully right, with what it answered."""
    out = []
    for f in result["systems"][system]["failures"]:
        out.append(
            f"- {f['id']} [{f['scope']}] {f['question']} (score {f['score']:.2f})\n"
            f"  -> {f['answer']}\n  cites: {', '.join(f['references']) or '(none)'}"
        )
    return "\n".join(out) or "(none)"


def memory_table(result: dict) -> str:
    """Precision and recall of stored leaf facts, overall and per key."""
    lines = [
        f"Stored leaf facts of world seed {result['seed']} ({result['split']}, "
        f"{result['leaves']} leaves): precision {result['precision']:.4f} "
        f"({result['true_facts']} of {result['stored_facts']}), recall {result['recall']:.4f} "
        f"({result['recalled_facts']} of {result['truth_facts']}); negated values stored: "
        f"{result['negated_values_stored']}; facts of keys the truth does not know: "
        f"{result['unscored_facts']}.",
        "",
        "| key | stored | precision | recall |",
        "| --- | ---: | ---: | ---: |",
    ]
    for key, row in result["per_key"].items():
        lines.append(f"| {key} | {row['stored']} | {row['precision']:.4f} | {row['recall']:.4f} |")
    return "\n".join(lines)
