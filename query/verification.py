"""Facets are a signal, not a gate: leaves verified against every constraint of a question.

A retrieval-style question ("which of my searches were for Data Engineers in Lisbon?") states
constraints ``key: value``. Candidate leaves come from two places: leaves whose facets match a
constraint, and leaves whose evidence (their documents, verbatim) mentions a constraint's value.
Each candidate is then checked against *every* constraint, and satisfies one when

- one of its facets is the value: identity after normalization (``same_value_key``: "Lisbon"
  is "Lisbon, Portugal"; "Mid-Senior level" is not "Senior", Frontend is not Backend, however
  close their vectors are), or
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
import threading
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from hltm_resources.engines.aliases import (
    ValueIndex,
    variants,
)
from hltm_resources.engines.base import LeafMatch, MicroQuery, ParsedQuery
from hltm_resources.engines.extractive.documents import is_feedback_kind
from hltm_resources.engines.negation import _TOKEN, negated, tokenize
from hltm_resources.engines.understanding import Bound, amount_bound
from hltm_resources.engines.vocabulary import (
    CANDIDATE_KEYS,
    KEY_ALIASES,
    KEY_ORDER,
    MULTI_KEYS,
    YES_NO_KEYS,
    country_of_place,
    currency_of,
    in_country_of,
    names_a_site,
    person_of,
    same_value_key,
)
from hltm_resources.places import country_code, country_name
from hltm_resources.schema import TreeSchema
from hltm_resources.text import fold, without_asides
from hltm_resources.text import near_word as _near

#: Words by which a note on a candidate says the role needs something.
REQUIREMENT_WORDS = frozenset(
    "need needs needed require requires required requirement requirements must want wants "
    "wanted "
    "essential mandatory ask asks asked expect expects expected".split()
)


@dataclass(frozen=True)
class Passage:
    """One evidence passage of a leaf, as verification reads it (``tokens``: see
    :func:`tokenize`)."""

    doc_id: str
    kind: str
    tokens: tuple[str, ...]
    #: The passage as written, and its id (what answers quote and cite).
    text: str = ""
    passage_id: str = ""

    @cached_property
    def words(self) -> frozenset[str] | None:
        """Its distinct tokens, when all are what :func:`tokenize` makes (else None)."""
        words = frozenset(self.tokens)
        return words if all(_TOKEN.fullmatch(w) for w in words) else None


def fold_keep_breaks(text: str) -> str:
    """:func:`fold` per clause, keeping the clause punctuation between."""
    parts = re.split(r"([.;:!?])(?=\s|$)", text)
    return " ".join(fold(p) if p not in ".;:!?" else p for p in parts)


def constraints(parsed: ParsedQuery) -> list[tuple[int, MicroQuery]]:
    """The valued micro-queries of a question, with their index in ``parsed.micro``."""
    return [(i, m) for i, m in enumerate(parsed.micro) if m.value]


def mentions(tokens: Sequence[str], value: str) -> list[tuple[int, int]]:
    """(start, end) of every place ``value`` (or a variant) is stated in ``tokens``."""
    out = set()
    for seq in _variants(value):
        n = len(seq)
        first, rest = seq[0], list(enumerate(seq[1:], 1))
        for start in range(len(tokens) - n + 1):
            t = tokens[start]
            if t != first and not _near(t, first):
                continue
            for j, word in rest:
                if not _near(tokens[start + j], word):
                    break
            else:
                out.add((start, start + n))
    return sorted(out)


@lru_cache(maxsize=100_000)
def _variants(value: str) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(seq) for seq in variants(value))


def may_mention(words: frozenset[str], value: str) -> bool:
    """False when tokens with these distinct ``words`` (words :func:`tokenize` makes) cannot
    mention ``value``: for some variant of it, each word must be among them, or a word one
    edit from it (see :func:`mentions`)."""
    return any(all(not words.isdisjoint(_near_words(w)) for w in seq) for seq in _variants(value))


def states(passage: Passage, key: str, value: str) -> bool:
    """The passage states ``key: value``, not negated (see the module docstring)."""
    tokens = passage.tokens
    if passage.words is not None and not may_mention(passage.words, value):
        return False
    if not any(not negated(tokens, s, e) for s, e in mentions(tokens, value)):
        return False
    if is_feedback_kind(passage.kind) and about_role(key):
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
    if not one_valued(key):
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
    #: The documents each facet value comes from, by (key, value).
    sources: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    @cached_property
    def present(self) -> frozenset[str]:
        """Every word of the leaf's evidence."""
        return frozenset(t for p in self.passages for t in p.tokens)


