"""Metrics on hand-computed cases, and against the peer harness when it is present."""

from __future__ import annotations

import importlib
import math
import random
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from app.evaluation.metrics import (
    Metrics,
    compute_metrics,
    error_counts,
    judged_spam_at,
    lam_pct,
    misclassification_pct,
    roc_area_above_pct,
    roc_points,
    spam_miss_at_ham_rate_pct,
)

PEERS = Path(__file__).resolve().parents[3] / "shared" / "peers"


def _logistic_mean_pct(hm: float, sm: float) -> float:
    x = (math.log(hm / (1 - hm)) + math.log(sm / (1 - sm))) / 2
    return 100 / (1 + math.exp(-x))


# ---- 1-ROCA% -----------------------------------------------------------------


def test_roca_perfect_separation_is_zero() -> None:
    assert roc_area_above_pct([0.9, 0.8, 0.7], [0.1, 0.2, 0.3]) == 0.0


def test_roca_complete_inversion_is_hundred() -> None:
    assert roc_area_above_pct([0.1, 0.2], [0.8, 0.9, 0.95]) == 100.0


def test_roca_all_tied_is_fifty() -> None:
    assert roc_area_above_pct([0.5] * 3, [0.5] * 7) == 50.0


def test_roca_small_case_with_tie() -> None:
    # spam {0.9, 0.5}, ham {0.5, 0.1}: pairs (0.9,0.5) win, (0.9,0.1) win,
    # (0.5,0.5) tie, (0.5,0.1) win -> AUC = 3.5 / 4, 1-ROCA% = 12.5.
    assert roc_area_above_pct([0.9, 0.5], [0.5, 0.1]) == pytest.approx(12.5)
    # spam {0.4, 0.4, 0.8}, ham {0.4, 0.6}: losses (0.4<0.6) x2, ties (0.4=0.4) x2
    # -> lost = 2 + 2*0.5 = 3 of 6 pairs.
    assert roc_area_above_pct([0.4, 0.4, 0.8], [0.4, 0.6]) == pytest.approx(50.0)


def test_roca_empty_class_is_nan() -> None:
    assert math.isnan(roc_area_above_pct([], [0.1]))
    assert math.isnan(roc_area_above_pct([0.1], []))


def test_roca_rejects_nan_scores() -> None:
    with pytest.raises(ValueError):
        roc_area_above_pct([math.nan], [0.1])


def test_roca_matches_all_pairs() -> None:
    rng = random.Random(3)
    for _ in range(30):
        spam = [rng.choice([0.0, 0.5, 1.0, rng.random()]) for _ in range(rng.randint(1, 40))]
        ham = [rng.choice([0.0, 0.5, 1.0, rng.random()]) for _ in range(rng.randint(1, 40))]
        lost = sum(1.0 if s < h else 0.5 if s == h else 0.0 for s in spam for h in ham)
        expected = 100 * lost / (len(spam) * len(ham))
        assert roc_area_above_pct(spam, ham) == pytest.approx(expected, abs=1e-12)


# ---- ROC vertices and sm%@hm%=0.1 -----------------------------------------------


def test_roc_points_one_vertex_per_tie_group() -> None:
    labels = ["spam", "ham", "spam", "ham"]
    scores = [0.9, 0.5, 0.5, 0.1]
    assert roc_points(labels, scores) == [(0.0, 0.0), (0.0, 0.5), (0.5, 1.0), (1.0, 1.0)]


def test_sm_at_hm_staircase() -> None:
    # 1000 ham at 0..999; one ham error (0.1%) lets the threshold pass ham 999 only.
    ham = [float(i) for i in range(1000)]
    spam = [998.5, 2000.0, 10.0, 5.0]
    assert spam_miss_at_ham_rate_pct(spam, ham) == pytest.approx(50.0)


def test_sm_at_hm_vertical_run_at_target_takes_top() -> None:
    # Vertices: (0, 0), (0.001, 0), (0.001, 0.5), (0.002, 1). hm = 0.1% exactly at
    # the vertical run, so sm% is 50, not 100.
    ham = [3.0] + [0.0] * 998 + [1.0]
    spam = [2.0, 1.0]
    assert spam_miss_at_ham_rate_pct(spam, ham) == pytest.approx(50.0)


