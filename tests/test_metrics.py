"""Metric functions against values computed by hand."""

import math

import pytest

from query.evaluation.metrics import (
    bleu1,
    entity_recall,
    leakage,
    mean_sem,
    normalize_dia_ids,
    percentile,
    prf,
    recall_at_k,
    token_f1,
)


def test_token_f1_by_hand():
    # pred tokens: dublin ireland 9 projects (4); gold: dublin 9 of 12 projects (5);
    # overlap dublin, 9, projects = 3 -> P 3/4, R 3/5, F1 = 2 * .75 * .6 / 1.35 = 2/3
    assert token_f1("Dublin, Ireland: 9 projects", "Dublin 9 of 12 projects") == pytest.approx(
        2 / 3
    )
    assert token_f1("the answer", "an answer") == 1.0  # articles are dropped
    assert token_f1("", "") == 1.0 and token_f1("x", "y") == 0.0


def test_bleu1_by_hand():
    # pred: dublin dublin lisbon (3), gold: dublin paris (2): clipped overlap 1 -> P = 1/3;
    # pred longer than gold -> no brevity penalty
    assert bleu1("Dublin Dublin Lisbon", "Dublin Paris") == pytest.approx(1 / 3)
    # pred: dublin (1), gold: dublin paris lisbon (3): P = 1, BP = exp(1 - 3/1)
    assert bleu1("Dublin", "Dublin Paris Lisbon") == pytest.approx(math.exp(-2))


@pytest.mark.parametrize(
    "pred,gold,expected",
    [
        (["a", "b", "c"], ["b", "c", "d", "e"], (2 / 3, 2 / 4, 2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))),
        ([], [], (1.0, 1.0, 1.0)),
        (["a"], [], (0.0, 1.0, 0.0)),
        ([], ["a"], (1.0, 0.0, 0.0)),
        (["a", "a"], ["a"], (1.0, 1.0, 1.0)),
    ],
)
def test_precision_recall_f1(pred, gold, expected):
    assert prf(pred, gold) == pytest.approx(expected)


def test_leakage_by_hand():
    assert leakage(["p1", "p2", "x9", "x8"], {"p1", "p2"}) == (True, 0.5)
    assert leakage([], {"p1"}) == (False, 0.0)
    assert leakage(["p1"], {"p1"}) == (False, 0.0)


def test_entity_recall_needs_whole_entities():
    assert entity_recall(
        "Mostly Data Engineer roles in Dublin", ["Data Engineer", "Dublin", "Lisbon"]
    ) == pytest.approx(2 / 3)
    assert entity_recall("Engineering", ["Engineer"]) == 0.0


def test_recall_at_k_counts_distinct_ids():
    ranked = ["D1:1", "D1:1", "D1:2", "D2:5", "D3:1"]
    assert recall_at_k(ranked, ["D1:2", "D3:1"], 2) == 0.5
    assert recall_at_k(ranked, ["D1:2", "D3:1"], 4) == 1.0
    assert recall_at_k(ranked, [], 1) == 1.0


def test_malformed_evidence_ids_are_normalized_and_counted():
    known = {"D8:6", "D9:17", "D11:26", "D30:5", "D1:3"}
    ids, bad = normalize_dia_ids(
        ["D8:6; D9:17", "D:11:26", "D30:05", "D1:3", "D99:1", "oops"], known
    )
    assert ids == ["D8:6", "D9:17", "D11:26", "D30:5", "D1:3"]
    assert bad == 2  # D99:1 is unknown, "oops" is malformed
    assert recall_at_k(["D30:5", "D1:3"], ids, 2) == pytest.approx(2 / 5)


def test_mean_sem_and_percentile_by_hand():
    mean, sem = mean_sem([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5 and sem == pytest.approx(math.sqrt(((1.5**2 + 0.5**2) * 2 / 3) / 4))
    assert percentile([10, 20, 30, 40], 50) == 25
    assert percentile([10, 20, 30, 40], 95) == pytest.approx(38.5)
