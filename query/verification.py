"""Facets are a signal, not a gate: leaves verified against every constraint of a question.

A retrieval-style question ("which of my searches were for Data Engineers in Lisbon?") states
constraints ``key: value``. Candidate leaves come from two places: leaves whose facets match a
constraint, and leaves whose evidence (their documents, verbatim) mentions a constraint's value.
Each candidate is then checked against *every* constraint, and satisfies one when

- one of its facets states it: facet cosine >= ``MATCH_COSINE``, or a facet of the key (or of
  a key the scope's values show to be an alias of it) whose value states the constraint's
  ("Senior Data Engineer" states "Data Engineer"; "Lisbon" states "Lisbon, Portugal"), or
- its evidence states the value (or a variant: the part before a comma; a one-letter typo in a
  long word), not negated ("not remote", "no Kubernetes", "PyTorch, which is not part of this
  role" do not state them). For a key that holds one value per leaf (a location, a title),
  evidence only fills a gap the facets left (a leaf whose facets state another location is not
  in Lisbon because a candidate lives there), and mentions in descriptions of the role beat
  mentions in notes on candidates. In a note on a candidate, a fact about the role (a skill)
  counts only where the note says the role needs it; facts about candidates (a rejection
  reason) count as stated.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from hltm_resources.engines.base import LeafMatch, MicroQuery, ParsedQuery
from hltm_resources.engines.extractive.documents import is_feedback_kind
from hltm_resources.engines.extractive.questions import MATCH_COSINE
from hltm_resources.engines.vocabulary import CANDIDATE_KEYS, KEY_ORDER, MULTI_KEYS
from hltm_resources.schema import TreeSchema
from hltm_resources.text import fold

#: Words that negate what is near them ("n't" folds to "t").
NEGATORS = frozenset("not no never without non nor neither cannot t".split())
#: Words that turn a negator into emphasis ("don't forget X", "not only X").
NEGATION_CANCELLERS = frozenset("forget only hesitate miss overlook".split())
#: Words before a mention, and after it, that a negation may sit in.
NEGATION_BEFORE = 4
NEGATION_AFTER = 6
#: Tokens that end the reach of a negation: sentence punctuation, contrast, coordination.
CLAUSE_BREAKS = frozenset(". ; : ! ? but however although though while whereas yet".split())
COORDINATION = frozenset("and or".split())
#: Words by which a note on a candidate says the role needs something.
REQUIREMENT_WORDS = frozenset(
    "need needs needed require requires required requirement must want wants wanted "
    "essential mandatory ask asks asked expect expects expected".split()
)
_TOKEN = re.compile(r"[a-z0-9]+|[.;:!?]")


@dataclass(frozen=True)
class Passage:
    """One evidence passage of a leaf, as verification reads it (``tokens``: see
    :func:`tokenize`)."""

    doc_id: str
    kind: str
    tokens: tuple[str, ...]


def tokenize(text: str) -> list[str]:
    """Folded words, plus the punctuation that ends a clause."""
    return _TOKEN.findall(fold_keep_breaks(text))


def fold_keep_breaks(text: str) -> str:
    """:func:`fold` per clause, keeping the clause punctuation between."""
    parts = re.split(r"([.;:!?])(?=\s|$)", text)
    return " ".join(fold(p) if p not in ".;:!?" else p for p in parts)


def constraints(parsed: ParsedQuery) -> list[tuple[int, MicroQuery]]:
    """The valued micro-queries of a question, with their index in ``parsed.micro``."""
    return [(i, m) for i, m in enumerate(parsed.micro) if m.value]


def variants(value: str) -> list[list[str]]:
    """Token sequences that state ``value``: itself, and its head before a comma."""
    out = [fold(value).split()]
    head = value.split(",")[0]
    if head != value and len(fold(head)) >= 3:
        out.append(fold(head).split())
    return [v for v in out if v]


def _near(a: str, b: str) -> bool:
    """Equal, or (for words of five letters or more) one edit apart, a swap counting as one."""
    if a == b:
        return True
    if min(len(a), len(b)) < 5 or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        swap = (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
        return len(diff) == 1 or swap
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def mentions(tokens: Sequence[str], value: str) -> list[tuple[int, int]]:
    """(start, end) of every place ``value`` (or a variant) is stated in ``tokens``."""
    out = set()
    for seq in variants(value):
        n = len(seq)
        for start in range(len(tokens) - n + 1):
            if all(_near(tokens[start + j], seq[j]) for j in range(n)):
                out.add((start, start + n))
    return sorted(out)


def negated(tokens: Sequence[str], start: int, end: int) -> bool:
    """A negator in the few words before the mention, or after it, within its clause."""
    for i in range(start - 1, max(-1, start - 1 - NEGATION_BEFORE), -1):
        if tokens[i] in CLAUSE_BREAKS:
            break
        if _negates(tokens, i):
            return True
    for i in range(end, min(len(tokens), end + NEGATION_AFTER)):
        if tokens[i] in CLAUSE_BREAKS or tokens[i] in COORDINATION:
            break
        if _negates(tokens, i):
            return True
    return False


def _negates(tokens: Sequence[str], i: int) -> bool:
    after = tokens[i + 1] if i + 1 < len(tokens) else ""
    return tokens[i] in NEGATORS and after not in NEGATION_CANCELLERS


def states(passage: Passage, key: str, value: str) -> bool:
    """The passage states ``key: value``, not negated (see the module docstring)."""
    tokens = passage.tokens
    if not any(not negated(tokens, s, e) for s, e in mentions(tokens, value)):
        return False
    if is_feedback_kind(passage.kind) and key not in CANDIDATE_KEYS:
        return bool(REQUIREMENT_WORDS & set(tokens))
    return True


def facet_states(facet_value: str, value: str) -> bool:
    """A facet value states the constraint's: as its words, or as its head before a comma."""
    have = fold(facet_value).split()
    return any(
        seq == have or (len(seq) < len(have) and mentions(have, " ".join(seq)))
        for seq in variants(value)
    ) or bool(mentions(have, value))


