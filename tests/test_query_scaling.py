"""What keeps a question fast in a huge scope gives the answers the plain loops give."""

from __future__ import annotations

from collections import defaultdict

import pytest

from hltm_resources.engines.base import ScopeVocabulary
from hltm_resources.engines.extractive import questions
from hltm_resources.engines.extractive.questions import _stated_values, _value_matches

VALUES = {
    "skill": ["C++", "C#", "C", "Go", "AWS", "A/B Testing", "Node.js", "Excel", "R"],
    "title": ["Data Engineer", "Senior Data Engineer", "Box", "Lead", "Registered Nurse"],
    "location": ["Lisbon, Portugal", "New York, New York", "São Paulo", "Austin"],
    "rejection_reason": ["salary expectations too high", "not willing to relocate"],
    "data_type": ["jobs"],
    "project_count": ["12"],
    "odd": ["++", "#", "", "!!"],
}


def brute_force(question: str, vocabulary: ScopeVocabulary) -> dict[str, list]:
    """Every value tried against the question, as parsing did before it had an index."""
    q_folded = questions.fold(question)
    matched: dict[str, list] = defaultdict(list)
    for key, values in vocabulary.values.items():
        if key in vocabulary.count_keys:
            continue
        for value in values:
            if questions._singular(questions.fold(value)) in questions._LEAF_NOUNS:
                continue
            score = _value_matches(value, q_folded.split(), q_folded)
            if score:
                matched[key].append((score, value))
    return matched


@pytest.mark.parametrize(
    "question",
    [
        "Which searches need C++ or C#?",
        "Which roles ask for Cs?",
        "Who hired Data Engineers in Lisbon?",
        "Senior data engineer boxes in Sao Paulo",
        "Which projects were rejected for salary expectations that were too high?",
        "Salary too high expectations, relocate?",
        "A/B testings and node.js in Austin",
        "Go goes gos AWSes",
        "++ and # and R",
        "Jobs in New York",
        "12 projects",
        "",
    ],
)
def test_the_value_lookup_finds_what_trying_every_value_finds(question):
    vocab = ScopeVocabulary(dict(VALUES), ("project_count",))
    expected = brute_force(question, vocab)
    got = _stated_values(question, vocab)
    expected.pop("workplace_type", None)
    got.pop("workplace_type", None)
    assert dict(got) == dict(expected)
    assert list(got) == list(expected)  # the same keys first: ties keep their order
