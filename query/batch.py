"""Batch answering: a JSONL file of questions in, a JSONL file of answers out."""

from __future__ import annotations

import json
from pathlib import Path

from hltm_resources.config import Settings
from hltm_resources.errors import ScopeError
from query.memory import Memory

REQUIRED = ("query_id", "scope", "question")


def read_queries(path: Path) -> tuple[list[tuple[int, dict]], list[str]]:
    """Valid query lines (with their line numbers) and one message per bad line."""
    good: list[tuple[int, dict]] = []
    problems: list[str] = []
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                problems.append(f"{path.name}:{lineno}: not valid UTF-8")
                continue
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"{path.name}:{lineno}: not valid JSON ({exc.msg})")
                continue
            if not isinstance(obj, dict):
                problems.append(f"{path.name}:{lineno}: not a JSON object")
                continue
            missing = [k for k in REQUIRED if not isinstance(obj.get(k), str) or not obj[k]]
            if missing:
                problems.append(f"{path.name}:{lineno}: missing or empty {', '.join(missing)}")
                continue
            good.append((lineno, obj))
    return good, problems


def answer_batch(
    settings: Settings,
    queries: Path,
    out: Path,
    show_progress: bool = False,
    memory: Memory | None = None,
) -> dict:
    """Answer every valid line; a bad line (or a bad scope) is reported and skipped."""
    good, problems = read_queries(queries)
    mem = memory or Memory(settings, log_batch=50)
    answered = 0
    bar = None
    if show_progress:
        from tqdm import tqdm

        bar = tqdm(total=len(good), desc="answering", unit="q")
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for lineno, q in good:
            try:
                r = mem.ask(
                    q["question"], scope=q["scope"], query_id=q["query_id"], as_of=q.get("as_of")
                )
            except (ScopeError, ValueError) as exc:
                problems.append(f"{queries.name}:{lineno}: {exc}")
            else:
                fh.write(
                    json.dumps(
                        {
                            "query_id": q["query_id"],
                            "answer": r.answer,
                            "references": r.references,
                            "latency_ms": r.timings["total_ms"],
                            "llm_calls": r.llm_calls,
                            "tokens": r.tokens,
                        }
                        | ({"as_of": r.as_of} if r.as_of else {}),
                        ensure_ascii=False,
                    )
                    + "\n"
                )
                answered += 1
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    mem.flush()
    problems.sort(key=lambda p: int(p.split(":")[1]))
    return {
        "lines": len(good)
        + sum(
            1 for p in problems if "missing" in p or "JSON" in p or "UTF-8" in p or "object" in p
        ),
        "answered": answered,
        "problems": problems,
    }