@lru_cache(maxsize=100_000)
def _words(value: str) -> frozenset[str]:
    return frozenset(fold(value).split())


def verify(
    parsed: ParsedQuery,
    schema: TreeSchema,
    leaves: dict[str, LeafFacts],
    vocabulary: dict[str, list[str]],
    names: dict[str, str] | None = None,
) -> list[LeafMatch]:
    """Every leaf that satisfies every constraint of ``parsed``, by facets or by evidence.

    ``vocabulary``: the values of each key (a single-valued key's other values are rivals).
    A leaf satisfies a constraint when one of its facets is the value (identity after
    normalization, ``same_value_key``); otherwise, unless its facets state another value of
    a one-value key, when its evidence states it, not negated (:func:`evidence_source`).
    Similarity never decides it: a Junior role is not a Senior one however close the two
    labels' vectors are."""
    return ScopeLeaves.of(leaves).verify(parsed, schema, vocabulary, names)


def leaf_values(
    facts: LeafFacts, key: str, known: Sequence[str], cache: dict | None = None
) -> list[str]:
    """The values of ``key`` a leaf states, named as in ``known`` (the scope's values): its
    facets' values ("Senior Data Engineer" counts as "Data Engineer"; "Berlin" with
    "Germany" as "Berlin, Germany"), and what its evidence states that the facets missed (all
    of them for a multi-valued key; for a one-value key only when the facets have none and
    the evidence is unambiguous).

    ``cache``: where to keep what depends on ``key`` and ``known`` alone, for the next leaf
    (one dict per key and ``known``)."""
    cache = {} if cache is None else cache
    if "index" not in cache:
        cache["index"] = KnownValues(known)
    index = cache["index"]
    have = facts.values.get(key, [])
    multi = not one_valued(key)
    if multi:
        named = cache.setdefault("named", {})
        out = []
        for v in have:
            if v not in named:
                named[v] = _named_all(v, known, index)
            out += named[v]
    elif key == "location" and len(places := _places(have)) > 1:
        # A role open in two cities is in each ("Dublin" and "Amsterdam").
        out = list(dict.fromkeys(b for p in places if (b := _one_value([p], known, index))))
    else:
        ones = cache.setdefault("one", {})
        if (spelled := tuple(have)) not in ones:
            ones[spelled] = _one_value(have, known, index)
        out = [best] if (best := ones[spelled]) else []
    if out and not multi:
        return out
    present = facts.present
    rival_of = cache.setdefault("rivals", {})
    found = []
    for w in known:
        # Counting reads the evidence for every known value: only those whose words (or its
        # head's: "Toronto" of "Toronto, Canada") all occur in the leaf (typos are tolerated
        # when checking a question's constraint).
        if w in out or not any(present.issuperset(seq) for seq in _variants(w)):
            continue
        if w not in rival_of:
            rival_of[w] = [] if multi else index.rivals(w)
        if evidence_source(facts.passages, key, w, rival_of[w]):
            found.append(w)
    if not multi:
        # One place named twice ("Toronto" and "Toronto, Canada") is that place, by its
        # fullest name; a value another states and that states no other is a part of it.
        found = [
            w
            for w in found
            if not any(
                facet_states(o, w) and (not facet_states(w, o) or len(o) > len(w))
                for o in found
                if o != w
            )
        ]
        if len(found) > 1:
            found = []
    return list(dict.fromkeys(out + found))


def _named_all(value: str, known: Sequence[str], index: KnownValues | None = None) -> list[str]:
    """``value`` as ``known`` names it: itself, else every known value it states that no
    other one it states contains ("Go, AWS and Terraform" -> "Go", "AWS", "Terraform").

    ``index``: ``known``'s :class:`KnownValues`, when made already."""
    near = (index or KnownValues(known)).near(value) if fold(value) else known
    exact = [w for w in near if fold(w) == fold(value)]
    if exact:
        return exact[:1]
    stated = [w for w in near if _facet_states(value, w)]
    return [w for w in stated if not any(o != w and _facet_states(o, w) for o in stated)]


