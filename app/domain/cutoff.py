"""The spam cut-off from the model's own ham scores: where a set share of ham lies above it.

Naive Bayes log-odds are not calibrated: the same cut-off in nats loses a different share of
ham on different mail (on the SpamAssassin corpus 0.3 % of ham scores above 8 nats, on the
Enron mailboxes 0.05 %). What a site does know is how its own ham scored: each ham message
that feedback brings is scored before it is learned. Those scores are kept as a histogram
(``ScoreHistogram``), and the cut-off is the lowest one above which at most ``ham_rate`` of
them lie, kept between a floor and a ceiling:

    cut = min{c in [floor, ceiling] : #(ham with score > c) <= ham_rate * n},

and the ceiling until ``min_ham`` ham messages have been scored. The estimate is
conservative: a bin that straddles ``c`` counts as wholly above it. Feedback is rarely a
fair sample of a site's mail (corrections are the hard cases), which moves the estimate
towards the ceiling, the safe side.

The ceiling is a starting point, not a wall. Where the site's ham lies higher (long,
header-rich server mail scores more nats either way), k of the n ham scored above the
ceiling while at most ham_rate * n may. Once so many lie above it that a loss of ham_rate
would give k or more with probability below ``1 - confidence`` (a one-sided binomial test,
``binomial_upper_critical``), the ceiling is evidently too low, and the cut-off rises past
it by the same rule:

    cut = min{c > ceiling : #(ham with score > c) <= ham_rate * n}.

A few odd ham above the ceiling (mislabelled, or spam-like newsletters) do not move it: on a
stream where 0.08 % of the ham scores above 15 nats chasing each of them would leave 2-4 %
of the spam unsure; a stream where 0.25 % do is past the test within a few thousand ham.

Pure functions; the histogram is stored per model by ``app.storage.calibration``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# Bins of half a nat from 0 to 40 nats; bin 0 holds every score below 0 and the last bin
# every score of 40 or more. A cut-off is never wanted outside [0, 40].
STEP = 0.5
TOP = 40.0
BINS = int(TOP / STEP) + 2
# Once this many ham scores are held, every bin is halved, so old scores fade and a model
# that has changed is judged by its recent mail.
HALVE_AT = 20_000


def score_bin(log_odds: float) -> int:
    """The histogram bin of a score: 0 below 0 nats, then one per ``STEP``, the last open."""
    if math.isnan(log_odds) or log_odds < 0:
        return 0
    if log_odds >= TOP:
        return BINS - 1
    return 1 + int(log_odds / STEP)


def _bin_top(index: int) -> float:
    """The score every score of bin ``index`` is below (the last bin: none)."""
    return math.inf if index == BINS - 1 else index * STEP


@dataclass(frozen=True, slots=True)
class Calibration:
    """How the cut-off is chosen: ``ham_rate`` is a fraction (0.001 is 0.1 %)."""

    floor: float
    ceiling: float
    ham_rate: float
    min_ham: int
    # How sure the ham above the ceiling must show it to be too low before the cut-off rises
    # past it; 0 keeps the cut-off at or below the ceiling (the rule before it could rise).
    confidence: float = 0.0

    def __post_init__(self) -> None:
        if math.isnan(self.floor) or math.isnan(self.ceiling):
            raise ValueError("cut-offs must be numbers, not NaN")
        if not 0 <= self.ham_rate < 1:
            raise ValueError("ham_rate must be in [0, 1)")
        if not 0 <= self.confidence < 1:
            raise ValueError("confidence must be in [0, 1)")
        if self.min_ham < 0:
            raise ValueError("min_ham must be >= 0")


def spam_cutoff(histogram: Sequence[int], calibration: Calibration) -> float:
    """The spam cut-off (nats) for ham scores ``histogram`` (``BINS`` counts, or none yet).

    The ceiling below ``floor`` is the floor: a site that sets a floor above the default
    ceiling gets that fixed cut-off.
    """
    floor = calibration.floor
    ceiling = max(calibration.ceiling, floor)
    scored = sum(histogram)
    if scored == 0 or scored < calibration.min_ham:
        return ceiling
    if len(histogram) != BINS:
        raise ValueError(f"a score histogram has {BINS} bins, not {len(histogram)}")
    allowed = calibration.ham_rate * scored
    candidates = [floor, *(i * STEP for i in range(BINS) if floor < i * STEP < ceiling), ceiling]
    # above[i]: the scores in bins i and up. Bin tops rise with i, so the bins that hold any
    # score above a cut-off (their upper edge is above it) are those from the first such bin
    # on; candidates rise too, so that bin is found in one pass (O(BINS), not per candidate).
    above = [0] * (BINS + 1)
    for index in range(BINS - 1, -1, -1):
        above[index] = above[index + 1] + histogram[index]
    first = 0
    for cut in candidates:
        first = _first_above(first, cut)
        if above[first] <= allowed:
            return cut
    if calibration.confidence <= 0:
        return ceiling
    critical = binomial_upper_critical(scored, calibration.ham_rate, 1 - calibration.confidence)
    if above[first] <= critical:
        return ceiling
    for cut in (i * STEP for i in range(BINS) if i * STEP > ceiling):
        first = _first_above(first, cut)
        if above[first] <= allowed:
            return cut
    return max(ceiling, TOP)


def _first_above(first: int, cut: float) -> int:
    """The first bin from ``first`` on whose scores may lie above ``cut``."""
    while first < BINS and not _bin_top(first) > cut:
        first += 1
    return first


def binomial_upper_critical(n: int, rate: float, alpha: float) -> int:
    """The largest k with P(X >= k) >= ``alpha`` for X ~ Binomial(n, ``rate``).

    More than k of n ham above a cut-off is evidence, at level ``alpha``, that more than
    ``rate`` of the ham lies above it. Summed term by term in log space,
    P(X = j + 1) = P(X = j) · (n - j) / (j + 1) · rate / (1 - rate), so a term too small
    for a float (P(X = 0) for large n) does not stop the sum; n when even P(X >= n) is
    at least ``alpha``.
    """
    if n <= 0 or rate <= 0:
        return 0
    log_term = n * math.log1p(-rate)  # log P(X = 0)
    step = math.log(rate) - math.log1p(-rate)
    below = 0.0  # P(X < k), for k = 0, 1, ...
    for k in range(n):
        below += math.exp(log_term)  # now P(X <= k) = P(X < k + 1)
        if 1.0 - below < alpha:
            return k
        log_term += math.log(n - k) - math.log(k + 1) + step
    return n
