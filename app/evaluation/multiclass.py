"""Accuracy over more than two classes: confusion matrix, per-class precision and recall,
macro-F1. Pure functions of the gold and predicted classes; rates are percentages (0-100).

For a class c, with tp the messages of class c predicted c, fp those of another class
predicted c and fn those of class c predicted another class:

* precision% = 100 · tp / (tp + fp)   (NaN when nothing was predicted c)
* recall%    = 100 · tp / (tp + fn)   (NaN when no message is of class c)
* F1%        = 100 · 2tp / (2tp + fp + fn)   (0 when tp = 0: the class was missed)
* macro-F1%  = the mean of F1% over every class that is gold or predicted at least once

as scikit-learn's ``precision_recall_fscore_support`` and ``f1_score(average="macro")``
compute them (with zero_division=0 for F1).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from app.evaluation.metrics import pct


@dataclass(frozen=True, slots=True)
class Confusion:
    """Messages counted by gold class (rows) and predicted class (columns), both sorted."""

    rows: tuple[str, ...]
    columns: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]

    def count(self, gold: str, predicted: str) -> int:
        """Messages of class ``gold`` predicted ``predicted`` (0 for classes not in the table)."""
        if gold not in self.rows or predicted not in self.columns:
            return 0
        return self.counts[self.rows.index(gold)][self.columns.index(predicted)]


@dataclass(frozen=True, slots=True)
class ClassScores:
    """Precision, recall and F1 of one class in percent, and how many messages were of it
    (support) and predicted as it."""

    precision_pct: float
    recall_pct: float
    f1_pct: float
    support: int
    predicted: int


def _check(gold: Sequence[str], predicted: Sequence[str]) -> None:
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold classes but {len(predicted)} predictions")


def confusion(gold: Sequence[str], predicted: Sequence[str]) -> Confusion:
    """The confusion matrix: rows are the gold classes seen, columns the predicted ones."""
    _check(gold, predicted)
    pairs = Counter(zip(gold, predicted, strict=True))
    rows, columns = tuple(sorted(set(gold))), tuple(sorted(set(predicted)))
    counts = tuple(tuple(pairs[(g, p)] for p in columns) for g in rows)
    return Confusion(rows, columns, counts)


def class_scores(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, ClassScores]:
    """Per class (gold or predicted at least once, sorted): precision, recall, F1."""
    _check(gold, predicted)
    right = Counter(g for g, p in zip(gold, predicted, strict=True) if g == p)
    support, guessed = Counter(gold), Counter(predicted)
    scores: dict[str, ClassScores] = {}
    for name in sorted(set(support) | set(guessed)):
        tp = right[name]
        fp, fn = guessed[name] - tp, support[name] - tp
        scores[name] = ClassScores(
            precision_pct=pct(tp, guessed[name]),
            recall_pct=pct(tp, support[name]),
            f1_pct=pct(2 * tp, 2 * tp + fp + fn),
            support=support[name],
            predicted=guessed[name],
        )
    return scores


def macro_f1_pct(scores: dict[str, ClassScores]) -> float:
    """The unweighted mean of the classes' F1% (NaN for no class)."""
    if not scores:
        return math.nan
    return sum(s.f1_pct for s in scores.values()) / len(scores)