_COMPARE = {
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    "=": lambda a, b: a == b,
}


def _within(facts: LeafFacts, key: str, bound: Bound) -> bool:
    """Whether a leaf's number of ``key`` (its first) is within ``bound``; for a pay range,
    its top ("tops out above $150k")."""
    if key == "salary_range":
        # "tops out above $150k": the top; "starts at £60k or higher": the low end, of a
        # range in pounds (a band in euros is not compared with a sum in pounds)
        ranges = [
            r
            for v in facts.values.get(key, ())
            if (r := pay_range(v)) and _in_currency(facts, v, bound.currency)
        ]
        ends = [r[0] if bound.low else r[1] for r in ranges]
        return bool(ends) and _COMPARE[bound.op](ends[0], bound.amount)
    numbers = [int(m.group()) for v in facts.values.get(key, ()) if (m := re.match(r"\d+", v))]
    return bool(numbers) and _COMPARE[bound.op](numbers[0], bound.amount)


def _in_currency(facts: LeafFacts, value: str, code: str | None) -> bool:
    """Whether a pay range is in the currency ``code`` (any, for None): the one it is written
    in, else the leaf's currency facet; a leaf stating no currency may be in any."""
    if code is None:
        return True
    if said := currency_of(value):
        return said == code
    stated = facts.values.get("currency", ())
    return not stated or code in stated


_SUM = re.compile(r"(\d{1,3}(?:[,.'\u2019 ]\d{3})+|\d+(?:\.\d+)?)\s*([kK])?")


def pay_range(value: str) -> tuple[float, float] | None:
    """The low and the high end of a pay range as written ("USD 160000-180000", "$140-155k",
    "£34,500–£38,000", "CHF 95'000 - 110'000"); None when it states no two sums."""
    found = [
        (float(re.sub(r"[,.'\u2019 ](?=\d{3}\b)", "", m.group(1))), bool(m.group(2)))
        for m in _SUM.finditer(value)
    ]
    if len(found) < 2:
        return None
    (low, low_k), (high, high_k) = found[0], found[1]
    if high_k or (low_k and high < 1000):
        high *= 1000
    if low_k or (high_k and low < 1000):
        low *= 1000  # "$140-155k": the k is both ends'
    return low, high


def _places(values: Sequence[str]) -> list[str]:
    """Of a leaf's locations, those that are places apart: no one of them within another
    ("Berlin" and "Germany" are one place, "Dublin" and "Amsterdam" two)."""
    idents = {v: same_value_key("location", v) for v in values}
    return [
        v
        for v in values
        if not any(
            o != v
            and (_a_part_of("location", v, idents[o]) or _a_part_of("location", o, idents[v]))
            for o in values
        )
    ]


def _a_part_of(key: str, value: str, place: str) -> bool:
    """Whether a location ``value`` is within the place ``place`` names: a part of the city
    written after it ("Rotterdam Waalhaven" is in Rotterdam), or a city of that region or
    country ("Valence, Drôme, France" is in France)."""
    if key != "location":
        return False
    if same_value_key(key, value).startswith(place + " "):
        return True
    # "Valence, Drôme, France" is in France: a region or country written after the city;
    # "Denver, CO" is in the US (a state's country).
    # "Boston - Seaport manufacturing site" is at Seaport: a site named after the city.
    parts = re.split(r",|\s[-\u2013\u2014]\s", value)[1:]
    if any(fold(part) == place or fold(part).startswith(place + " ") for part in parts):
        return True
    return in_country_of(value, place)


#: Keys whose values are people: a person is named by part of their name ("Davide").
PERSON_KEYS = frozenset({"hiring_manager", "recruiter", "candidate"})


def _only_countries(key: str, values: Sequence[str]) -> bool:
    """Whether a leaf's locations name countries only ("UK"): a city the question names may
    be in one of them, as its documents say."""
    return key == "location" and all(country_code(v) for v in values)


