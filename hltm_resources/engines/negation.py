"""Negation: whether a text states a value or says it does not hold.

Shared by the extractive engine (a negated statement is never stored as a facet: "the role is
not based in Toronto" states no location) and by verification at query time (evidence that
negates a value is no match for it). Text is read as folded tokens plus the punctuation that
ends a clause (:func:`tokenize`); a negator reaches a few words before a mention and after it,
within its clause.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from hltm_resources.text import unaccented

#: Words that negate what is near them ("n't" folds to "t").
NEGATORS = frozenset("not no never without non nor neither cannot unable t".split())
#: Words that turn a negator into emphasis ("don't forget X", "not only X").
NEGATION_CANCELLERS = frozenset("forget only hesitate miss overlook".split())
#: Words before a mention, and after it, that a negation may sit in.
NEGATION_BEFORE = 4
NEGATION_AFTER = 6
#: Tokens that end the reach of a negation: sentence punctuation, contrast, coordination.
CLAUSE_BREAKS = frozenset(". ; : ! ? but however although though while whereas yet".split())
COORDINATION = frozenset("and or".split())
ARTICLES = frozenset("a an the".split())
_DASH = re.compile(r"\s[\u2013\u2014]\s")
_TOKEN = re.compile(r"[a-z0-9]+|[.;:!?]")
_CLAUSE_END = re.compile(r"([.;:!?])(?=\s|$)")
_RUNS = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Folded words, plus the punctuation that ends a clause: ``fold_keep_breaks`` read for
    runs of letters and digits (what ``fold`` keeps of a word), clause by clause."""
    out: list[str] = []
    text = _DASH.sub(" ; ", text)  # "remote, anywhere in Spain — not tied to Madrid"
    for part in _CLAUSE_END.split(text):
        if part in ".;:!?":  # a clause's end (or a part made of such marks), kept as it is
            out += _TOKEN.findall(part)
        else:
            out += _RUNS.findall(_lower_plain(part))
    return out


def _lower_plain(text: str) -> str:
    """Lowercase without accents, as ``fold`` reads text before taking its words (not
    cached: passages are read once)."""
    return unaccented(text).lower()


def negated(tokens: Sequence[str], start: int, end: int) -> bool:
    """A negator in the few words before the mention ``tokens[start:end]``, or after it,
    within its clause."""
    for i in range(start - 1, max(-1, start - 1 - NEGATION_BEFORE), -1):
        if tokens[i] in CLAUSE_BREAKS:
            break
        if _negates(tokens, i):
            return True
    for i in range(end, min(len(tokens), end + NEGATION_AFTER)):
        if tokens[i] in CLAUSE_BREAKS or tokens[i] in COORDINATION:
            break
        if i == end and i + 1 < len(tokens) and tokens[i + 1] in ARTICLES:
            break  # "a Data Engineer, not a Data Scientist": what follows is negated
        if _negates(tokens, i):
            return True
    return False


def _negates(tokens: Sequence[str], i: int) -> bool:
    after = tokens[i + 1] if i + 1 < len(tokens) else ""
    return tokens[i] in NEGATORS and after not in NEGATION_CANCELLERS


_CONTRAST_AFTER = re.compile(
    r"\s*(?:\([^()]*\)\s*)?[,;(\u2013\u2014]\s*(?:but\s+)?(?:not|no|never)\b", re.I
)


def negated_in_text(text: str, start: int, end: int, cue: int | None = None) -> bool:
    """Whether the span ``text[start:end]`` is negated where it stands (:func:`negated`):
    "The role is not based in Toronto" negates "Toronto", "Kubernetes is not required"
    negates "Kubernetes". ``cue``: where the words that introduced the span begin ("based
    in"), when a negator before them counts too."""
    first = start if cue is None else min(cue, start)
    before = tokenize(text[:first])
    cue_words = tokenize(text[first:start])
    span = tokenize(text[start:end])
    # "hybrid, no longer remote", "Lisbon, not Porto", "remote (in Portugal), no longer
    # hybrid": a negation set off after the span negates what follows it.
    after = [] if _CONTRAST_AFTER.match(text, end) else tokenize(text[end:])
    tokens = before + cue_words + span + after
    return negated(tokens, len(before), len(before) + len(cue_words) + len(span))


#: Words before a value that say it is being given up ("dropping the on-site requirement").
DROPPING = frozenset(
    "drop drops dropped dropping remove removes removed removing scrap scraps scrapped "
    "scrapping abandon abandoned abandoning".split()
)


#: Words of a change a "from X" follows ("change it from hybrid", "away from on-site").
_CHANGING = ("chang", "switch", "mov", "away", "go", "went", "shift")


def superseded_in_text(text: str, start: int, end: int) -> bool:
    """Whether the span ``text[start:end]`` is named as the state a change leaves: the
    ``X`` of "from X to Y" ("change the ad from on-site to hybrid", "goes from 2 to 3"), or
    a value being dropped ("we're dropping the on-site requirement")."""
    before = _within_clause(reversed(tokenize(text[max(0, start - 60) : start])), 6)
    after = _within_clause(tokenize(text[end : end + 60]), 4)
    if "from" in before[:3]:
        # "from X to Y", "please change it from hybrid", "moving away from on-site"
        leading = before[before.index("from") + 1 :]
        if "to" in after or any(t.startswith(_CHANGING) for t in leading):
            return True
    return bool(set(before[:3]) & DROPPING)


def _within_clause(tokens: Iterable[str], reach: int) -> list[str]:
    """The first ``reach`` tokens, up to the end of their clause."""
    out: list[str] = []
    for t in tokens:
        if t in CLAUSE_BREAKS or len(out) == reach:
            break
        out.append(t)
    return out
