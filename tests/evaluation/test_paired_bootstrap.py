"""The paired bootstrap: weighted 1-ROCA% against the exact all-pairs metric on the expanded
multiset, percentiles, and intervals for identical, better and worse runs."""

from __future__ import annotations

import math
import random

import pytest

from app.evaluation.metrics import roc_area_above_pct
from app.evaluation.paired_bootstrap import (
    B_BETTER,
    B_WORSE,
    NO_DIFFERENCE,
    Side,
    WeightedRoc,
    draw_weights,
    paired_bootstrap,
    percentile,
)


def _expanded(
    is_spam: list[bool], scores: list[float], weights: list[int]
) -> tuple[list[float], list[float]]:
    spam: list[float] = []
    ham: list[float] = []
    for spam_label, score, weight in zip(is_spam, scores, weights, strict=False):
        (spam if spam_label else ham).extend([score] * weight)
    return spam, ham


@pytest.mark.parametrize("case", range(20))
def test_weighted_roca_is_the_metric_of_the_expanded_multiset(case: int) -> None:
    rng = random.Random(case)
    n = rng.randint(2, 60)
    is_spam = [rng.random() < 0.4 for _ in range(n)]
    # Few distinct values, so tie groups of spam and ham are common.
    scores = [float(rng.randint(-4, 4)) + (1.0 if s else 0.0) for s in is_spam]
    weights = draw_weights(rng, n)
    expected = roc_area_above_pct(*_expanded(is_spam, scores, weights))
    got = WeightedRoc(is_spam, scores).area_above_pct(weights)
    assert got == pytest.approx(expected, nan_ok=True, rel=1e-12)


def test_unit_weights_give_the_plain_metric_and_an_empty_class_gives_nan() -> None:
    is_spam = [True, True, False, False, True]
    scores = [3.0, 1.0, 1.0, 2.0, 0.5]
    roc = WeightedRoc(is_spam, scores)
    plain = roc_area_above_pct([3.0, 1.0, 0.5], [1.0, 2.0])
    assert roc.area_above_pct([1, 1, 1, 1, 1, 0]) == plain
    assert math.isnan(roc.area_above_pct([1, 1, 0, 0, 1, 0]))  # no ham drawn
    assert roc.area_above_pct([0, 0, 1, 1, 1, 0]) == 100.0  # the lowest spam alone
    with pytest.raises(ValueError, match="NaN"):
        WeightedRoc([True], [math.nan])


def test_a_draw_is_n_messages_with_replacement() -> None:
    weights = draw_weights(random.Random(5), 50)
    assert len(weights) == 51 and weights[-1] == 0 and sum(weights) == 50
    assert max(weights) > 1  # some message drawn twice (all but certain for n = 50)


def test_percentiles_interpolate_between_order_statistics() -> None:
    values = [0.0, 1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 0) == 0.0 and percentile(values, 100) == 4.0
    assert percentile(values, 50) == 2.0 and percentile(values, 2.5) == pytest.approx(0.1)
    assert percentile([7.0], 97.5) == 7.0 and math.isnan(percentile([], 50))


def _separated(rng: random.Random, is_spam: list[bool], gap: float) -> list[float]:
    return [rng.gauss(gap if spam else -gap, 1.0) for spam in is_spam]


def _labels(n: int) -> list[bool]:
    return [i % 3 == 0 for i in range(n)]


def test_identical_runs_differ_by_exactly_zero() -> None:
    is_spam = _labels(300)
    scores = _separated(random.Random(1), is_spam, 1.0)
    side = Side(scores, [s > 0 for s in scores])
    intervals = paired_bootstrap(is_spam, side, side, resamples=200, seed=3)
    assert set(intervals) == {"roca_1_pct", "hm_pct", "sm_pct"}
    for interval in intervals.values():
        assert (interval.diff, interval.low, interval.high) == (0.0, 0.0, 0.0)
        assert interval.a == interval.b and interval.verdict == NO_DIFFERENCE
        assert interval.resamples == 200


def test_a_clearly_better_run_is_found_better_and_the_reverse_worse() -> None:
    rng = random.Random(2)
    is_spam = _labels(600)
    weak, strong = _separated(rng, is_spam, 0.7), _separated(rng, is_spam, 2.5)
    a, b = Side(weak, [s > 0 for s in weak]), Side(strong, [s > 0 for s in strong])
    forward = paired_bootstrap(is_spam, a, b, resamples=300, seed=1)
    for interval in forward.values():
        assert interval.diff < 0 and interval.low <= interval.diff <= interval.high < 0
        assert interval.verdict == B_BETTER
    roca = forward["roca_1_pct"]
    assert roca.a == pytest.approx(roc_area_above_pct(*_split(is_spam, weak)))
    backward = paired_bootstrap(is_spam, b, a, resamples=300, seed=1)
    assert backward["roca_1_pct"].verdict == B_WORSE
    assert backward["roca_1_pct"].diff == pytest.approx(-roca.diff)


def _split(is_spam: list[bool], scores: list[float]) -> tuple[list[float], list[float]]:
    return _expanded(is_spam, scores, [1] * len(scores))


def test_the_bootstrap_is_reproducible_and_seeded() -> None:
    rng = random.Random(4)
    is_spam = _labels(120)
    a = _separated(rng, is_spam, 1.0)
    b = [x + rng.gauss(0, 0.5) for x in a]
    side_a, side_b = Side(a, [x > 0 for x in a]), Side(b, [x > 0 for x in b])
    first = paired_bootstrap(is_spam, side_a, side_b, resamples=100, seed=9)
    assert paired_bootstrap(is_spam, side_a, side_b, resamples=100, seed=9) == first
    other = paired_bootstrap(is_spam, side_a, side_b, resamples=100, seed=10)
    assert other["roca_1_pct"].low != first["roca_1_pct"].low
    assert other["roca_1_pct"].diff == first["roca_1_pct"].diff


def test_misshapen_input_is_refused() -> None:
    with pytest.raises(ValueError, match="no messages"):
        paired_bootstrap([], Side([], []), Side([], []))
    with pytest.raises(ValueError, match="a score and a decision"):
        paired_bootstrap([True, False], Side([1.0], [True]), Side([1.0, 0.0], [True, False]))