def _names_person(value: str, named: str) -> bool:
    """Whether ``value`` is one person's name holding every word of ``named`` ("Davide
    Ferrante" for "Davide", and "Maja Ek, Cabin Services Manager" for "Maja Ek"; a list
    of a panel is no one person)."""
    value = person_of(value)
    words = fold(without_asides(value)).split()
    if "," in value or len(words) > 4:
        return False
    said = named.split()
    if set(said) <= set(words):
        return True
    # "A. Kalniņš" is Andris Kalniņš: the same last name, the first name by its initial
    return (
        len(said) >= 2
        and len(words) >= 2
        and said[-1] == words[-1]
        and len(words[0]) == 1
        and said[0][:1] == words[0]
    )


def one_valued(key: str) -> bool:
    """A key known to hold one value per leaf (a role has one location). Keys learned from
    the data are not assumed to: their other values are never taken for rivals."""
    return key in KEY_ORDER and key not in MULTI_KEYS


def about_role(key: str) -> bool:
    """A key known to describe the role (not a candidate): notes on candidates state it
    only with requirement words. Keys learned from the data may be about either."""
    return key in KEY_ORDER and key not in CANDIDATE_KEYS


def _one_value(
    values: Sequence[str], known: Sequence[str], index: KnownValues | None = None
) -> str | None:
    """The known value most of a leaf's facet values agree on: one that each states, or is
    the head of ("Berlin" is "Berlin, Germany"), or that several of them name together
    ("Berlin" and "Germany"); the fullest wins. A lone part that is not a head names only
    itself: "Germany" alone does not say which German city."""
    if not values:
        return None
    index = index or KnownValues(known)
    support: dict[str, int] = defaultdict(int)
    wider: set[str] = set()
    for w in index.near_any(values):  # the known values that can state one or be stated
        for v in values:
            if _facet_states(v, w):
                support[w] += 1
            elif _facet_states(w, v):
                support[w] += 1
                if fold(w.split(",")[0]) != fold(v):
                    wider.add(w)
    support = {w: n for w, n in support.items() if n > 1 or w not in wider}
    if not support:
        return None
    rank = index.rank  # the scope's most supported spelling first
    # Then the fullest spelling of the place ("Toronto, Canada" over "Toronto, CA"), not one
    # of its sites ("Rotterdam" over "Rotterdam, Maasstad research campus").
    return max(
        support,
        key=lambda w: (support[w], not names_a_site(w), len(fold(w).split()), len(w), -rank[w]),
    )


def distribution(
    leaves: dict[str, LeafFacts], pool: Sequence[str], key: str, known: Sequence[str]
) -> list[tuple[str, int]]:
    """How many leaves of ``pool`` state each value of ``key``, most first."""
    return ScopeLeaves.of(leaves).distribution(pool, key, known)


#: Keys whose values exclude each other for one leaf: a skill a leaf's facets give as nice
#: to have is not one its documents can make required, and the other way round.
_COUNTERPART = {"skill": "preferred_skill", "preferred_skill": "skill"}