def test_sm_at_hm_interpolates_a_tie() -> None:
    # 10 ham tied with 10 spam: the curve is the diagonal, sm = 1 - hm.
    assert spam_miss_at_ham_rate_pct([1.0] * 10, [1.0] * 10) == pytest.approx(99.9)
    # spam 0.9 caught first, then a tie of 1 spam and 4 ham: from (0, 0.5) to
    # (1, 1); at hm = 0.001 the caught fraction is 0.5 + 0.5 * 0.001.
    got = spam_miss_at_ham_rate_pct([0.9, 0.2], [0.2] * 4)
    assert got == pytest.approx(100 * (1 - 0.5005))


def test_sm_at_hm_perfect_and_other_rates() -> None:
    assert spam_miss_at_ham_rate_pct([0.9, 0.8], [0.1, 0.2]) == 0.0
    assert spam_miss_at_ham_rate_pct([0.1], [0.9, 0.2], ham_rate_pct=50.0) == 100.0
    assert spam_miss_at_ham_rate_pct([0.5], [0.9, 0.2], ham_rate_pct=50.0) == 0.0
    assert math.isnan(spam_miss_at_ham_rate_pct([], [0.1]))
    with pytest.raises(ValueError):
        spam_miss_at_ham_rate_pct([0.1], [0.2], ham_rate_pct=-1.0)


# ---- thresholds, hm%, sm%, lam% -----------------------------------------------


def test_threshold_inclusive_vs_exclusive() -> None:
    scores = [0.2, 0.5, 0.5, 0.9]
    assert judged_spam_at(scores, 0.5, inclusive=True) == [False, True, True, True]
    assert judged_spam_at(scores, 0.5, inclusive=False) == [False, False, False, True]
    # ham {0.2, 0.5}, spam {0.5, 0.9}
    assert misclassification_pct([0.5, 0.9], [0.2, 0.5], 0.5, inclusive=True) == (50.0, 0.0)
    assert misclassification_pct([0.5, 0.9], [0.2, 0.5], 0.5, inclusive=False) == (0.0, 50.0)


def test_error_counts_and_bad_input() -> None:
    counts = error_counts(["ham", "ham", "spam", "spam"], [True, False, False, True])
    assert counts == (1, 2, 1, 2)
    with pytest.raises(ValueError, match="unknown label"):
        error_counts(["junk"], [True])
    with pytest.raises(ValueError):
        error_counts(["ham"], [True, False])


def test_lam_unsmoothed() -> None:
    value, smoothed = lam_pct(1, 100, 4, 100)
    assert not smoothed
    assert value == pytest.approx(_logistic_mean_pct(0.01, 0.04))
    # equal rates: lam% is that rate
    assert lam_pct(5, 100, 5, 100)[0] == pytest.approx(5.0)


def test_lam_smoothed_when_a_rate_is_zero_or_one() -> None:
    value, smoothed = lam_pct(0, 100, 4, 100)
    assert smoothed
    assert value == pytest.approx(_logistic_mean_pct(0.5 / 101, 4.5 / 101))
    value, smoothed = lam_pct(0, 100, 100, 100)
    assert smoothed
    assert value == pytest.approx(_logistic_mean_pct(0.5 / 101, 100.5 / 101))
    assert value == pytest.approx(50.0)
    nan_value, nan_smoothed = lam_pct(0, 0, 1, 2)
    assert math.isnan(nan_value) and not nan_smoothed


def test_compute_metrics_threshold_and_verdicts() -> None:
    labels = ["ham", "ham", "ham", "spam", "spam"]
    scores = [0.1, 0.6, 0.4, 0.7, 0.3]
    m = compute_metrics(labels, scores, 0.5, inclusive=False)
    assert isinstance(m, Metrics)
    assert (m.n, m.n_spam, m.n_ham) == (5, 2, 3)
    assert m.hm_pct == pytest.approx(100 / 3)
    assert m.sm_pct == pytest.approx(50.0)
    assert not m.lam_smoothed
    assert m.lam_pct == pytest.approx(_logistic_mean_pct(1 / 3, 0.5))
    # lost pairs: 0.7 < none; 0.3 < 0.6, 0.4 -> 2 of 6
    assert m.roca_1_pct == pytest.approx(100 / 3)
    # a three-way verdict: only "spam" verdicts count as judged spam
    verdicts = ["ham", "unsure", "ham", "spam", "unsure"]
    v = compute_metrics(labels, scores, 0.5, False, judged_spam=[x == "spam" for x in verdicts])
    assert (v.hm_pct, v.sm_pct, v.lam_smoothed) == (0.0, 50.0, True)
    assert v.roca_1_pct == m.roca_1_pct
    assert v.sm_at_hm01_pct == m.sm_at_hm01_pct
    with pytest.raises(ValueError):
        compute_metrics(labels, scores[:-1], 0.5, False)


