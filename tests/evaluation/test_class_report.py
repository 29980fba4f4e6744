"""The per-class block of a result: from rows, worked by hand, and pooled over seeds."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from app.evaluation.class_report import (
    class_block,
    has_classes,
    matrix_lines,
    pooled,
    pooled_lines,
)
from app.evaluation.corpus import CorpusItem
from app.evaluation.runner import Row


def row(position: int, item: CorpusItem, predicted: str, verdict: str) -> Row:
    return Row(position, item, 0.0, 0.5, verdict, None, 0.001, predicted=predicted)


def item(label: str, class_name: str, taught: str) -> CorpusItem:
    return CorpusItem(label, Path(f"/c/{class_name}"), class_name, taught)


EASY, HARD, SPAM = (
    item("ham", "easy_ham", "ham"),
    item("ham", "hard_ham", "ham"),
    item("spam", "spam", "spam"),
)
ROWS = [
    row(0, EASY, "ham", "ham"),
    row(1, EASY, "ham", "unsure"),
    row(2, HARD, "spam", "spam"),
    row(3, HARD, "ham", "ham"),
    row(4, SPAM, "spam", "spam"),
    row(5, SPAM, "", "unsure"),  # failed: no prediction
]


def test_the_block_of_a_three_class_run_worked_by_hand() -> None:
    assert has_classes(ROWS)
    assert not has_classes([row(0, item("ham", "ham", "ham"), "spam", "spam")])
    block = class_block(ROWS)
    assert block["corpus"] == {"easy_ham": 2, "hard_ham": 2, "spam": 2}
    assert block["learned_as"] == {"easy_ham": "ham", "hard_ham": "ham", "spam": "spam"}
    # The failed row is left out: 5 rows, corpus class x predicted class.
    assert block["confusion"] == {
        "rows": ["easy_ham", "hard_ham", "spam"],
        "columns": ["ham", "spam"],
        "counts": [[2, 0], [1, 1], [0, 1]],
    }
    # Learned as ham: 4, predicted ham 3 (all right); spam: 1, predicted spam 2 (1 right).
    ham, spam = block["per_class"]["ham"], block["per_class"]["spam"]
    assert (ham["precision_pct"], ham["recall_pct"]) == (100.0, 75.0)
    assert ham["f1_pct"] == pytest.approx(100 * 6 / 7)
    assert (spam["precision_pct"], spam["recall_pct"]) == (50.0, 100.0)
    assert spam["f1_pct"] == pytest.approx(100 * 2 / 3)
    assert block["macro_f1_pct"] == pytest.approx((100 * 6 / 7 + 100 * 2 / 3) / 2)
    assert block["verdicts"]["spam"] == {"spam": 1, "unsure": 1}


def test_seeds_pool_macro_f1_and_sum_the_verdicts() -> None:
    one = class_block(ROWS)
    two = class_block(ROWS[:4])  # easy and hard ham only
    both = pooled([one, two])
    assert both["macro_f1_pct"]["mean"] == pytest.approx(
        statistics.fmean([one["macro_f1_pct"], two["macro_f1_pct"]])
    )
    assert both["macro_f1_pct"]["sd"] == pytest.approx(
        statistics.stdev([one["macro_f1_pct"], two["macro_f1_pct"]])
    )
    assert both["verdicts"]["hard_ham"] == {"ham": 2, "spam": 2}
    assert both["verdicts"]["spam"] == {"spam": 1, "unsure": 1}
    lines = pooled_lines(both, 2)
    assert lines[0].startswith("macro-F1   ") and "mean over 2 seeds (sd " in lines[0]
    assert lines[2] == "           hard_ham   ham 50.00%, unsure 0.00%, spam 50.00% (all seeds)"
    assert pooled([one])["macro_f1_pct"]["sd"] is None


def test_the_matrix_columns_are_as_wide_as_their_names() -> None:
    matrix = {
        "rows": ["easy_ham", "a_rather_long_class_name"],
        "columns": ["ham", "hard_ham"],
        "counts": [[3893, 2], [40, 176]],
    }
    assert matrix_lines(matrix) == [
        "confusion  corpus \\ predicted             ham  hard_ham",
        "           easy_ham                      3893         2",
        "           a_rather_long_class_name        40       176",
    ]