class ScopeLeaves:
    """What verification knows of every leaf of one scope, indexed once per scope and table
    versions, so that a question reads only what it can concern: the leaves holding each
    facet value, the words of each leaf's evidence, and the values of a key each leaf states
    (:func:`leaf_values`, kept once counted). Gives what :func:`verify` and
    :func:`distribution` define, leaf for leaf."""

    def __init__(self, facts: dict[str, LeafFacts]):
        self.facts = facts
        self.leaves = sorted(facts)
        self._holders: dict[str, dict[str, list[str]]] | None = None
        self._words: frozenset[str] | None = None
        self._counted: dict[str, tuple[Sequence[str], dict, dict[str, list[str]]]] = {}

    @classmethod
    def of(cls, leaves: dict[str, LeafFacts] | ScopeLeaves) -> ScopeLeaves:
        return leaves if isinstance(leaves, ScopeLeaves) else cls(leaves)

    @classmethod
    def build(
        cls,
        values: dict[str, dict[str, list[str]]],
        passages: dict[str, list[Passage]],
        sources: dict[str, dict[tuple[str, str], tuple[str, ...]]] | None = None,
    ) -> ScopeLeaves:
        """From each leaf's facet values per key, evidence passages and the documents each
        facet value comes from."""
        sources = sources or {}
        return cls(
            {
                n: LeafFacts([], values.get(n, {}), passages.get(n, []), sources.get(n, {}))
                for n in set(values) | set(passages)
            }
        )

    def holders(self, key: str) -> dict[str, list[str]]:
        """Per facet value of ``key``, the leaves holding it."""
        if self._holders is None:
            holders: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
            for n in self.leaves:
                for k, values in self.facts[n].values.items():
                    for v in values:
                        holders[k][v].append(n)
            self._holders = {k: dict(v) for k, v in holders.items()}
        return self._holders.get(key, {})

    def words(self) -> frozenset[str]:
        """Every word of the scope's evidence."""
        if self._words is None:
            self._words = frozenset().union(*(f.present for f in self.facts.values()))
        return self._words

    def verify(
        self,
        parsed: ParsedQuery,
        schema: TreeSchema,
        vocabulary: dict[str, list[str]],
        names: Mapping[str, str] | None = None,
    ) -> list[LeafMatch]:
        """:func:`verify`. Evidence is read only in the leaves whose words may state the
        value (:meth:`_may_state`)."""
        wanted = constraints(parsed)
        if not wanted:
            return []
        survivors = [n for n in self.leaves if schema.is_leaf(n.split(":", 1)[0])]
        how: dict[str, list[str]] = {n: [] for n in survivors}
        stated: dict[str, list[str]] = {n: [] for n in survivors}  # the facet value, per how
        for _, m in wanted:
            if (bound := amount_bound(m.value)) is not None:
                # "more than 1" hire: the leaves whose number of it is within the bound.
                survivors = [n for n in survivors if _within(self.facts[n], m.key, bound)]
                for n in survivors:
                    how[n].append("facet")
                    stated[n].append("")
                continue
            # A facet states a constraint's value when it is that value (identity after
            # normalization: "Lisbon" is "Lisbon, Portugal"; "Mid-Senior level" is not
            # "Senior", Frontend is not Backend).
            stating: dict[str, str] = {}
            same = same_value_key(m.key, m.value)
            for v, holding in self.holders(m.key).items():
                if same_value_key(m.key, v) == same or _a_part_of(m.key, v, same):
                    stating.update((n, v) for n in holding if n not in stating)
                elif m.key in PERSON_KEYS and _names_person(v, same):
                    # "Davide" is Davide Ferrante
                    stating.update((n, v) for n in holding if n not in stating)
            # A country is stated in evidence by its name or by a place of the scope in it
            # ("Data Engineer (Toronto)" is in Canada).
            said = [m.value]
            if m.key == "location" and country_code(m.value):
                said += [v for v in vocabulary.get("location", []) if in_country_of(v, same)]
            readers = [(v, self._may_state(v)) for v in said]
            rivals: dict[str, list[str]] = {}
            kept = []
            for n in survivors:
                if n in stating:
                    how[n].append("facet")
                    stated[n].append(stating[n])
                    kept.append(n)
                    continue
                facts = self.facts[n]
                if m.key in YES_NO_KEYS or m.key in PERSON_KEYS:
                    # "yes" in a passage says nothing of a visa, a name in a note nothing of
                    # who manages the role ("Davide (guest interviewer)"): facets decide
                    continue
                held = facts.values.get(m.key)
                if held and one_valued(m.key) and not _only_countries(m.key, held):
                    # its facets state another value of a one-value key ("UK" is a country:
                    # its documents may name the city in it)
                    continue
                other = _COUNTERPART.get(m.key)
                if other and any(
                    same_value_key(other, v) == same for v in facts.values.get(other, ())
                ):
                    continue  # its facets say Go is nice to have: a mention does not require it
                for value, may_state in readers:
                    if not may_state(facts):
                        continue  # no words of it
                    if value not in rivals:
                        known = KnownValues(vocabulary.get(m.key, []))
                        rivals[value] = known.not_stating(value)
                    source = evidence_source(facts.passages, m.key, value, rivals[value])
                    if source is not None:
                        how[n].append(source)
                        stated[n].append("")
                        kept.append(n)
                        break
            survivors = kept
        met = tuple(m for _, m in wanted)
        return [
            LeafMatch(n, tuple(how[n]), (names or {}).get(n, n), met, tuple(stated[n]))
            for n in survivors
        ]

    def _may_state(self, value: str):
        """A test that is false for a leaf whose evidence cannot state ``value``
        (:func:`may_mention` over all its words)."""
        scope_words = self.words()
        needed = [[_near_words(w) & scope_words for w in seq] for seq in _variants(value)]

        def may_state(facts: LeafFacts) -> bool:
            if any(p.words is None for p in facts.passages):
                return True  # tokens tokenize did not make: read them all
            present = facts.present
            return any(all(not present.isdisjoint(near) for near in seq) for seq in needed)

        return may_state

    def distribution(
        self, pool: Sequence[str], key: str, known: Sequence[str]
    ) -> list[tuple[str, int]]:
        """:func:`distribution`, each leaf's values of ``key`` counted once per ``known``."""
        counts: dict[str, int] = defaultdict(int)
        for values in self.values_of(pool, key, known):
            for value in values:
                counts[value] += 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], fold(kv[0])))

    def countries(self, pool: Sequence[str], known: Sequence[str]) -> list[tuple[str, int]]:
        """How many leaves of ``pool`` are in each country, most first: each leaf's locations
        (``known``: the scope's) by the country each is in, a leaf counted once per country;
        a place of no known country is not counted."""
        counts: dict[str, int] = defaultdict(int)
        for values in self.values_of(pool, "location", known):
            for country in {c for v in values if (c := country_of_place(v))}:
                counts[country_name(country) or country] += 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], fold(kv[0])))

    def values_of(self, pool: Sequence[str], key: str, known: Sequence[str]) -> list[list[str]]:
        """Each leaf's values of ``key`` (:func:`leaf_values`), kept once read."""
        entry = self._counted.get(key)
        if entry is None or entry[0] is not known:
            entry = self._counted[key] = (known, {}, {})
        _, cache, counted = entry
        for leaf in pool:
            if leaf not in counted:
                counted[leaf] = leaf_values(self.facts[leaf], key, known, cache)
        return [counted[leaf] for leaf in pool]