# ---- cross-check with the peer harness -----------------------------------------


def _peer_metrics(monkeypatch: pytest.MonkeyPatch) -> Any:
    if not (PEERS / "peerlib" / "metrics.py").is_file():
        pytest.skip(f"peer harness not found at {PEERS}")
    monkeypatch.syspath_prepend(str(PEERS))
    return importlib.import_module("peerlib.metrics")


def _random_run(rng: random.Random, n: int, n_levels: int) -> tuple[list[str], list[float]]:
    levels = [rng.random() for _ in range(n_levels)] + [0.0, 0.5, 1.0]
    labels = ["spam" if rng.random() < 0.4 else "ham" for _ in range(n)]
    scores = [
        rng.choice(levels) if rng.random() < 0.7 else rng.random() + (lab == "spam") * 0.3
        for lab in labels
    ]
    return labels, scores


def _assert_close(ours: float, theirs: float) -> None:
    if math.isnan(theirs):
        assert math.isnan(ours)
    else:
        assert ours == pytest.approx(theirs, abs=1e-9, rel=0)


@pytest.mark.parametrize(("seed", "n", "n_levels"), [(1, 3000, 20), (2, 5000, 5), (3, 1667, 200)])
def test_matches_peer_metrics(
    monkeypatch: pytest.MonkeyPatch, seed: int, n: int, n_levels: int
) -> None:
    peer = _peer_metrics(monkeypatch)
    rng = random.Random(seed)
    labels, scores = _random_run(rng, n, n_levels)
    is_spam = [lab == "spam" for lab in labels]
    for threshold, inclusive in [(0.5, True), (0.5, False), (0.99, True), (-1.0, True)]:
        theirs = peer.summarize(scores, is_spam, threshold, inclusive)
        ours = compute_metrics(labels, scores, threshold, inclusive)
        for field in ("n", "n_spam", "n_ham", "lam_smoothed"):
            assert getattr(ours, field) == theirs[field], field
        for field in ("roca_1_pct", "hm_pct", "sm_pct", "sm_at_hm01_pct", "lam_pct"):
            _assert_close(getattr(ours, field), theirs[field])
    assert roc_points(labels, scores) == peer.roc_points(scores, is_spam)


def test_matches_peer_sm_at_hm_on_exact_vertices(monkeypatch: pytest.MonkeyPatch) -> None:
    # With 1000 or 2000 ham and only a few ham among the high scores, ROC vertices
    # fall exactly on hm = 0.1%, where ties with spam decide the reading.
    peer = _peer_metrics(monkeypatch)
    rng = random.Random(11)
    levels = [i / 8 for i in range(9)]
    hits = 0
    for n_ham in (1000, 2000) * 20:
        n_top = rng.randint(1, 4)
        ham = [rng.choice(levels) for _ in range(n_top)]
        ham += [rng.random() - 2.0 for _ in range(n_ham - n_top)]
        spam = [rng.choice(levels) for _ in range(rng.randint(5, 40))]
        scores, is_spam = spam + ham, [True] * len(spam) + [False] * len(ham)
        labels = ["spam" if y else "ham" for y in is_spam]
        points = roc_points(labels, scores)
        hits += any(a[0] == b[0] == 0.001 and b[1] > a[1] for a, b in pairwise(points))
        for rate in (0.1, 0.2, 1.0):
            theirs = 100 * peer.sm_at_hm(scores, is_spam, rate / 100)
            _assert_close(spam_miss_at_ham_rate_pct(spam, ham, rate), theirs)
    assert hits > 0


def test_matches_peer_on_degenerate_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    peer = _peer_metrics(monkeypatch)
    cases = [
        (["spam", "ham"], [0.9, 0.1]),
        (["spam", "ham"], [0.1, 0.9]),
        (["spam", "spam", "ham"], [0.5, 0.5, 0.5]),
        (["ham", "ham"], [0.2, 0.7]),
        (["spam"], [0.3]),
    ]
    for labels, scores in cases:
        is_spam = [lab == "spam" for lab in labels]
        theirs = peer.summarize(scores, is_spam, 0.5, True)
        ours = compute_metrics(labels, scores, 0.5, True)
        assert ours.lam_smoothed == theirs["lam_smoothed"]
        for field in ("roca_1_pct", "hm_pct", "sm_pct", "sm_at_hm01_pct", "lam_pct"):
            _assert_close(getattr(ours, field), theirs[field])
