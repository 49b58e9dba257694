"""Keys and values learned from the data: which export keys name a canonical key.

Exports of different applicant tracking systems name one attribute many ways
(``vacancyName``, ``job_title``, ``Requisition Title``); the alias table of
:mod:`~hltm_resources.engines.vocabulary` knows some names, and the values tell the rest: a key
whose values are largely a canonical key's values is that key. Used where memory is aggregated
(a parent merges its children's keys before counting) and where questions are read (the tree's
keys, per version of the facets table).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from hltm_resources.engines.vocabulary import (
    ALIASES,
    CANDIDATE_KEYS,
    FEEDBACK_KEYS,
    KEY_ORDER,
    MULTI_KEYS,
    SENIORITY_WORDS,
    canonical_value,
)
from hltm_resources.text import fold, pluralize, split_list


def variants(value: str) -> list[list[str]]:
    """Token sequences that state ``value``: itself, and its head before a comma."""
    out = [fold(value).split()]
    head = value.split(",")[0]
    if head != value and len(fold(head)) >= 3:
        out.append(fold(head).split())
    return [v for v in out if v]


#: Share of a key's values that must state values of another key for it to be an alias.
#: Exports in different accounts share only part of their values (each account hires in its
#: own domains); 0.3 changed no answer on the dev worlds and joins list-valued keys that 0.5
#: left apart (see BENCHMARKS.md, hiring).
ALIAS_OVERLAP = 0.3


def value_aliases(values: dict[str, list[str]]) -> dict[str, str]:
    """Keys the data shows to be another name of a key, learned from the tree's own values.

    - A key whose values are largely made of a canonical key's values is that key: an
      export's ``vacancyName`` holding "Senior Data Engineer" and "Lead Biostatistician" is a
      ``title`` wherever titles are "Data Engineer" and "Biostatistician"; a ``hiringCountry``
      holding "Portugal" is part of a ``location``; ``toolkit`` holding "Go; AWS; Terraform"
      is a ``skill`` wherever skills are "Go", "AWS" and "Terraform".
    - A flattened path naming a canonical key is that key (``data_attributes_skill_tags``).
    - Every key so recognized lends its values to the next round, until nothing changes: a
      key whose values match a recognized alias's is recognized too.
    - Keys no canonical key explains but whose values are the same (``grounds`` and
      ``main_concern`` both holding "failed the technical assessment") are one key, named
      after the member with most values (then the first by name).

    A key's score against another is the mean, over its values, of the share of the value's
    words the other's values cover; the best score at least ``ALIAS_OVERLAP`` wins (two
    unexplained keys join when each one's score against the other reaches it). Computed once
    per version of the facets table, with word indexes (:class:`ValueIndex`): linear in the
    number of distinct values."""
    pool = {k: ValueIndex(values[k]) for k in KEY_ORDER if values.get(k)}
    # A canonical key is never another's name ("code_name" holding "Nightjar" is no title).
    canonical = set(KEY_ORDER) | (set(ALIASES) - FEEDBACK_KEYS)
    pending = sorted(k for k, v in values.items() if k not in canonical and v)
    out: dict[str, str] = {}

    def resolve(candidates: dict[str, ValueIndex]) -> bool:
        found = {}
        for key in (k for k in pending if k not in out):
            best = _best_overlap(values[key], candidates)
            if best is not None:
                found[key] = best
        for key, target in found.items():
            out[key] = target
            candidates.setdefault(target, ValueIndex(())).add(values[key])
        return bool(found)

    while resolve(pool):
        pass
    named = {k: c for k in pending if k not in out and (c := _named_in_path(k))}
    for key, target in named.items():
        out[key] = target
        pool.setdefault(target, ValueIndex(())).add(values[key])
    while named and resolve(pool):
        pass
    rest = [k for k in pending if k not in out]
    for group in _overlap_groups(rest, values):
        head = min(group, key=lambda k: (-len(values[k]), k))
        out.update({k: head for k in group if k != head})
    for key, target in out.items():
        if target == "skill" and set(key.split("_")) & _NICE_WORDS:
            out[key] = "preferred_skill"  # "skills_desirable": skills, nice to have
    return out


#: Words of a key's name that make a list of skills the nice-to-have ones.
_NICE_WORDS = frozenset("nice desirable optional preferred plus pluses bonus extra".split())


def _best_overlap(mine: Sequence[str], candidates: dict[str, ValueIndex]) -> str | None:
    """The candidate key whose values cover ``mine`` best, if at least ``ALIAS_OVERLAP``."""
    scores = {
        other: sum(theirs.coverage(v) for v in mine) / len(mine)
        for other, theirs in candidates.items()
    }
    order = {k: i for i, k in enumerate(KEY_ORDER)}
    best = max(scores, key=lambda k: (scores[k], -order.get(k, len(order))), default=None)
    return best if best is not None and scores[best] >= ALIAS_OVERLAP else None


def _named_in_path(key: str) -> str | None:
    """The canonical key a flattened path names among its parts (``data_skill_tags`` ->
    ``skill``), if exactly one."""
    parts = key.split("_")
    found = set()
    for canonical in KEY_ORDER:
        words = canonical.split("_")
        names = [words] + ([[pluralize(words[0])]] if len(words) == 1 else [])
        size = len(words)
        windows = [parts[i : i + size] for i in range(len(parts) - size + 1)]
        if any(name in windows for name in names):
            found.add(canonical)
    return found.pop() if len(found) == 1 else None


def _overlap_groups(keys: Sequence[str], values: dict[str, list[str]]) -> list[list[str]]:
    """Keys joined when each one's values cover the other's (transitively)."""
    parent = {k: k for k in keys}
    index = {k: ValueIndex(values[k]) for k in keys}

    def root(k: str) -> str:
        while parent[k] != k:
            k = parent[k]
        return k

    # Only keys sharing a value can cover each other's values that much: the candidates.
    holders: dict[str, list[str]] = defaultdict(list)
    for k in keys:
        for v in set(map(fold, values[k])):
            holders[v].append(k)
    pairs = sorted({(a, b) for ks in holders.values() for a in ks for b in ks if a < b})
    for a, b in pairs:
        if root(a) == root(b):
            continue
        ab = sum(index[b].coverage(v) for v in values[a]) / len(values[a])
        ba = sum(index[a].coverage(v) for v in values[b]) / len(values[b])
        if min(ab, ba) >= ALIAS_OVERLAP:
            parent[root(b)] = root(a)
    groups: dict[str, list[str]] = defaultdict(list)
    for k in keys:
        groups[root(k)].append(k)
    return [g for g in groups.values() if len(g) > 1]


def list_items(key: str, value: str) -> list[str]:
    """The items of a value written as a list, for a key known to hold several values
    ("Go, AWS and Terraform" as a ``skill``); the value itself otherwise."""
    if key in MULTI_KEYS and key not in CANDIDATE_KEYS:  # a reason is a sentence, not a list
        items = split_list(value)
        if len(items) >= 2:
            return items
    return [value]


class ValueIndex:
    """The values of a key indexed by their words, for :meth:`coverage` (exact words: a
    misspelled value counts as its words alone)."""

    def __init__(self, values: Sequence[str]):
        self.starts: dict[str, set[tuple[str, ...]]] = defaultdict(set)
        self.spans: set[tuple[str, ...]] = set()  # every run of words of every value
        self.full: set[tuple[str, ...]] = set()
        self.add(values)

    def add(self, values: Sequence[str]) -> None:
        for value in values:
            for seq in variants(value):
                self.starts[seq[0]].add(tuple(seq))
            words = tuple(fold(value).split())
            self.full.add(words)
            for i in range(len(words)):
                for j in range(i + 1, min(len(words), i + MAX_SPAN) + 1):
                    self.spans.add(words[i:j])

    def parts(self, value: str) -> set[tuple[str, ...]]:
        """The indexed values ``value`` states, other than itself."""
        words = fold(value).split()
        own = tuple(words)
        found = set()
        for i, word in enumerate(words):
            for seq in self.starts.get(word, ()):
                if seq in self.full and seq != own and tuple(words[i : i + len(seq)]) == seq:
                    found.add(seq)
        return found

    def coverage(self, value: str) -> float:
        """The share of ``value``'s words the indexed values it states cover together; 1
        when the value (or its head before a comma) is part of an indexed value: "Go, AWS
        and Terraform" is covered three words in four by "Go", "AWS" and "Terraform"."""
        words = fold(value).split()
        if not words:
            return 0.0
        if any(tuple(seq) in self.spans for seq in variants(value)):
            return 1.0
        covered: set[int] = set()
        for i, word in enumerate(words):
            for seq in self.starts.get(word, ()):
                if tuple(words[i : i + len(seq)]) == seq:
                    covered.update(range(i, i + len(seq)))
        return len(covered) / len(words)


#: Longest run of words :class:`ValueIndex` knows as part of a value.
MAX_SPAN = 8


def as_written(key: str, value: str) -> list[str]:
    """A value another key held, as ``key`` writes its values: list items of a multi-valued
    key, canonical spellings (workplace words), a title without its leading seniority word
    ("Senior Data Engineer" is the title "Data Engineer")."""
    out = []
    for item in list_items(key, value):
        item = canonical_value(key, item) or item
        words = item.split()
        if key == "title" and len(words) > 1 and fold(words[0]) in SENIORITY_WORDS:
            item = " ".join(words[1:])
        out.append(item)
    return out