class KnownValues:
    """The values of a key a scope knows (``known``, in its order), with an index of their
    words: the values that may state a text, or that it may state (:func:`facet_states`),
    are found without reading every value. Either needs a word of one :func:`_near` a word
    of the other, and two such words have a spelling in common with at most one letter left
    out of each (a swap of neighbours too: "dtaa" and "data" both make "dta")."""

    def __init__(self, known: Sequence[str]):
        self.known = known
        self._words = WordIndex.holding(known)
        self._positions: dict[str, list[int]] = {}
        for i, w in enumerate(known):
            self._positions.setdefault(w, []).append(i)

    @cached_property
    def rank(self) -> dict[str, int]:
        """Each value's (last) position."""
        return {w: i for i, w in enumerate(self.known)}

    def near_any(self, texts: Sequence[str]) -> list[str]:
        """The known values (as often as ``known`` lists them, in its order) sharing a word,
        up to a typo, with one of ``texts``: all that may state one of them or be stated."""
        hits = self._words.near([word for text in texts for word in fold(text).split()])
        positions = self._positions
        return [
            self.known[i] for i in sorted(i for w in hits if w in positions for i in positions[w])
        ]

    def near(self, text: str) -> list[str]:
        """:meth:`near_any` of one text."""
        return self.near_any([text])

    def rivals(self, value: str) -> list[str]:
        """The other known values that neither state ``value`` nor are stated by it."""
        close = set(self.near(value))
        return [
            r
            for r in self.known
            if r != value
            and (r not in close or not (_facet_states(r, value) or _facet_states(value, r)))
        ]

    def not_stating(self, value: str) -> list[str]:
        """The known values other than ``value`` (as folded) that do not state it."""
        folded = fold(value)
        if not folded:  # no words: only a value without words is the same
            return [r for r in self.known if fold(r)]
        close = set(self.near(value))
        return [
            r
            for r in self.known
            if r not in close or (fold(r) != folded and not _facet_states(r, value))
        ]


