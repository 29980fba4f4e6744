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

    def __post_init__(self) -> None:
        if math.isnan(self.floor) or math.isnan(self.ceiling):
            raise ValueError("cut-offs must be numbers, not NaN")
        if not 0 <= self.ham_rate < 1:
            raise ValueError("ham_rate must be in [0, 1)")
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
        while first < BINS and not _bin_top(first) > cut:
            first += 1
        if above[first] <= allowed:
            return cut
    return ceiling
