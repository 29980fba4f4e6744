"""Paired bootstrap of the difference between two runs over the same messages.

Each resample draws n messages with replacement; both runs are measured on that same draw,
which is what makes the comparison paired (a hard message drawn twice counts twice for A and
for B). A draw is a multiset, so it is kept as a weight (multiplicity) per message, and every
metric is computed from weights:

* 1-ROCA% (``WeightedRoc``): each run's scores are sorted once, O(n log n), with the bounds of
  every group of tied scores; each resample is then one O(n) pass: cumulative spam weight in
  score order, and for every ham its weight times the spam weight strictly below it plus half
  the spam weight tied with it. That is ``metrics.roc_area_above_pct`` on the expanded
  multiset, exactly (integer arithmetic until the final division).
* hm% / sm%: the weight of ham judged spam (spam not judged spam) over the weight of ham (spam).

The interval is the percentile interval of the B - A differences over the resamples (linear
interpolation between order statistics). All three metrics are error rates, so an interval
entirely below 0 means B is better and one entirely above 0 means B is worse. Resamples
in which a class is missing (possible only on tiny sets) give no difference and are dropped.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import add, mul

from app.evaluation.metrics import pct

METRICS = ("roca_1_pct", "hm_pct", "sm_pct")
CONFIDENCE_PCT = 95.0
B_BETTER = "B better"
B_WORSE = "B worse"
NO_DIFFERENCE = "no significant difference"
UNDEFINED = "undefined"


@dataclass(frozen=True, slots=True)
class Interval:
    """One metric of A and B on all messages, B - A, and its bootstrap interval."""

    a: float
    b: float
    diff: float
    low: float
    high: float
    resamples: int

    @property
    def verdict(self) -> str:
        """Whether the interval excludes 0, and on which side (lower is better)."""
        if math.isnan(self.low) or math.isnan(self.high):
            return UNDEFINED
        if self.high < 0:
            return B_BETTER
        if self.low > 0:
            return B_WORSE
        return NO_DIFFERENCE


@dataclass(frozen=True, slots=True)
class Side:
    """One run's answers for the paired messages: log-odds and spam decisions."""

    scores: Sequence[float]
    judged_spam: Sequence[bool]


def _tie_bounds(ordered: Sequence[float]) -> tuple[list[int], list[int]]:
    """For each position of sorted scores, the start and end (exclusive) of its tie group."""
    starts: list[int] = []
    ends: list[int] = []
    begin = 0
    for pos in range(1, len(ordered) + 1):
        if pos == len(ordered) or ordered[pos] != ordered[begin]:
            starts += [begin] * (pos - begin)
            ends += [pos] * (pos - begin)
            begin = pos
    return starts, ends


class WeightedRoc:
    """1-ROCA% of one run's scores for any message weights, O(n) per call after one sort.

    Weights are indexed by message and carry one extra 0 at index n (``weights[n] == 0``).
    """

    def __init__(self, is_spam: Sequence[bool], scores: Sequence[float]) -> None:
        n = len(scores)
        if any(math.isnan(s) for s in scores):
            raise ValueError("scores must not be NaN")
        order = sorted(range(n), key=scores.__getitem__)
        starts, ends = _tie_bounds([scores[i] for i in order])
        self._spam_at = [i if is_spam[i] else n for i in order]
        hams = [pos for pos, i in enumerate(order) if not is_spam[i]]
        self._ham = [order[pos] for pos in hams]
        self._ham_start = [starts[pos] for pos in hams]
        self._ham_end = [ends[pos] for pos in hams]

    def area_above_pct(self, weights: Sequence[int]) -> float:
        """100 * (1 - AUC) of the weighted messages; NaN when a class weighs nothing."""
        weight = weights.__getitem__
        below = [0, *accumulate(map(weight, self._spam_at))]
        ham_weights = list(map(weight, self._ham))
        n_spam, n_ham = below[-1], sum(ham_weights)
        if n_spam == 0 or n_ham == 0:
            return math.nan
        cum = below.__getitem__
        around = map(add, map(cum, self._ham_start), map(cum, self._ham_end))
        twice_lost: int = sum(map(mul, ham_weights, around))
        return 100.0 * twice_lost / (2 * n_spam * n_ham)


class _Measured:
    """The three compared metrics of one run for any message weights."""

    def __init__(self, is_spam: Sequence[bool], side: Side) -> None:
        if len(side.scores) != len(is_spam) or len(side.judged_spam) != len(is_spam):
            raise ValueError("every message needs a score and a decision")
        self._roc = WeightedRoc(is_spam, side.scores)
        pairs = list(zip(is_spam, side.judged_spam, strict=True))
        self._ham_errors = [i for i, (spam, judged) in enumerate(pairs) if judged and not spam]
        self._spam_errors = [i for i, (spam, judged) in enumerate(pairs) if spam and not judged]

    def metrics(self, weights: Sequence[int], n_spam: int, n_ham: int) -> tuple[float, ...]:
        weight = weights.__getitem__
        hm = pct(sum(map(weight, self._ham_errors)), n_ham)
        sm = pct(sum(map(weight, self._spam_errors)), n_spam)
        return self._roc.area_above_pct(weights), hm, sm


def percentile(ordered: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile of sorted values, linear between order statistics."""
    if not ordered:
        return math.nan
    pos = (len(ordered) - 1) * pct / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def draw_weights(rng: random.Random, n: int) -> list[int]:
    """A bootstrap draw of n messages as a multiplicity per message, plus the trailing 0."""
    weights = [0] * (n + 1)
    for index in rng.choices(range(n), k=n):
        weights[index] += 1
    return weights


def paired_bootstrap(
    is_spam: Sequence[bool],
    a: Side,
    b: Side,
    resamples: int = 1000,
    seed: int | str = 1,
    confidence_pct: float = CONFIDENCE_PCT,
) -> dict[str, Interval]:
    """1-ROCA%, hm% and sm% of A and B, and the paired bootstrap interval of B - A."""
    if not is_spam:
        raise ValueError("no messages to compare")
    spam_index = [i for i, spam in enumerate(is_spam) if spam]
    runs = (_Measured(is_spam, a), _Measured(is_spam, b))

    def measure(weights: Sequence[int]) -> list[tuple[float, ...]]:
        n_spam = sum(map(weights.__getitem__, spam_index))
        n_ham = sum(weights) - n_spam
        return [run.metrics(weights, n_spam, n_ham) for run in runs]

    point_a, point_b = measure([1] * len(is_spam) + [0])
    diffs = _resampled_differences(measure, len(is_spam), resamples, random.Random(seed))
    tail = (100.0 - confidence_pct) / 2
    intervals = {}
    for k, name in enumerate(METRICS):
        ordered = sorted(diffs[k])
        low, high = percentile(ordered, tail), percentile(ordered, 100.0 - tail)
        diff = point_b[k] - point_a[k]
        intervals[name] = Interval(point_a[k], point_b[k], diff, low, high, len(ordered))
    return intervals


def _resampled_differences(
    measure: Callable[[Sequence[int]], list[tuple[float, ...]]],
    n: int,
    resamples: int,
    rng: random.Random,
) -> list[list[float]]:
    """B - A of every metric over ``resamples`` draws (NaN differences left out)."""
    diffs: list[list[float]] = [[] for _ in METRICS]
    for _ in range(resamples):
        in_a, in_b = measure(draw_weights(rng, n))
        for k, (x, y) in enumerate(zip(in_a, in_b, strict=True)):
            if not (math.isnan(x) or math.isnan(y)):
                diffs[k].append(y - x)
    return diffs