class WordIndex:
    """Per spelling :func:`_deletions` makes of a word, the values holding such a word, for
    every value indexed so far in this process: every scope offers the tree's values, each in
    its own order and with a few of its own, so each value is indexed once. Values are only
    ever added; past ``limit`` values a new index starts (those in use stay valid)."""

    limit = 500_000
    _current: WordIndex | None = None
    _guard = threading.Lock()

    def __init__(self) -> None:
        self._index: dict[str, set[str]] = defaultdict(set)
        self._values: set[str] = set()
        self._lock = threading.Lock()

    @classmethod
    def holding(cls, values: Sequence[str]) -> WordIndex:
        """The process's index, with ``values`` added."""
        with cls._guard:
            index = cls._current
            fresh = set(values) if index is None else set(values) - index._values
            if index is None or len(index._values) + len(fresh) > cls.limit:
                index = cls._current = WordIndex()
                fresh = set(values)
            index._add(fresh)
            return index

    def _add(self, values: set[str]) -> None:
        with self._lock:
            for value in values:
                for word in set(fold(value).split()):
                    for spelling in _deletions(word):
                        self._index[spelling].add(value)
            self._values |= values

    def near(self, words: Sequence[str]) -> set[str]:
        """The values with a word that may be :func:`_near` one of ``words``."""
        hits: set[str] = set()
        with self._lock:
            for word in words:
                for spelling in _deletions(word):
                    hits.update(self._index.get(spelling, ()))
        return hits


def _deletions(word: str) -> list[str]:
    """``word``, and for a word :func:`_near` may find a typo in (five letters or more) each
    spelling of it with one letter left out."""
    if len(word) < 5:
        return [word]
    return [word, *(word[:i] + word[i + 1 :] for i in range(len(word)))]


_LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"


@lru_cache(maxsize=20_000)
def _near_words(word: str) -> frozenset[str]:
    """Every word of letters and digits :func:`_near` to ``word``: itself and, for a word of
    five letters or more, those of five or more one edit (or one swap of neighbours) from it
    (each edit below makes a word :func:`_near` holds near; only the length is left to check)."""
    out = {word}
    if len(word) >= 5:
        n = len(word)
        for i in range(n + 1):
            for c in _LETTERS:
                out.add(word[:i] + c + word[i:])  # an insertion
                if i < n:
                    out.add(word[:i] + c + word[i + 1 :])  # a substitution
        for i in range(n):
            out.add(word[:i] + word[i + 1 :])  # a deletion
            if i + 1 < n:
                out.add(word[:i] + word[i + 1] + word[i] + word[i + 2 :])  # a swap
    return frozenset(w for w in out if w == word or len(w) >= 5)


@lru_cache(maxsize=200_000)
def _facet_states(facet_value: str, value: str) -> bool:
    return facet_states(facet_value, value)


def one_spelling(
    values: Sequence[str], misspelled: Mapping[str, frozenset[str]] | None = None
) -> list[str]:
    """``values`` (most supported first) without later misspellings of earlier ones
    ("Google Analtics" after "Google Analytics": same words, one edit apart).

    ``misspelled``: :func:`misspellings` of these values, when known (it does not depend on
    their order, so one computation serves every order of the same values)."""
    misspelled = misspellings(values) if misspelled is None else misspelled
    kept: list[str] = []
    seen: set[str] = set()
    for v in values:
        if misspelled[v].isdisjoint(seen):
            kept.append(v)
            seen.add(v)
    return kept


def misspellings(values: Sequence[str]) -> dict[str, frozenset[str]]:
    """Per value, the values it would be a misspelling of, had they come first: as many
    words, a length within one letter, stated by it (:func:`facet_states`)."""
    # One edit leaves the first or the last three letters as they were: compare only values
    # of as many words sharing one of them.
    blocks: dict[tuple, set[str]] = defaultdict(set)
    folded = {v: fold(v) for v in values}
    for v, f in folded.items():
        n = len(f.split())
        blocks[(n, "<", f[:3])].add(v)
        blocks[(n, ">", f[-3:])].add(v)
    out = {}
    for v, f in folded.items():
        n = len(f.split())
        alike = blocks[(n, "<", f[:3])] | blocks[(n, ">", f[-3:])]
        out[v] = frozenset(
            w for w in alike if abs(len(folded[w]) - len(f)) <= 1 and _facet_states(v, w)
        )
    return out


