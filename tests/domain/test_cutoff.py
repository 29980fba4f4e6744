"""The calibrated spam cut-off: the lowest cut-off with at most a share of ham above it."""

from __future__ import annotations

import math

import pytest

from app.domain.cutoff import BINS, STEP, TOP, Calibration, score_bin, spam_cutoff

DEFAULT = Calibration(floor=8.0, ceiling=18.0, ham_rate=0.001, min_ham=500)


def histogram_of(scores: list[float]) -> list[int]:
    counts = [0] * BINS
    for score in scores:
        counts[score_bin(score)] += 1
    return counts


def exact_cutoff(scores: list[float], calibration: Calibration) -> float:
    """The rule, written out for scores on the bin edges: the lowest candidate (floor, a
    multiple of STEP between, or ceiling) with at most ham_rate * n scores at or above it
    plus those in its own bin."""
    candidates = [calibration.floor]
    candidates += [
        i * STEP for i in range(BINS) if calibration.floor < i * STEP < calibration.ceiling
    ]
    candidates.append(calibration.ceiling)
    for cut in candidates:
        above = sum(1 for s in scores if score_bin(s) == BINS - 1 or (score_bin(s)) * STEP > cut)
        if above <= calibration.ham_rate * len(scores):
            return cut
    return calibration.ceiling


def test_bins_are_half_nats_from_zero_to_forty() -> None:
    assert score_bin(-100.0) == 0
    assert score_bin(-0.001) == 0
    assert score_bin(0.0) == 1
    assert score_bin(0.49) == 1
    assert score_bin(0.5) == 2
    assert score_bin(8.0) == 1 + int(8.0 / STEP)
    assert score_bin(TOP - 0.01) == BINS - 2
    assert score_bin(TOP) == BINS - 1
    assert score_bin(math.inf) == BINS - 1
    assert score_bin(math.nan) == 0


def test_the_ceiling_until_enough_ham_has_scored() -> None:
    assert spam_cutoff([], DEFAULT) == 18.0
    assert spam_cutoff(histogram_of([-30.0] * 499), DEFAULT) == 18.0


def test_the_floor_when_no_ham_scores_near_it() -> None:
    assert spam_cutoff(histogram_of([-30.0] * 500), DEFAULT) == 8.0


def test_the_cut_off_moves_above_the_ham_tail() -> None:
    # 2,000 ham: 2 may lie above the cut-off. Three score 9.2, 11.7 and 12.1.
    scores = [-40.0] * 1997 + [9.2, 11.7, 12.1]
    # Above 9.5 (the bin edge past 9.2's bin): 11.7 and 12.1, two, allowed.
    assert spam_cutoff(histogram_of(scores), DEFAULT) == 9.5
    # A fourth high score: only one may lie above, so past 11.7's bin.
    scores = [-40.0] * 1996 + [9.2, 11.7, 12.1, 15.0]
    assert spam_cutoff(histogram_of(scores), DEFAULT) == 12.0


def test_never_above_the_ceiling() -> None:
    assert spam_cutoff(histogram_of([-10.0] * 500 + [35.0] * 10), DEFAULT) == 18.0


def test_a_score_in_the_bin_of_the_cut_off_counts_as_above_it() -> None:
    calibration = Calibration(floor=8.2, ceiling=18.0, ham_rate=0.001, min_ham=0)
    # 8.3 is in the bin [8.0, 8.5), which straddles 8.2: counted above, so not 8.2.
    assert spam_cutoff(histogram_of([-5.0] * 500 + [8.3]), calibration) == 8.5


def test_a_floor_above_the_ceiling_is_a_fixed_cut_off() -> None:
    calibration = Calibration(floor=25.0, ceiling=18.0, ham_rate=0.001, min_ham=0)
    assert spam_cutoff(histogram_of([-5.0] * 600), calibration) == 25.0
    assert spam_cutoff([], calibration) == 25.0


@pytest.mark.parametrize("seed", range(40))
def test_matches_the_rule_written_out(seed: int) -> None:
    import random

    rng = random.Random(seed)
    scores = [rng.gauss(-30, 15) for _ in range(rng.randrange(500, 3000))]
    scores += [rng.uniform(0, 45) for _ in range(rng.randrange(0, 8))]
    rate = rng.choice([0.001, 0.002, 0.005])
    # Floors and ceilings on and off the bin edges, up to beyond the last bin.
    calibration = Calibration(
        floor=rng.choice([0.0, 5.3, 6.0, 7.75, 8.0]),
        ceiling=rng.choice([12.2, 15.0, 18.0, 40.0, 45.5]),
        ham_rate=rate,
        min_ham=500,
    )
    assert spam_cutoff(histogram_of(scores), calibration) == exact_cutoff(scores, calibration)


def test_the_share_above_the_cut_off_is_at_most_the_rate() -> None:
    import random

    rng = random.Random(7)
    scores = [rng.gauss(-20, 12) for _ in range(5000)]
    cut = spam_cutoff(histogram_of(scores), DEFAULT)
    assert DEFAULT.floor <= cut <= DEFAULT.ceiling
    if cut < DEFAULT.ceiling:
        assert sum(1 for s in scores if s > cut) <= 0.001 * len(scores)


def test_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        Calibration(floor=math.nan, ceiling=18.0, ham_rate=0.001, min_ham=1)
    with pytest.raises(ValueError):
        Calibration(floor=8.0, ceiling=18.0, ham_rate=1.0, min_ham=1)
    with pytest.raises(ValueError):
        spam_cutoff([1] * 600, DEFAULT)
