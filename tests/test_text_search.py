"""Word search inside one scope (query.text_search): BM25 with the scope's own statistics."""

import math
import random
from collections import Counter

from query.text_search import K1, B, PassageIndex, terms

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


def reference_search(ids, fields, question, limit):
    """BM25 written word by word from ``terms``, the definition the index must equal."""
    query = list(dict.fromkeys(terms(question)))
    scores: dict[int, float] = {}
    for texts, boost in fields:
        counts = [Counter(terms(t)) for t in texts]
        lengths = [sum(c.values()) for c in counts]
        n, mean = len(texts), (sum(lengths) / len(lengths)) or 1.0
        for term in query:
            having = [i for i, c in enumerate(counts) if term in c]
            if not having:
                continue
            idf = math.log(1 + (n - len(having) + 0.5) / (len(having) + 0.5))
            for i in having:
                tf = counts[i][term]
                norm = tf + K1 * (1 - B + B * lengths[i] / mean)
                scores[i] = scores.get(i, 0.0) + boost * idf * tf * (K1 + 1) / norm
    return [ids[i] for i in sorted(scores, key=lambda i: (-scores[i], ids[i]))[:limit]]


def test_the_index_ranks_as_bm25_written_word_by_word():
    words = (
        "salary Salaries relocate relocating Dublin dublin's Zürich zurich the and of a "
        "kubernetes K8s 2024 engineer engineering déjà-vu naïve straße x" + "y" * 45
    ).split()
    for seed in range(20):
        rng = random.Random(seed)
        n = rng.randint(1, 60)
        texts = [" ".join(rng.choices(words, k=rng.randint(0, 30))) for _ in range(n)]
        contexts = [" ".join(rng.choices(words, k=rng.randint(0, 60))) for _ in range(n)]
        ids = [f"e{rng.randrange(10**6):06}-{i}" for i in range(n)]
        fields = [(texts, 1.0), (contexts, 0.5)]
        index = PassageIndex(ids, fields)
        for _ in range(5):
            question = " ".join(rng.choices(words, k=rng.randint(1, 6)))
            limit = rng.randint(1, 40)
            assert index.search(question, limit) == reference_search(ids, fields, question, limit)