def evidence_source(
    passages: Sequence[Passage], key: str, value: str, rivals: Sequence[str]
) -> str | None:
    """The document whose text states ``key: value`` for this leaf, or None.

    For a single-valued key, mentions in the description of the role win over notes on
    candidates, and a value is taken only where no rival value of the key is stated too."""
    stating = [p for p in passages if states(p, key, value)]
    if not stating:
        return None
    if key in MULTI_KEYS:
        return stating[0].doc_id
    for about_role in (True, False):
        pool = [p for p in passages if is_feedback_kind(p.kind) != about_role]
        mine = [p for p in stating if p in pool]
        rival = any(states(p, key, r) for p in pool for r in rivals)
        if mine:
            return None if rival else mine[0].doc_id
        if rival:
            return None
    return None


@dataclass
class LeafFacts:
    """What verification knows of one leaf: its best facet cosine per micro-query, its facet
    values per (canonical) key, and its evidence passages."""

    best: list[float]
    values: dict[str, list[str]]
    passages: list[Passage]


def verify(
    parsed: ParsedQuery,
    schema: TreeSchema,
    leaves: dict[str, LeafFacts],
    vocabulary: dict[str, list[str]],
    names: dict[str, str] | None = None,
) -> list[LeafMatch]:
    """Every leaf that satisfies every constraint of ``parsed``, by facets or by evidence.

    ``vocabulary``: the values of each key (a single-valued key's other values are rivals)."""
    wanted = constraints(parsed)
    out = []
    for leaf in sorted(leaves):
        if not wanted or not schema.is_leaf(leaf.split(":", 1)[0]):
            continue
        facts = leaves[leaf]
        how = []
        for i, m in wanted:
            have = facts.values.get(m.key, [])
            if (facts.best and facts.best[i] >= MATCH_COSINE) or any(
                facet_states(v, m.value) for v in have
            ):
                how.append("facet")
                continue
            if have and m.key not in MULTI_KEYS:
                break  # its facets state another value of a one-value key
            rivals = [v for v in vocabulary.get(m.key, []) if fold(v) != fold(m.value)]
            rivals = [r for r in rivals if not facet_states(r, m.value)]
            source = evidence_source(facts.passages, m.key, m.value, rivals)
            if source is None:
                break
            how.append(source)
        else:
            out.append(LeafMatch(leaf, tuple(how), (names or {}).get(leaf, leaf)))
    return out


