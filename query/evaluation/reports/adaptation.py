"""The adaptation benchmark's report: before and after, on held-out scopes."""

from __future__ import annotations


def markdown(result: dict) -> str:
    lines = [
        "| memory | system | retrieval F1 | precision | recall | correctness | token-F1 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, scores in result["scores"].items():
        for system, row in scores.items():
            lines.append(
                f"| {name.replace('_', ' ')} | {system} | "
                f"{row['retrieval_f1']:.3f} ± {row['retrieval_f1_sem']:.3f} | "
                f"{row['retrieval_precision']:.3f} | {row['retrieval_recall']:.3f} | "
                f"{row['summary_correctness']:.3f} | {row['summary_token_f1']:.3f} |"
            )
    lines += [
        "",
        "| template (held-out questions) | recurs in training | QA-view recall@8 without | with |",
        "| --- | --- | --- | --- |",
    ]
    for template, row in result["qa_view_recall_by_template"].items():
        lines.append(
            f"| {template} | {'yes' if row['recurs_in_training'] else 'no'} | "
            f"{row['qa_view_recall_without']:.3f} | {row['qa_view_recall_with']:.3f} |"
        )
    lines.append(
        f"\nTrain {result['train_queries']} / test {result['test_queries']} queries "
        f"(split by scope); test questions in the query log: "
        f"{result['test_questions_in_query_log']}; hints v{result['hints']['version']}:"
        f" {len(result['hints']['patterns'])} patterns, "
        f"{len(result['hints']['facets'])} facet names."
    )
    return "\n".join(lines)
