"""The calibrated spam cut-off: the lowest cut-off with at most a share of ham above it."""

from __future__ import annotations

import math

import pytest

from app.domain.cutoff import (
    BINS,
    STEP,
    TOP,
    Calibration,
    binomial_upper_critical,
    score_bin,
    spam_cutoff,
)

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


RISING = Calibration(floor=7.0, ceiling=15.0, ham_rate=0.001, min_ham=500, confidence=0.95)


@pytest.mark.parametrize(
    ("n", "rate", "alpha"),
    [(500, 0.001, 0.05), (1000, 0.001, 0.05), (6237, 0.001, 0.05), (6237, 0.001, 0.1),
     (6237, 0.001, 0.2),
     (20_000, 0.001, 0.05), (20_000, 0.5, 0.05), (10, 0.3, 0.5), (3, 0.9, 0.01)],
)  # fmt: skip
def test_binomial_upper_critical_matches_scipy(n: int, rate: float, alpha: float) -> None:
    stats = pytest.importorskip("scipy.stats")
    # The largest k with P(X >= k) = sf(k - 1) >= alpha.
    expected = max(k for k in range(n + 1) if stats.binom.sf(k - 1, n, rate) >= alpha)
    assert binomial_upper_critical(n, rate, alpha) == expected


def test_a_few_ham_above_the_ceiling_leave_it_where_it_is() -> None:
    # 6,237 ham, 11 of them above 15 nats: a 0.1 % loss gives 11 or more with probability
    # above 5 %, so the ceiling stands (the old rule, confidence 0, gives the same).
    assert binomial_upper_critical(6237, 0.001, 0.05) == 11
    scores = [-30.0] * 6226 + [16.2, 17.0, 18.3, 19.9, 21.0, 22.4, 25.1, 26.3, 30.0, 34.0, 45.0]
    assert spam_cutoff(histogram_of(scores), RISING) == 15.0
    assert spam_cutoff(histogram_of(scores), DEFAULT) == DEFAULT.ceiling


def test_at_90_percent_the_same_ham_above_the_ceiling_raise_it() -> None:
    # The default confidence: a 0.1 % loss gives 11 or more of 6,237 above 15 nats with
    # probability below 10 % (10 is the critical count), so the eleven ham above the ceiling
    # that leave it standing at 95 % lift it to the lowest bin edge with at most 6.237 above:
    # 21.5, the top of the bin that holds the seventh highest, 21.0.
    assert binomial_upper_critical(6237, 0.001, 0.10) == 10
    scores = [-30.0] * 6226 + [16.2, 17.0, 18.3, 19.9, 21.0, 22.4, 25.1, 26.3, 30.0, 34.0, 45.0]
    ninety = Calibration(floor=7.0, ceiling=15.0, ham_rate=0.001, min_ham=500, confidence=0.9)
    assert spam_cutoff(histogram_of(scores), ninety) == 21.5
    assert sum(1 for s in scores if s > 21.5) == 6


def test_the_cut_off_rises_past_a_ceiling_the_ham_shows_too_low() -> None:
    # 12 of 6,237 above 15 nats is more than a 0.1 % loss explains at 95 %: the cut-off
    # rises to the lowest bin edge with at most 6.237 above it: past 19.6, the seventh highest.
    high = [15.2, 15.8, 16.4, 17.1, 18.2, 19.6, 20.7, 22.9, 24.4, 26.0, 31.5, 38.0]
    scores = [-30.0] * (6237 - len(high)) + high
    assert spam_cutoff(histogram_of(scores), RISING) == 20.0
    assert sum(1 for s in scores if s > 20.0) == 6
    # Without the test (confidence 0) the ceiling holds, and loses all twelve.
    fixed = Calibration(floor=7.0, ceiling=15.0, ham_rate=0.001, min_ham=500)
    assert spam_cutoff(histogram_of(scores), fixed) == 15.0


def test_a_rising_cut_off_stops_at_the_top_of_the_histogram() -> None:
    scores = [-30.0] * 900 + [45.0] * 100
    assert spam_cutoff(histogram_of(scores), RISING) == TOP


@pytest.mark.parametrize("seed", range(40))
def test_the_rising_rule_written_out(seed: int) -> None:
    import random

    rng = random.Random(seed)
    n_high = rng.randrange(0, 40)
    scores = [rng.gauss(-30, 15) for _ in range(rng.randrange(500, 6000))]
    scores += [rng.uniform(10, 45) for _ in range(n_high)]
    calibration = Calibration(
        floor=7.0, ceiling=rng.choice([12.0, 15.0, 15.2]), ham_rate=0.001, min_ham=500,
        confidence=rng.choice([0.5, 0.8, 0.95]),
    )  # fmt: skip
    cut = spam_cutoff(histogram_of(scores), calibration)
    below = exact_cutoff(scores, calibration)

    def above(c: float) -> int:
        return sum(1 for s in scores if score_bin(s) == BINS - 1 or score_bin(s) * STEP > c)

    n, rate = len(scores), calibration.ham_rate
    if above(calibration.ceiling) <= rate * n:
        assert cut == below
    elif above(calibration.ceiling) <= binomial_upper_critical(n, rate, 1 - calibration.confidence):
        assert cut == calibration.ceiling
    else:
        rises = [c * STEP for c in range(BINS) if c * STEP > calibration.ceiling]
        assert cut == next((c for c in rises if above(c) <= rate * n), TOP)
        assert cut > calibration.ceiling


def test_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        Calibration(floor=8.0, ceiling=18.0, ham_rate=0.001, min_ham=1, confidence=1.0)
    with pytest.raises(ValueError):
        Calibration(floor=math.nan, ceiling=18.0, ham_rate=0.001, min_ham=1)
    with pytest.raises(ValueError):
        Calibration(floor=8.0, ceiling=18.0, ham_rate=1.0, min_ham=1)
    with pytest.raises(ValueError):
        spam_cutoff([1] * 600, DEFAULT)
