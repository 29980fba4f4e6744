"""TREC-style accuracy metrics of a spam filter, computed exactly from scores.

Spam is the positive class and a higher score is spammier. Rates named ``*_pct``
are percentages (0-100); ROC coordinates are fractions (0-1).

* 1-ROCA%: ``100 * (1 - AUC)`` with ``AUC = P(spam score > ham score) +
  0.5 * P(tie)`` over all spam/ham pairs.
* hm% / sm%: ham judged spam / spam not judged spam, in percent.
* sm%@hm%=0.1: sm% read off the ROC curve at hm% = 0.1. The curve has one
  vertex after each group of tied scores (highest score first) and straight
  lines between vertices.
* lam%: ``logit^-1((logit(hm) + logit(sm)) / 2)``. When hm or sm is 0 or 1,
  both rates become ``(errors + 0.5) / (n + 1)`` and ``lam_smoothed`` is true.

Undefined values (a class with no message) are NaN.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import NamedTuple

SPAM = "spam"
HAM = "ham"
DEFAULT_HAM_RATE_PCT = 0.1


@dataclass(frozen=True)
class Metrics:
    """Accuracy of one run; every ``*_pct`` field is a percentage (0-100)."""

    n: int
    n_spam: int
    n_ham: int
    roca_1_pct: float
    hm_pct: float
    sm_pct: float
    sm_at_hm01_pct: float
    lam_pct: float
    lam_smoothed: bool


class ErrorCounts(NamedTuple):
    """Misclassified and total messages of each class."""

    ham_errors: int
    n_ham: int
    spam_errors: int
    n_spam: int


def _check_scores(scores: Sequence[float]) -> None:
    if any(math.isnan(s) for s in scores):
        raise ValueError("scores must not be NaN")


def split_by_label(
    labels: Sequence[str], scores: Sequence[float]
) -> tuple[list[float], list[float]]:
    """Split scores into (spam scores, ham scores); labels are "spam" or "ham"."""
    if len(labels) != len(scores):
        raise ValueError(f"{len(labels)} labels but {len(scores)} scores")
    spam: list[float] = []
    ham: list[float] = []
    for label, score in zip(labels, scores, strict=True):
        if label == SPAM:
            spam.append(score)
        elif label == HAM:
            ham.append(score)
        else:
            raise ValueError(f"unknown label {label!r}: expected 'spam' or 'ham'")
    return spam, ham


def _tie_groups(scores_spam: Sequence[float], scores_ham: Sequence[float]) -> list[list[int]]:
    """[spam count, ham count] for each distinct score, highest score first."""
    _check_scores(scores_spam)
    _check_scores(scores_ham)
    counts: dict[float, list[int]] = {}
    for s in scores_spam:
        counts.setdefault(s, [0, 0])[0] += 1
    for s in scores_ham:
        counts.setdefault(s, [0, 0])[1] += 1
    return [counts[s] for s in sorted(counts, reverse=True)]


def roc_area_above_pct(scores_spam: Sequence[float], scores_ham: Sequence[float]) -> float:
    """1-ROCA% (percent): 100 * (1 - AUC), ties between a spam and a ham count one half.

    Exact over all spam/ham pairs, O(n log n). NaN if either sequence is empty.
    """
    pairs = len(scores_spam) * len(scores_ham)
    if pairs == 0:
        return math.nan
    spam_above = 0
    twice_lost = 0  # ham-over-spam pairs count 2, tied pairs 1
    for g_spam, g_ham in _tie_groups(scores_spam, scores_ham):
        twice_lost += g_ham * (2 * (len(scores_spam) - spam_above - g_spam) + g_spam)
        spam_above += g_spam
    return 100.0 * twice_lost / (2 * pairs)


def misordered_pairs(
    scores_spam: Sequence[float], scores_ham: Sequence[float]
) -> tuple[list[float], list[float]]:
    """Each message's share of the pairs 1-ROCA% counts: for each spam, the ham scored above
    it; for each ham, the spam scored below it; a tie counts one half (in the given orders).

    Each side sums to ``roc_area_above_pct / 100 * len(scores_spam) * len(scores_ham)``, so a
    message's count over that sum is its share of 1-ROCA%. O(n log n).
    """
    _check_scores(scores_spam)
    _check_scores(scores_ham)
    ham, spam = sorted(scores_ham), sorted(scores_spam)
    n_ham = len(ham)

    def ham_above(x: float) -> float:
        below, through = bisect_left(ham, x), bisect_right(ham, x)
        return (n_ham - through) + (through - below) / 2

    def spam_below(x: float) -> float:
        below, through = bisect_left(spam, x), bisect_right(spam, x)
        return below + (through - below) / 2

    return [ham_above(x) for x in scores_spam], [spam_below(x) for x in scores_ham]


def _vertices(
    scores_spam: Sequence[float], scores_ham: Sequence[float]
) -> list[tuple[float, float]]:
    n_spam, n_ham = len(scores_spam), len(scores_ham)
    points = [(0.0, 0.0)]
    fp = tp = 0
    for g_spam, g_ham in _tie_groups(scores_spam, scores_ham):
        tp += g_spam
        fp += g_ham
        points.append((fp / n_ham if n_ham else 0.0, tp / n_spam if n_spam else 0.0))
    return points


def roc_points(labels: Sequence[str], scores: Sequence[float]) -> list[tuple[float, float]]:
    """ROC vertices (false-positive rate, true-positive rate) as fractions (0-1).

    Starts at (0, 0) and adds one vertex per group of tied scores, highest score
    first, so it ends at (1, 1). A rate whose class is empty is 0.
    """
    return _vertices(*split_by_label(labels, scores))


def spam_miss_at_ham_rate_pct(
    scores_spam: Sequence[float],
    scores_ham: Sequence[float],
    ham_rate_pct: float = DEFAULT_HAM_RATE_PCT,
) -> float:
    """sm% (percent) on the ROC curve where hm% equals ``ham_rate_pct`` (percent).

    Vertices are taken after each group of tied scores and joined linearly, so a
    tie of spam and ham is crossed along a straight line. If a vertical run of
    vertices sits exactly at the target hm, its top is used. NaN if a class is empty.
    """
    if not 0.0 <= ham_rate_pct <= 100.0:
        raise ValueError(f"ham_rate_pct must be within 0..100, got {ham_rate_pct}")
    if not scores_spam or not scores_ham:
        return math.nan
    target = ham_rate_pct / 100.0
    caught = 0.0
    for (x0, y0), (x1, y1) in pairwise(_vertices(scores_spam, scores_ham)):
        if x1 <= target:
            caught = y1
            continue
        if x0 <= target:
            caught = y0 + (y1 - y0) * (target - x0) / (x1 - x0)
        break
    return 100.0 * (1.0 - caught)


def judged_spam_at(scores: Sequence[float], threshold: float, inclusive: bool) -> list[bool]:
    """Spam decisions: score > threshold, or score >= threshold when ``inclusive``."""
    if inclusive:
        return [s >= threshold for s in scores]
    return [s > threshold for s in scores]


def error_counts(labels: Sequence[str], judged_spam: Sequence[bool]) -> ErrorCounts:
    """Count ham judged spam and spam not judged spam."""
    if len(labels) != len(judged_spam):
        raise ValueError(f"{len(labels)} labels but {len(judged_spam)} decisions")
    ham_errors = n_ham = spam_errors = n_spam = 0
    for label, is_spam in zip(labels, judged_spam, strict=True):
        if label == SPAM:
            n_spam += 1
            spam_errors += not is_spam
        elif label == HAM:
            n_ham += 1
            ham_errors += bool(is_spam)
        else:
            raise ValueError(f"unknown label {label!r}: expected 'spam' or 'ham'")
    return ErrorCounts(ham_errors, n_ham, spam_errors, n_spam)


def pct(part: float, n: int) -> float:
    """``part`` of ``n`` in percent; NaN when ``n`` is 0."""
    return 100.0 * part / n if n else math.nan


def verdict_share_pct(per_verdict: Mapping[str, int], verdict: str) -> float:
    """``verdict``'s share of the counts in ``per_verdict``, in percent (NaN when empty)."""
    return pct(per_verdict.get(verdict, 0), sum(per_verdict.values()))


