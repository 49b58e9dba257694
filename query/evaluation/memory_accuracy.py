"""Memory accuracy: the facts stored at leaves against the generator's latent truth.

A generated world knows what each project really is (:class:`ProjectTruth`: title,
seniority, location, workplace type, skills, rejection reasons), so each stored leaf facet of
those attributes is either true of its project or not. Precision is the share of stored facts
that are true; recall the share of true facts stored (under their canonical key). A stored
facet of another key (an employment type, an export field no alias explains) is not scored,
and reported as such. A value a brief *negated* ("the role is not based in Toronto") that is
stored as a fact of its project is counted on its own: it must be zero.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from hltm_resources.text import fold

#: Stored key -> the truth attribute it is scored against.
SCORED = {
    "title": "title",
    "seniority": "seniority",
    "location": "location",
    "workplace_type": "workplace_type",
    "skill": "skills",
    "rejection_reason": "rejection_reasons",
}


def same_place(a: str, b: str) -> bool:
    """Two names of one place: equal, or the same city before a comma ("New York" and "New
    York, New York")."""
    return fold(a) == fold(b) or fold(a.split(",")[0]) == fold(b.split(",")[0])


def is_true(key: str, value: str, truth) -> bool:
    """Whether ``key: value`` is true of the project ``truth`` describes."""
    attribute = SCORED[key]
    expected = getattr(truth, attribute)
    if key == "location":
        return same_place(value, expected)
    if isinstance(expected, tuple):
        return fold(value) in {fold(x) for x in expected}
    return fold(value) == fold(expected)


@dataclass
class MemoryAccuracy:
    """Counts over every leaf of a world (see the module docstring)."""

    stored: int = 0
    true: int = 0
    truths: int = 0
    recalled: int = 0
    unscored: int = 0
    negated_stored: int = 0
    per_key: dict[str, list[int]] = field(default_factory=dict)  # key -> [stored, true]
    per_key_recall: dict[str, list[int]] = field(default_factory=dict)  # key -> [truths, found]
    wrong: list[tuple[str, str, str]] = field(default_factory=list)
    unscored_keys: Counter = field(default_factory=Counter)

    @property
    def precision(self) -> float:
        return self.true / self.stored if self.stored else 1.0

    @property
    def recall(self) -> float:
        return self.recalled / self.truths if self.truths else 1.0

    def as_dict(self) -> dict:
        return {
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "stored_facts": self.stored,
            "true_facts": self.true,
            "truth_facts": self.truths,
            "recalled_facts": self.recalled,
            "negated_values_stored": self.negated_stored,
            "unscored_facts": self.unscored,
            "unscored_keys": dict(self.unscored_keys.most_common(10)),
            "per_key": {
                k: {
                    "stored": self.per_key.get(k, [0, 0])[0],
                    "precision": _ratio(*reversed(self.per_key.get(k, [0, 0]))),
                    "recall": _ratio(*reversed(self.per_key_recall.get(k, [0, 0]))),
                }
                for k in SCORED
            },
            "wrong_examples": [list(w) for w in self.wrong[:20]],
        }


def memory_accuracy(
    facets: Mapping[str, Iterable[tuple[str, str]]],
    truth: Mapping[str, object],
    negated: Mapping[str, Iterable[dict]] | None = None,
) -> MemoryAccuracy:
    """Score ``facets`` (per project id, its stored leaf facets as ``(key, value)``) against
    ``truth`` (per project id, a :class:`ProjectTruth`); ``negated``: per project id, the
    values its documents negate (a world's ``annotations[...]["negated"]``)."""
    out = MemoryAccuracy()
    for pid, t in truth.items():
        stored = list(facets.get(pid, ()))
        for key, value in stored:
            if key not in SCORED:
                out.unscored += 1
                out.unscored_keys[key] += 1
                continue
            ok = is_true(key, value, t)
            out.stored += 1
            out.true += ok
            counts = out.per_key.setdefault(key, [0, 0])
            counts[0] += 1
            counts[1] += ok
            if not ok:
                out.wrong.append((pid, key, value))
        for key, attribute in SCORED.items():
            expected = getattr(t, attribute)
            for value in expected if isinstance(expected, tuple) else (expected,):
                found = any(k == key and _names(k, v, value) for k, v in stored)
                out.truths += 1
                out.recalled += found
                counts = out.per_key_recall.setdefault(key, [0, 0])
                counts[0] += 1
                counts[1] += found
        for item in (negated or {}).get(pid, ()):
            key = item["attribute"]
            if any(k == key and _names(k, v, item["value"]) for k, v in stored):
                out.negated_stored += 1
    return out


def _names(key: str, stored: str, value: str) -> bool:
    return same_place(stored, value) if key == "location" else fold(stored) == fold(value)


def _ratio(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 1.0
