"""Evaluation metrics as the paper reports them (section 4.2), plus retrieval recall@k."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from hltm_resources.text import fold

_ARTICLES = {"a", "an", "the"}


def answer_tokens(text: str) -> list[str]:
    """SQuAD-style normalization: lowercase, no punctuation, no articles."""
    return [t for t in fold(text).split() if t not in _ARTICLES]


def token_f1(prediction: str, gold: str) -> float:
    """Harmonic mean of token precision and recall (multiset overlap)."""
    pred, ref = answer_tokens(prediction), answer_tokens(gold)
    if not pred and not ref:
        return 1.0
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def bleu1(prediction: str, gold: str) -> float:
    """Clipped unigram precision times the brevity penalty (single reference)."""
    pred, ref = answer_tokens(prediction), answer_tokens(gold)
    if not pred:
        return 1.0 if not ref else 0.0
    clipped = sum((Counter(pred) & Counter(ref)).values())
    precision = clipped / len(pred)
    bp = 1.0 if len(pred) > len(ref) else math.exp(1 - len(ref) / len(pred))
    return precision * bp


def prf(predicted: Iterable[str], gold: Iterable[str]) -> tuple[float, float, float]:
    """Set precision, recall and F1 of cited references.

    Conventions: nothing predicted and nothing expected is perfect (1, 1, 1); predicting
    something when nothing is expected gives precision 0 and recall 1; predicting nothing when
    something is expected gives precision 1 and recall 0 (F1 0 in both cases).
    """
    pred, ref = set(predicted), set(gold)
    if not pred and not ref:
        return 1.0, 1.0, 1.0
    hit = len(pred & ref)
    precision = hit / len(pred) if pred else 1.0
    recall = hit / len(ref) if ref else 1.0
    f1 = 0.0 if hit == 0 else 2 * precision * recall / (precision + recall)
    return precision, recall, f1


def entity_recall(answer: str, entities: Sequence[str]) -> float:
    """Share of gold entities (numbers, named values) stated in the answer."""
    if not entities:
        return 1.0
    text = f" {fold(answer)} "
    return sum(1 for e in entities if f" {fold(e)} " in text) / len(entities)


def leakage(references: Sequence[str], in_scope: set[str]) -> tuple[bool, float]:
    """(does any reference lie outside the scope, share of references outside)."""
    if not references:
        return False, 0.0
    outside = sum(1 for r in references if r not in in_scope)
    return outside > 0, outside / len(references)


def recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Share of gold ids among the first ``k`` distinct ranked ids."""
    gold = set(gold)
    if not gold:
        return 1.0
    top: list[str] = []
    for item in ranked:
        if item not in top:
            top.append(item)
        if len(top) == k:
            break
    return len(gold & set(top)) / len(gold)


_DIA = re.compile(r"^D:?(\d+):0*(\d+)$")


def normalize_dia_ids(
    evidence: Iterable[str], known: set[str] | None = None
) -> tuple[list[str], int]:
    """LoCoMo evidence ids normalized (``"D8:6; D9:17"``, ``"D:11:26"``, ``"D30:05"``).

    Returns the valid ids (in order, deduplicated) and how many pieces were malformed or
    unknown (counted, then skipped).
    """
    out: list[str] = []
    bad = 0
    for item in evidence:
        for piece in re.split(r"[;,\s]+", str(item)):
            if not piece:
                continue
            m = _DIA.match(piece.strip())
            if not m:
                bad += 1
                continue
            norm = f"D{int(m.group(1))}:{int(m.group(2))}"
            if known is not None and norm not in known:
                bad += 1
                continue
            if norm not in out:
                out.append(norm)
    return out, bad


def mean_sem(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (sample standard deviation / sqrt(n))."""
    n = len(values)
    if n == 0:
        return float("nan"), float("nan")
    mean = sum(values) / n
    if n == 1:
        return mean, 0.0
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, ``q`` in [0, 100]."""
    if not values:
        return float("nan")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
