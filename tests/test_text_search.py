"""Word search inside one scope (query.text_search): BM25 with the scope's own statistics."""

import random

from query.text_search import PassageIndex, terms

PASSAGES = {
    "e1": ("The client asked for a senior Rust engineer in Dublin.", "call with Dana"),
    "e2": ("Salary expectations were too high for the candidate.", "screening notes"),
    "e3": ("Candidates must be willing to relocate to Dublin.", "job brief"),
    "e4": ("We turned down two candidates over salary.", "weekly recap"),
    "e5": ("The office is in Dublin; hybrid, three days on site.", "job brief"),
}


def index(passages=PASSAGES):
    ids = list(passages)
    return PassageIndex(
        ids,
        [([passages[i][0] for i in ids], 1.0), ([passages[i][1] for i in ids], 0.5)],
    )


def test_words_are_folded_stemmed_and_stop_words_dropped():
    assert terms("The Candidates were RELOCATING to Zürich") == ["candid", "reloc", "zurich"]
    assert terms("") == []


def test_only_passages_sharing_a_word_with_the_question_are_found():
    assert index().search("salary", 10) == ["e2", "e4"]
    assert index().search("what about the weather", 10) == []


def test_a_rare_word_outranks_a_common_one():
    # "dublin" is in three passages, "relocate" in one: the passage naming both comes first.
    assert index().search("relocate to Dublin", 10)[0] == "e3"


def test_the_context_field_counts_with_its_boost():
    hits = index().search("screening", 10)
    assert hits == ["e2"]


def test_ranking_does_not_depend_on_the_order_passages_come_in():
    questions = ["salary candidates Dublin", "job brief Dublin", "senior Rust engineer"]
    expected = [index().search(q, 10) for q in questions]
    ids = list(PASSAGES)
    for seed in range(5):
        random.Random(seed).shuffle(ids)
        shuffled = {i: PASSAGES[i] for i in ids}
        assert [index(shuffled).search(q, 10) for q in questions] == expected


def test_equal_scores_are_ordered_by_id():
    same = {f"e{i}": ("identical passage about Kubernetes", "") for i in (3, 1, 2)}
    assert index(same).search("kubernetes", 10) == ["e1", "e2", "e3"]


def test_a_limit_keeps_the_best():
    full = index().search("Dublin salary candidates", 10)
    assert index().search("Dublin salary candidates", 2) == full[:2]


def test_a_word_weighs_by_how_rare_it_is_among_the_passages_indexed():
    """The statistics are those of the passages given (one scope's), not of a whole table:
    "salary" is rarer than "Dublin" here, so its passages come first; among fifty more
    passages about salary, "Dublin" is the rarer word and its passages come first."""
    assert index().search("salary Dublin", 2) == ["e2", "e4"]
    crowded = dict(PASSAGES, **{f"x{i:02}": ("salary band review", "") for i in range(50)})
    assert set(index(crowded).search("salary Dublin", 3)) == {"e1", "e3", "e5"}