def leaf_values(facts: LeafFacts, key: str, known: Sequence[str]) -> list[str]:
    """The values of ``key`` a leaf states, named as in ``known`` (the scope's values): its
    facets' values ("Senior Data Engineer" counts as "Data Engineer"; "Berlin" with
    "Germany" as "Berlin, Germany"), and what its evidence states that the facets missed (all
    of them for a multi-valued key; for a one-value key only when the facets have none and
    the evidence is unambiguous)."""
    have = facts.values.get(key, [])
    if key in MULTI_KEYS:
        out = [named for v in have if (named := _named(v, known))]
    else:
        out = [best] if (best := _one_value(have, known)) else []
    if out and key not in MULTI_KEYS:
        return out
    present = {t for p in facts.passages for t in p.tokens}
    found = []
    for w in known:
        if w in out or not present & set(fold(w).split()):
            continue
        rivals = (
            []
            if key in MULTI_KEYS
            else [r for r in known if r != w and not facet_states(r, w) and not facet_states(w, r)]
        )
        if evidence_source(facts.passages, key, w, rivals):
            found.append(w)
    if key not in MULTI_KEYS:
        found = [w for w in found if not any(facet_states(o, w) for o in found if o != w)]
        if len(found) > 1:
            found = []
    return list(dict.fromkeys(out + found))


def _named(value: str, known: Sequence[str]) -> str | None:
    """``value`` as ``known`` names it: itself, else the most specific value it states."""
    exact = [w for w in known if fold(w) == fold(value)]
    stated = sorted((w for w in known if facet_states(value, w)), key=len, reverse=True)
    return (exact or stated or [None])[0]


def _one_value(values: Sequence[str], known: Sequence[str]) -> str | None:
    """The known value most of a leaf's facet values agree on: one that each states, or is
    the head or a part of (a city and a country name "City, Country"); the fullest wins."""
    if not values:
        return None
    support: dict[str, int] = defaultdict(int)
    for w in known:
        for v in values:
            if facet_states(v, w) or facet_states(w, v):
                support[w] += 1
    if not support:
        return None
    rank = {w: i for i, w in enumerate(known)}  # the scope's most supported spelling first
    return max(support, key=lambda w: (support[w], len(fold(w).split()), -rank[w]))


def distribution(
    leaves: dict[str, LeafFacts], pool: Sequence[str], key: str, known: Sequence[str]
) -> list[tuple[str, int]]:
    """How many leaves of ``pool`` state each value of ``key``, most first."""
    counts: dict[str, int] = defaultdict(int)
    for leaf in pool:
        for value in leaf_values(leaves[leaf], key, known):
            counts[value] += 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], fold(kv[0])))


#: Share of a key's values that must state values of a canonical key for it to be an alias.
ALIAS_OVERLAP = 0.5


def value_aliases(values: dict[str, list[str]]) -> dict[str, str]:
    """Keys the data shows to be another name of a canonical key: their values are mostly
    made of that key's values. An export's ``vacancyName`` holding "Senior Data Engineer" and
    "Lead Biostatistician" is a ``title`` wherever titles are "Data Engineer" and
    "Biostatistician"; a ``hiringCountry`` holding "Portugal" is part of a ``location``.

    A key's score against a canonical key is the mean, over its values, of the share of the
    value's words that one of the canonical key's values covers; the best score wins."""
    canonical = [k for k in KEY_ORDER if values.get(k)]
    out = {}
    for key, mine in values.items():
        if key in KEY_ORDER or not mine:
            continue
        scores = {
            other: sum(_coverage(v, values[other]) for v in mine) / len(mine) for other in canonical
        }
        best = max(scores, key=lambda k: (scores[k], -KEY_ORDER.index(k)), default=None)
        if best is not None and scores[best] >= ALIAS_OVERLAP:
            out[key] = best
    return out


def is_new_value(value: str, known: Sequence[str]) -> bool:
    """A value none of ``known`` already says (as itself, a part, or a qualified form)."""
    return _coverage(value, known) == 0.0 and not any(facet_states(w, value) for w in known)


def _coverage(value: str, known: Sequence[str]) -> float:
    """The largest share of ``value``'s words one of ``known`` covers (all of them when the
    value is part of a known value)."""
    words = len(fold(value).split()) or 1
    best = 0.0
    for w in known:
        if facet_states(w, value):
            return 1.0
        if facet_states(value, w):
            best = max(best, len(fold(w).split()) / words)
    return best


def group_passages(rows: dict[str, list]) -> dict[str, list[Passage]]:
    """Evidence rows (columns as lists) grouped per leaf, in passage order."""
    out: dict[str, list[Passage]] = defaultdict(list)
    for node, sources, text, kind in zip(
        rows["node_id"], rows["source_ids"], rows["text"], rows["kind"], strict=True
    ):
        out[node].append(Passage(sources[0], kind, tuple(tokenize(text))))
    return dict(out)
