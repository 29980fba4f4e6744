"""Verdicts from log-odds: strict thresholds, the training guard rail, invalid thresholds."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.domain.decision import Decision, Reason, Thresholds, decide
from app.domain.verdict import Verdict

TRAINED = {"ham": 50, "spam": 50}
HAM, UNSURE, SPAM = (
    Decision(Verdict.HAM, None),
    Decision(Verdict.UNSURE, Reason.BETWEEN_THRESHOLDS),
    Decision(Verdict.SPAM, None),
)


@pytest.mark.parametrize(
    ("log_odds", "expected"),
    [
        (-math.inf, HAM),
        (-50.0, HAM),
        (math.nextafter(-2.0, -math.inf), HAM),
        (-2.0, UNSURE),  # on the ham threshold: not strictly below
        (0.0, UNSURE),
        (3.0, UNSURE),  # on the spam threshold: not strictly above
        (math.nextafter(3.0, math.inf), SPAM),
        (50.0, SPAM),
        (math.inf, SPAM),
    ],
)
def test_boundaries_are_strict(log_odds: float, expected: Decision) -> None:
    assert decide(log_odds, TRAINED, Thresholds(ham=-2.0, spam=3.0, min_messages=10)) == expected


@pytest.mark.parametrize(
    ("log_odds", "expected"),
    [(-1e-12, HAM), (0.0, UNSURE), (1e-12, SPAM)],
)
def test_equal_thresholds_leave_only_the_exact_value_unsure(
    log_odds: float, expected: Decision
) -> None:
    assert decide(log_odds, TRAINED, Thresholds(ham=0.0, spam=0.0, min_messages=1)) == expected


def test_nan_log_odds_is_unsure() -> None:
    decision = decide(math.nan, TRAINED, Thresholds(ham=-1.0, spam=1.0, min_messages=0))
    assert decision.verdict is Verdict.UNSURE


@pytest.mark.parametrize(
    "learned",
    [
        {"ham": 9, "spam": 50},
        {"ham": 50, "spam": 9},
        {"ham": 0, "spam": 0},
        {"ham": 0, "spam": 1000},
    ],
)
@pytest.mark.parametrize("log_odds", [-100.0, 0.0, 100.0])
def test_not_enough_training_is_unsure_whatever_the_score(
    learned: dict[str, int], log_odds: float
) -> None:
    decision = decide(log_odds, learned, Thresholds(ham=-1.0, spam=1.0, min_messages=10))
    assert decision == Decision(Verdict.UNSURE, Reason.NOT_ENOUGH_TRAINING)


def test_exactly_min_messages_is_enough() -> None:
    learned = {"ham": 10, "spam": 10}
    assert decide(100.0, learned, Thresholds(-1.0, 1.0, min_messages=10)) == SPAM


def test_min_messages_zero_still_needs_one_message_per_label() -> None:
    thresholds = Thresholds(-1.0, 1.0, min_messages=0)
    assert decide(100.0, {"ham": 0, "spam": 5}, thresholds).reason is Reason.NOT_ENOUGH_TRAINING
    assert decide(100.0, {"ham": 1, "spam": 1}, thresholds) == SPAM


@pytest.mark.parametrize(
    ("ham", "spam", "min_messages"),
    [(1.0, 0.0, 0), (0.0, -1e-9, 5), (0.0, 0.0, -1), (-1.0, 1.0, -10)],
)
def test_invalid_thresholds_raise(ham: float, spam: float, min_messages: int) -> None:
    with pytest.raises(ValueError):
        Thresholds(ham=ham, spam=spam, min_messages=min_messages)


@pytest.mark.parametrize(("ham", "spam"), [(math.nan, 1.0), (-1.0, math.nan)])
def test_nan_thresholds_raise(ham: float, spam: float) -> None:
    with pytest.raises(ValueError):
        Thresholds(ham=ham, spam=spam, min_messages=0)


finite = st.floats(-1e6, 1e6)


@given(finite, finite, finite, st.integers(0, 100), st.integers(0, 200), st.integers(0, 200))
def test_decide_is_monotone_and_total(
    a: float, b: float, log_odds: float, min_messages: int, hams: int, spams: int
) -> None:
    thresholds = Thresholds(ham=min(a, b), spam=max(a, b), min_messages=min_messages)
    decision = decide(log_odds, {"ham": hams, "spam": spams}, thresholds)
    if min(hams, spams) < max(min_messages, 1):
        assert decision == Decision(Verdict.UNSURE, Reason.NOT_ENOUGH_TRAINING)
    elif log_odds > thresholds.spam:
        assert decision == SPAM
    elif log_odds < thresholds.ham:
        assert decision == HAM
    else:
        assert decision == UNSURE
    assert (decision.reason is None) == (decision.verdict is not Verdict.UNSURE)
