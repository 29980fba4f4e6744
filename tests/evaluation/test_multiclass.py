"""Confusion matrix, per-class precision/recall/F1 and macro-F1: worked by hand, then
against scikit-learn as the oracle."""

from __future__ import annotations

import math
import random

import pytest
from sklearn.metrics import confusion_matrix, f1_score, precision_recall_fscore_support

from app.evaluation.multiclass import class_scores, confusion, macro_f1_pct

# Six messages of three classes: (gold, predicted) = (a,a) (a,a) (a,b) (b,b) (b,c) (c,c).
GOLD = ["a", "a", "a", "b", "b", "c"]
PREDICTED = ["a", "a", "b", "b", "c", "c"]


def test_the_confusion_matrix_counts_gold_rows_and_predicted_columns() -> None:
    matrix = confusion(GOLD, PREDICTED)
    assert (matrix.rows, matrix.columns) == (("a", "b", "c"), ("a", "b", "c"))
    assert matrix.counts == ((2, 1, 0), (0, 1, 1), (0, 0, 1))
    assert matrix.count("a", "b") == 1 and matrix.count("x", "a") == 0


def test_per_class_scores_worked_by_hand() -> None:
    scores = class_scores(GOLD, PREDICTED)
    # a: tp 2, fp 0, fn 1 -> P 2/2, R 2/3, F1 4/5.
    assert scores["a"].precision_pct == pytest.approx(100.0)
    assert scores["a"].recall_pct == pytest.approx(200 / 3)
    assert scores["a"].f1_pct == pytest.approx(80.0)
    # b: tp 1, fp 1, fn 1 -> P 1/2, R 1/2, F1 2/4.
    assert (scores["b"].precision_pct, scores["b"].recall_pct) == (50.0, 50.0)
    assert scores["b"].f1_pct == pytest.approx(50.0)
    # c: tp 1, fp 1, fn 0 -> P 1/2, R 1/1, F1 2/3.
    assert (scores["c"].precision_pct, scores["c"].recall_pct) == (50.0, 100.0)
    assert scores["c"].f1_pct == pytest.approx(200 / 3)
    assert [(s.support, s.predicted) for s in scores.values()] == [(3, 2), (2, 2), (1, 2)]
    # macro-F1: (80 + 50 + 66.67) / 3.
    assert macro_f1_pct(scores) == pytest.approx((80 + 50 + 200 / 3) / 3)


def test_a_class_only_predicted_has_no_recall_and_counts_zero_in_macro_f1() -> None:
    scores = class_scores(["a", "a"], ["a", "d"])
    assert math.isnan(scores["d"].recall_pct)
    assert (scores["d"].precision_pct, scores["d"].f1_pct) == (0.0, 0.0)
    assert math.isnan(class_scores(["a", "b"], ["a", "a"])["b"].precision_pct)
    assert macro_f1_pct(scores) == pytest.approx((200 / 3 + 0) / 2)


def test_empty_and_mismatched_inputs() -> None:
    assert math.isnan(macro_f1_pct(class_scores([], [])))
    with pytest.raises(ValueError, match="2 gold classes but 1"):
        confusion(["a", "b"], ["a"])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_agrees_with_scikit_learn(seed: int) -> None:
    rng = random.Random(seed)
    names = ["ham", "newsletter", "phishing", "spam"]
    gold = [rng.choice(names[:3]) for _ in range(300)]
    # Mostly right, sometimes any class: spam is only ever predicted (its recall undefined).
    predicted = [g if rng.random() < 0.7 else rng.choice(names) for g in gold]
    labels = sorted(set(gold) | set(predicted))
    square = confusion_matrix(gold, predicted, labels=labels)  # every label a row and column
    matrix = confusion(gold, predicted)
    assert matrix.rows == tuple(names[:3]) and matrix.columns == tuple(labels)
    assert matrix.counts == tuple(tuple(int(n) for n in square[i]) for i in range(3))
    ours = class_scores(gold, predicted)
    precision, recall, _, support = precision_recall_fscore_support(
        gold, predicted, labels=labels, zero_division=math.nan
    )
    for i, name in enumerate(labels):
        for mine, theirs in (
            (ours[name].precision_pct, precision[i]),
            (ours[name].recall_pct, recall[i]),
        ):
            assert (math.isnan(mine) and math.isnan(theirs)) or mine == pytest.approx(100 * theirs)
        assert ours[name].support == support[i]
    _, _, f1_zero, _ = precision_recall_fscore_support(
        gold, predicted, labels=labels, zero_division=0.0
    )
    assert [ours[name].f1_pct for name in labels] == pytest.approx(list(100 * f1_zero))
    macro = f1_score(gold, predicted, average="macro", zero_division=0.0)
    assert macro_f1_pct(ours) == pytest.approx(100 * macro)
