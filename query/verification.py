"""Facets are a signal, not a gate: leaves verified against every constraint of a question.

A retrieval-style question ("which of my searches were for Data Engineers in Lisbon?") states
constraints ``key: value``. Candidate leaves come from two places: leaves whose facets match a
constraint, and leaves whose evidence (their documents, verbatim) mentions a constraint's value.
Each candidate is then checked against *every* constraint, and satisfies one when

- one of its facets matches it (best facet cosine >= ``MATCH_COSINE``), or
- its evidence states the value (or a variant of it: the part before a comma, "Lisbon" for
  "Lisbon, Portugal"; a one-letter typo in a long word), not negated ("not remote", "no
  Kubernetes", "without sponsorship" do not state "remote", "Kubernetes", "sponsorship").
  For a key that holds one value per leaf (a location, a title), evidence only fills a gap the
  facets left (a leaf whose facets state another location is not in Lisbon because a
  candidate lives there), and mentions in descriptions of the role beat mentions in notes on
  candidates. In a note on a candidate, a multi-valued value (a skill) counts when the note
  says the role needs it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from hltm_resources.engines.base import LeafMatch, MicroQuery, ParsedQuery
from hltm_resources.engines.extractive.documents import is_feedback_kind
from hltm_resources.engines.extractive.questions import MATCH_COSINE
from hltm_resources.engines.vocabulary import MULTI_KEYS
from hltm_resources.schema import TreeSchema
from hltm_resources.text import fold

#: Words that negate what follows them within a few words ("n't" folds to "t").
NEGATORS = frozenset("not no never without non nor neither cannot t".split())
NEGATION_WINDOW = 4
#: Words that end the reach of a negation ("not X but Y").
CLAUSE_BREAKS = frozenset("but however although though while whereas yet".split())
#: Words by which a note on a candidate says the role needs something.
REQUIREMENT_WORDS = frozenset(
    "need needs needed require requires required requirement must want wants wanted "
    "essential mandatory ask asks asked expect expects expected".split()
)


@dataclass(frozen=True)
class Passage:
    """One evidence passage of a leaf, as verification reads it."""

    doc_id: str
    text: str
    kind: str


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
        return len(diff) == 1 or (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def mentions(tokens: Sequence[str], value: str) -> list[int]:
    """Where ``value`` (or a variant) starts in a folded token list."""
    out = []
    for seq in variants(value):
        n = len(seq)
        for start in range(len(tokens) - n + 1):
            if all(_near(tokens[start + j], seq[j]) for j in range(n)):
                out.append(start)
    return sorted(set(out))


def negated(tokens: Sequence[str], start: int) -> bool:
    """A negator in the few words before ``start``, in the same clause."""
    for token in reversed(tokens[max(0, start - NEGATION_WINDOW) : start]):
        if token in CLAUSE_BREAKS:
            return False
        if token in NEGATORS:
            return True
    return False


def states(passage: Passage, key: str, value: str) -> bool:
    """The passage states ``value`` (not negated); in a note on a candidate, a multi-valued
    value only where the note says the role needs it."""
    tokens = fold(passage.text).split()
    hits = [s for s in mentions(tokens, value) if not negated(tokens, s)]
    if not hits:
        return False
    if is_feedback_kind(passage.kind) and key in MULTI_KEYS:
        return bool(REQUIREMENT_WORDS & set(tokens))
    return True


def evidence_source(
    passages: Sequence[Passage], key: str, value: str, other_values: Sequence[str]
) -> str | None:
    """The document whose text states ``key: value`` for this leaf, or None.

    For a single-valued key, mentions in the description of the role win over notes on
    candidates, and a value is taken only when no other value of the key is stated there."""
    stating = [p for p in passages if states(p, key, value)]
    if not stating:
        return None
    if key in MULTI_KEYS:
        return stating[0].doc_id
    for role_only in (True, False):
        pool = [p for p in passages if is_feedback_kind(p.kind) != role_only]
        mine = [p for p in stating if p in pool]
        rivals = [v for v in other_values if any(states(p, key, v) for p in pool)]
        if mine:
            return mine[0].doc_id if not rivals else None
        if rivals:
            return None
    return None


def verify(
    parsed: ParsedQuery,
    schema: TreeSchema,
    facet_best: dict[str, list[float]],
    facet_keys: dict[str, set[str]],
    evidence: dict[str, list[Passage]],
    vocabulary: dict[str, list[str]],
    names: dict[str, str] | None = None,
) -> list[LeafMatch]:
    """Every leaf that satisfies every constraint of ``parsed``, by facets or evidence.

    ``facet_best``: per leaf, its best facet cosine per micro-query; ``facet_keys``: the facet
    keys a leaf has; ``evidence``: per leaf, its passages; ``vocabulary``: the scope's values
    per key (rivals for single-valued keys)."""
    wanted = constraints(parsed)
    if not wanted:
        return []
    candidates = {
        n for n, best in facet_best.items() if any(best[i] >= MATCH_COSINE for i, _ in wanted)
    }
    for leaf, passages in evidence.items():
        if any(states(p, m.key, m.value) for p in passages for _, m in wanted):
            candidates.add(leaf)
    out = []
    for leaf in sorted(candidates):
        if not schema.is_leaf(leaf.split(":", 1)[0]):
            continue
        how = []
        for i, m in wanted:
            if leaf in facet_best and facet_best[leaf][i] >= MATCH_COSINE:
                how.append("facet")
                continue
            if m.key not in MULTI_KEYS and m.key in facet_keys.get(leaf, set()):
                break  # its facets state another value of a one-value key
            rivals = [v for v in vocabulary.get(m.key, []) if fold(v) != fold(m.value)]
            source = evidence_source(evidence.get(leaf, []), m.key, m.value, rivals)
            if source is None:
                break
            how.append(source)
        else:
            out.append(LeafMatch(leaf, tuple(how), (names or {}).get(leaf, leaf)))
    return out


def group_passages(rows: dict[str, list]) -> dict[str, list[Passage]]:
    """Evidence rows (columns as lists) grouped per leaf, in passage order."""
    out: dict[str, list[Passage]] = defaultdict(list)
    for node, sources, text, kind in zip(
        rows["node_id"], rows["source_ids"], rows["text"], rows["kind"], strict=True
    ):
        out[node].append(Passage(sources[0], text, kind))
    return dict(out)