class ValueSetCache:
    """What building a scope's vocabulary derives from a set of values alone, kept for the
    next scope: every scope of a tree offers the tree's values (its own first, so in another
    order). The :func:`misspellings` of a key's values, and which values a key's aliases add
    (:func:`is_new_value`); at most ``size`` sets of each."""

    def __init__(self, size: int = 64):
        self.size = size
        self._misspelled: dict[frozenset[str], dict[str, frozenset[str]]] = {}
        self._indexes: dict[tuple[str, frozenset[str]], tuple[ValueIndex, dict[str, bool]]] = {}

    def one_spelling(self, values: Sequence[str]) -> list[str]:
        """:func:`one_spelling` of ``values``."""
        key = frozenset(values)
        if key not in self._misspelled:
            _bounded(self._misspelled, self.size)
            self._misspelled[key] = misspellings(values)
        return one_spelling(values, self._misspelled[key])

    def new_values(self, key: str, have: Sequence[str], offered: Sequence[str]) -> list[str]:
        """The ``offered`` values that are new next to ``have`` and ``offered`` together
        (:func:`is_new_value`)."""
        pool = (key, frozenset(have) | frozenset(offered))
        if pool not in self._indexes:
            _bounded(self._indexes, self.size)
            self._indexes[pool] = (ValueIndex([*have, *offered]), {})
        known, new = self._indexes[pool]
        for v in offered:
            if v not in new:
                new[v] = is_new_value(v, known, key)
        return [v for v in offered if new[v]]


def _bounded(cache: dict, size: int) -> None:
    """Make room for one more entry (the oldest goes)."""
    while len(cache) >= size:
        cache.pop(next(iter(cache)))


def is_new_value(value: str, known: ValueIndex, key: str = "") -> bool:
    """A value that is not a qualified form or a list of ``known`` values ("Senior Data
    Engineer" where "Data Engineer" is known; "Go, AWS and Terraform"), except, for a
    one-value key, the fuller name of two or more known parts ("Toronto, Canada" where
    "Toronto" and "Canada" are known: a question naming both means that one place)."""
    parts = known.parts(value)
    return not parts or (one_valued(key) and len(parts) >= 2)


_MACHINE_LABEL = re.compile(r"(?<!\S)[A-Za-z][\w-]*(?:[._][\w-]+)+:(?=\s|$)")
_WORD_LABEL = re.compile(r"(?<![\w.])((?:[A-Za-z][\w-]*\s){0,3}[A-Za-z][\w-]*):(?=\s|$)")


def without_labels(text: str) -> str:
    """``text`` with the names of its fields left out (each replaced by a colon): a value
    stated under a field is stated, the field's name is not ("job.remote_policy:" with no
    value says nothing about remote work; "Remote Type: Hybrid" states hybrid)."""
    text = _MACHINE_LABEL.sub(":", text)

    def drop(m: re.Match) -> str:
        words = m.group(1).split()
        for n in range(len(words), 0, -1):
            name = "_".join(fold(w) for w in words[-n:]).replace(" ", "_")
            if name in KEY_ALIASES:
                return " ".join(words[:-n]) + (" :" if len(words) > n else ":")
        return m.group(0)

    return _WORD_LABEL.sub(drop, text)


def group_passages(rows: dict[str, list]) -> dict[str, list[Passage]]:
    """Evidence rows (columns as lists) grouped per leaf, in passage order."""
    out: dict[str, list[Passage]] = defaultdict(list)
    ids = rows.get("passage_id") or [""] * len(rows["node_id"])
    for node, sources, text, kind, pid in zip(
        rows["node_id"], rows["source_ids"], rows["text"], rows["kind"], ids, strict=True
    ):
        tokens = tuple(tokenize(without_labels(text)))
        out[node].append(Passage(sources[0], kind, tokens, text, pid))
    return dict(out)
