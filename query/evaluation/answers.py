"""Scoring answers a person can check: does the answer *state* the gold fact, and cite the
node that holds it?

The questions are hand-written (``tests/fixtures/answers/*.jsonl``, one JSON object a line):
``id``, ``scope``, ``question``, ``family`` and the gold of that family:

- ``fact`` and ``why``: ``gold_values``, a list of required items, each a list of accepted
  spellings; every item must be stated in the answer (case, accents and punctuation aside, as
  whole words), and the answer must cite one of ``gold_references``;
- ``list``: ``gold_references``, the exact nodes to list (projects, or recruiters); scored by
  F1 of the answer's references at the level of the gold (an empty gold: no reference at all);
- ``count``: ``gold_count``; the first number the answer states must be it;
- ``distribution``: ``gold_top`` (the most common value, several when tied) and
  ``gold_top_count``; the answer must state a top value with its count right after it
  ("Toronto, Canada (20 of 42)").

Scores are not references counted: an answer that cites the right project and states another
city is wrong.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from hltm_resources.text import NUMBER_WORDS, fold, number_pattern
from query.evaluation import metrics

FAMILIES = ("fact", "list", "count", "distribution", "why")
#: "0: no project ..." and "none" state zero in an answer.
_NUMBER_WORDS = {"zero": 0, "no": 0, "none": 0, **NUMBER_WORDS}
_NUMBER = number_pattern(_NUMBER_WORDS)


def load(path: str | Path) -> list[dict]:
    """The questions of a fixture file, checked for the fields their family needs."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        q = json.loads(line)
        need = {"id", "scope", "question", "family"} | _GOLD[q.get("family", "")]
        missing = need - set(q)
        if missing:
            raise ValueError(f"{path}:{n}: missing {', '.join(sorted(missing))}")
        out.append(q)
    return out


_GOLD = {
    "fact": {"gold_values", "gold_references"},
    "why": {"gold_values", "gold_references"},
    "list": {"gold_references"},
    "count": {"gold_count"},
    "distribution": {"gold_top", "gold_top_count"},
    "": {"family"},
}


def states(answer: str, spelling: str) -> bool:
    """``spelling`` occurs in ``answer`` as whole words (folded). A gold sum in thousands
    ("66", "110", as people write pay) is stated by its thousands however they are written
    ("66,000", "66000", "66k")."""
    a, s = f" {fold(answer)} ", f" {fold(spelling)} "
    if s.strip().isdigit() and 10 <= int(s) < 1000:
        a += " ".join(m.group(1) for m in _THOUSANDS.finditer(answer)) + " "
    return bool(s.strip()) and s in a


#: A number in thousands: "66,000", "66000", "66 000", "66k" (its thousands in group 1).
_THOUSANDS = re.compile(r"(?<![\d,.])(\d{1,3})(?:[,.\s]?000\b|\s?[kK]\b)")


def first_number(answer: str) -> int | None:
    m = _NUMBER.search(answer)
    if not m:
        return None
    word = m.group(1).lower()
    return int(word) if word.isdigit() else _NUMBER_WORDS[word]


def score(q: dict, answer: str, references: Sequence[str]) -> float:
    """1.0 when the answer states the gold (F1 for lists), else 0.0 (see the module
    docstring)."""
    family = q["family"]
    gold_refs = list(q.get("gold_references") or [])
    if family in ("fact", "why"):
        stated = all(
            any(states(answer, spelling) for spelling in item) for item in q["gold_values"]
        )
        cited = not gold_refs or bool(set(gold_refs) & set(references))
        return 1.0 if stated and cited else 0.0
    if family == "list":
        if not gold_refs:
            return 1.0 if not references else 0.0
        level = gold_refs[0].split(":", 1)[0] + ":"
        mine = [r for r in references if r.startswith(level)]
        return metrics.prf(mine, gold_refs)[2]
    if family == "count":
        return 1.0 if first_number(answer) == int(q["gold_count"]) else 0.0
    if family == "distribution":
        folded = fold(answer)
        for top in q["gold_top"]:
            at = f" {folded} ".find(f" {fold(top)} ")
            if at < 0:
                continue
            after = answer_after(answer, top)
            if first_number(after) == int(q["gold_top_count"]):
                return 1.0
        return 0.0
    raise ValueError(f"unknown family {family!r} in {q['id']}")


def answer_after(answer: str, value: str) -> str:
    """The 30 characters of ``answer`` after its first mention of ``value``."""
    m = re.search(r"\b" + r"\W+".join(re.escape(w) for w in value.split()) + r"\b", answer, re.I)
    return answer[m.end() : m.end() + 30] if m else ""


def scope_level(scope: str) -> str:
    return scope.split(":", 1)[0]


def summarize(questions: Sequence[dict], scores: dict[str, float]) -> dict:
    """Mean score per family, per family and scope level (facts), and per tag, with counts
    and the standard error of each mean."""
    groups: dict[str, list[float]] = defaultdict(list)
    for q in questions:
        s = scores[q["id"]]
        family = q["family"]
        groups[family].append(s)
        groups[f"{family}@{scope_level(q['scope'])}"].append(s)
        for tag in q.get("tags") or ():
            groups[f"tag:{tag}"].append(s)
        groups["all"].append(s)
    out = {}
    for name, values in sorted(groups.items()):
        mean, sem = metrics.mean_sem(values)
        out[name] = {"mean": round(mean, 4), "sem": round(sem, 4), "n": len(values)}
    return out


def failures(questions: Iterable[dict], scores: dict[str, float], answers: dict) -> list[dict]:
    """The questions not fully right, with what was answered (for reading)."""
    return [
        {
            "id": q["id"],
            "scope": q["scope"],
            "question": q["question"],
            "score": scores[q["id"]],
            "answer": answers[q["id"]][0],
            "references": answers[q["id"]][1],
        }
        for q in questions
        if scores[q["id"]] < 1.0
    ]