def misclassification_pct(
    scores_spam: Sequence[float], scores_ham: Sequence[float], threshold: float, inclusive: bool
) -> tuple[float, float]:
    """(hm%, sm%) in percent at ``threshold``; see ``judged_spam_at`` for the rule.

    hm% is the share of ham judged spam, sm% the share of spam not judged spam;
    NaN for a class with no message.
    """
    ham_err = sum(judged_spam_at(scores_ham, threshold, inclusive))
    spam_err = len(scores_spam) - sum(judged_spam_at(scores_spam, threshold, inclusive))
    return pct(ham_err, len(scores_ham)), pct(spam_err, len(scores_spam))


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def lam_pct(ham_errors: int, n_ham: int, spam_errors: int, n_spam: int) -> tuple[float, bool]:
    """(lam%, smoothed): logistic average misclassification in percent.

    If either rate is 0 or 1, both become (errors + 0.5) / (n + 1) and smoothed
    is True. NaN (and False) if a class has no message.
    """
    if n_ham <= 0 or n_spam <= 0:
        return math.nan, False
    if not (0 <= ham_errors <= n_ham and 0 <= spam_errors <= n_spam):
        raise ValueError("error counts must be within 0..n")
    smoothed = ham_errors in (0, n_ham) or spam_errors in (0, n_spam)
    if smoothed:
        hm = (ham_errors + 0.5) / (n_ham + 1.0)
        sm = (spam_errors + 0.5) / (n_spam + 1.0)
    else:
        hm, sm = ham_errors / n_ham, spam_errors / n_spam
    mean_logit = (_logit(hm) + _logit(sm)) / 2.0
    return 100.0 / (1.0 + math.exp(-mean_logit)), smoothed


def compute_metrics(
    labels: Sequence[str],
    scores: Sequence[float],
    threshold: float,
    inclusive: bool,
    judged_spam: Sequence[bool] | None = None,
) -> Metrics:
    """All metrics of one run (percentages).

    hm%, sm% and lam% use ``judged_spam`` when given (e.g. verdict == "spam"
    of a ham/unsure/spam filter), else the threshold rule of ``judged_spam_at``.
    1-ROCA% and sm%@hm%=0.1 depend on the scores only.
    """
    scores_spam, scores_ham = split_by_label(labels, scores)
    if judged_spam is None:
        judged_spam = judged_spam_at(scores, threshold, inclusive)
    counts = error_counts(labels, judged_spam)
    lam, smoothed = lam_pct(*counts)
    return Metrics(
        n=len(labels),
        n_spam=counts.n_spam,
        n_ham=counts.n_ham,
        roca_1_pct=roc_area_above_pct(scores_spam, scores_ham),
        hm_pct=pct(counts.ham_errors, counts.n_ham),
        sm_pct=pct(counts.spam_errors, counts.n_spam),
        sm_at_hm01_pct=spam_miss_at_ham_rate_pct(scores_spam, scores_ham),
        lam_pct=lam,
        lam_smoothed=smoothed,
    )
