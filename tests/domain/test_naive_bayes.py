"""The Naive Bayes maths on its own: textbook worked examples, scikit-learn as an oracle, and
invariants (posteriors sum to 1, stable log-sum-exp, log-odds = prior + clues, incremental
equals batch).

The worked examples are the course notes in ../shared/seeds: Piech's Lord of the Rings
example (Bernoulli, MLE and Laplace), Chang's play-tennis table (priors and MLE likelihoods)
and spam slide (multinomial with Laplace), the loan-default example (categorical MLE with a
zero count; Laplace and m-estimates), Feizi's flu exercise and coin MLE.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.naive_bayes import BernoulliNB, MultinomialNB

from app.domain.naive_bayes import (
    ClassTotals,
    Evidence,
    Scored,
    bernoulli,
    clues,
    log_priors,
    log_sum_exp,
    multinomial,
    normalise,
    probability,
    safe_log,
    smoothed_log_prob,
)

log = math.log
EXACT = 1e-12


def close(a: float, b: float, tol: float = EXACT) -> bool:
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


# ---- Piech: Lord of the Rings (two binary features, 30 examples) -----------------------------

# Counts from the notes' tables: 13 users who did not like LotR (y=0), 17 who did (y=1).
# x1 = liked Star Wars: 10 of 13 and 13 of 17; x2 = liked Harry Potter: 8 of 13 and 10 of 17.
LOTR_MESSAGES = {"0": 13, "1": 17}
LOTR_X1 = {"0": 10, "1": 13}
LOTR_X2 = {"0": 8, "1": 10}


def lotr_examples() -> list[tuple[int, int, str]]:
    """Thirty (x1, x2, y) rows with exactly the counts of the notes' tables."""
    rows: list[tuple[int, int, str]] = []
    for label, n in LOTR_MESSAGES.items():
        for i in range(n):
            rows.append((int(i < LOTR_X1[label]), int(i >= n - LOTR_X2[label]), label))
    return rows


def lotr_scored(alpha: float) -> Scored:
    """The new user: likes Star Wars (x1 = 1), not Harry Potter (x2 = 0)."""
    return bernoulli(
        [Evidence("star_wars", 1, LOTR_X1)],
        vocabulary_counts=[LOTR_X1, LOTR_X2],
        messages=LOTR_MESSAGES,
        alpha=alpha,
    )


def test_lotr_counts_match_the_notes_tables() -> None:
    rows = lotr_examples()
    assert len(rows) == 30
    for label, n in LOTR_MESSAGES.items():
        mine = [r for r in rows if r[2] == label]
        assert len(mine) == n
        assert sum(r[0] for r in mine) == LOTR_X1[label]
        assert sum(r[1] for r in mine) == LOTR_X2[label]


def test_lotr_mle_joint_log_likelihoods_as_printed() -> None:
    scored = lotr_scored(alpha=0)
    assert round(scored.log_joint["0"], 2) == -2.05
    assert round(scored.log_joint["1"], 2) == -1.72


def test_lotr_mle_joint_log_likelihoods_exact_fractions() -> None:
    scored = lotr_scored(alpha=0)
    assert close(scored.log_joint["0"], log(13 / 30) + log(10 / 13) + log(5 / 13))
    assert close(scored.log_joint["1"], log(17 / 30) + log(13 / 17) + log(7 / 17))


def test_lotr_laplace_joint_log_likelihoods_as_printed() -> None:
    scored = lotr_scored(alpha=1)
    assert round(scored.log_joint["0"], 2) == -2.06
    assert round(scored.log_joint["1"], 2) == -1.74


def test_lotr_laplace_joint_log_likelihoods_exact_fractions() -> None:
    # The notes smooth only the likelihoods, not the prior: so does log_priors.
    scored = lotr_scored(alpha=1)
    assert close(scored.log_joint["0"], log(13 / 30) + log(11 / 15) + log(6 / 15))
    assert close(scored.log_joint["1"], log(17 / 30) + log(14 / 19) + log(8 / 19))


@pytest.mark.parametrize("alpha", [0, 1])
def test_lotr_prediction_is_y1_and_posteriors_normalise(alpha: float) -> None:
    scored = lotr_scored(alpha)
    assert max(scored.log_joint, key=scored.log_joint.__getitem__) == "1"
    total = math.fsum(probability(v) for v in scored.log_posteriors.values())
    assert close(total, 1.0)
    expected = scored.log_joint["1"] - scored.log_joint["0"]
    assert close(scored.log_odds("1", "0"), expected)


def test_lotr_laplace_agrees_with_sklearn_on_the_thirty_rows() -> None:
    rows = lotr_examples()
    x = np.array([[r[0], r[1]] for r in rows])
    y = np.array([r[2] for r in rows])
    model = BernoulliNB(alpha=1.0).fit(x, y)
    theirs = model.predict_joint_log_proba(np.array([[1, 0]]))[0]
    ours = lotr_scored(alpha=1).log_joint
    for index, label in enumerate(model.classes_):
        assert close(ours[str(label)], float(theirs[index]))


def test_mle_bernoulli_absent_feature_seen_in_no_message_is_minus_infinity() -> None:
    # MLE of an event never seen is 0: a present token never learned with label "0" rules
    # "0" out (log 0 = -inf), and the posterior of the other label is exactly 1.
    scored = bernoulli(
        [Evidence("t", 1, {"0": 0, "1": 4})],
        vocabulary_counts=[{"0": 0, "1": 4}],
        messages={"0": 5, "1": 5},
        alpha=0,
    )
    assert scored.log_joint["0"] == -math.inf
    assert scored.log_posteriors["1"] == 0.0
    assert probability(scored.log_posteriors["0"]) == 0.0


def test_mle_multinomial_unseen_token_rules_a_label_out() -> None:
    scored = multinomial(
        [Evidence("seen-only-in-spam", 2, {"spam": 3, "ham": 0})],
        totals={"spam": ClassTotals(4, 10), "ham": ClassTotals(6, 20)},
        vocabulary=8,
        alpha=0,
    )
    assert close(scored.log_joint["spam"], log(4 / 10) + 2 * log(3 / 10))
    assert scored.log_joint["ham"] == -math.inf
    assert scored.log_posteriors == {"spam": 0.0, "ham": -math.inf}
    assert clues(scored, "spam", "ham", limit=5)[0].weight == math.inf


def test_mle_bernoulli_token_seen_in_every_message_of_a_label() -> None:
    # x1 liked by all 13 users of class "0" (MLE p = 13/13 = 1): present, it contributes
    # log 1 = 0 to class "0"; class "1" has p = 13/17.
    scored = bernoulli(
        [Evidence("x1", 1, {"0": 13, "1": 13})],
        vocabulary_counts=[{"0": 13, "1": 13}],
        messages={"0": 13, "1": 17},
        alpha=0,
    )
    assert close(scored.log_joint["0"], log(13 / 30))
    assert close(scored.log_joint["1"], log(17 / 30) + log(13 / 17))
    assert close(scored.log_posteriors["0"], log(0.5))


# ---- Chang: play tennis, and the spam slide --------------------------------------------------

# (Outlook, Temperature, Humidity, Wind, Play) as in the lecture's 14-row table.
TENNIS = [
    ("S", "H", "H", "W", "-"),
    ("S", "H", "H", "S", "-"),
    ("O", "H", "H", "W", "+"),
    ("R", "M", "H", "W", "+"),
    ("R", "C", "N", "W", "+"),
    ("R", "C", "N", "S", "-"),
    ("O", "C", "N", "S", "+"),
    ("S", "M", "H", "W", "-"),
    ("S", "C", "N", "W", "+"),
    ("R", "M", "N", "W", "+"),
    ("S", "M", "N", "S", "+"),
    ("O", "M", "H", "S", "+"),
    ("O", "H", "N", "W", "+"),
    ("R", "M", "H", "S", "-"),
]


def tennis_counts(attribute: int) -> dict[str, Counter[str]]:
    """Per label, how often each value of ``attribute`` occurs."""
    counts: dict[str, Counter[str]] = {"+": Counter(), "-": Counter()}
    for row in TENNIS:
        counts[row[4]][row[attribute]] += 1
    return counts


def test_tennis_priors() -> None:
    priors = log_priors(Counter(row[4] for row in TENNIS))
    assert close(priors["+"], log(9 / 14))
    assert close(priors["-"], log(5 / 14))
    assert close(math.fsum(math.exp(v) for v in priors.values()), 1.0)


@pytest.mark.parametrize(("value", "numerator"), [("S", 2), ("R", 3), ("O", 4)])
def test_tennis_outlook_mle_likelihoods(value: str, numerator: int) -> None:
    positives = tennis_counts(0)["+"]
    assert positives[value] == numerator
    assert close(smoothed_log_prob(positives[value], 9, alpha=0, outcomes=3), log(numerator / 9))


def test_tennis_outlook_laplace_likelihood() -> None:
    # Laplace over the three outlook values: (2 + 1) / (9 + 3).
    assert close(smoothed_log_prob(2, 9, alpha=1, outcomes=3), log(3 / 12))


def test_tennis_single_attribute_is_a_one_token_multinomial() -> None:
    # One categorical attribute = a multinomial over its 3 values with one token per example:
    # P(+|Sunny) = (9/14 · 2/9) / (9/14 · 2/9 + 5/14 · 3/5) = 2/5.
    counts = tennis_counts(0)
    scored = multinomial(
        [Evidence("outlook:S", 1, {"+": counts["+"]["S"], "-": counts["-"]["S"]})],
        totals={"+": ClassTotals(messages=9, tokens=9), "-": ClassTotals(messages=5, tokens=5)},
        vocabulary=3,
        alpha=0,
    )
    assert close(scored.log_joint["+"], log(2 / 14))
    assert close(scored.log_joint["-"], log(3 / 14))
    assert close(scored.log_posteriors["+"], log(2 / 5))
    assert close(scored.log_odds("+", "-"), log(2 / 3))


def test_tennis_map_prediction_from_the_joint_table() -> None:
    # P(H,W|Yes) P(Yes) = 0.4 × 0.3 = 0.12 and P(H,W|No) P(No) = 0.1 × 0.7 = 0.07: MAP = Yes.
    posteriors = normalise({"yes": log(0.4) + log(0.3), "no": log(0.1) + log(0.7)})
    assert close(probability(posteriors["yes"]), 0.12 / 0.19)
    assert posteriors["yes"] > posteriors["no"]


def test_spam_slide_multinomial_with_laplace() -> None:
    # P(w|c) = (Count(w, c) + 1) / (Count(c) + |V|), counted over a tiny corpus.
    spam_docs = ["win cash now", "win win prize"]
    ham_docs = ["meeting at noon", "cash report at noon"]
    spam = Counter(w for d in spam_docs for w in d.split())
    ham = Counter(w for d in ham_docs for w in d.split())
    vocabulary = len(set(spam) | set(ham))
    assert (sum(spam.values()), sum(ham.values()), vocabulary) == (6, 7, 8)
    scored = multinomial(
        [Evidence(w, 1, {"spam": spam[w], "ham": ham[w]}) for w in ("win", "cash")],
        totals={"spam": ClassTotals(2, 6), "ham": ClassTotals(2, 7)},
        vocabulary=vocabulary,
        alpha=1,
    )
    assert close(scored.log_joint["spam"], log(2 / 4) + log(4 / 14) + log(2 / 14))
    assert close(scored.log_joint["ham"], log(2 / 4) + log(1 / 15) + log(2 / 15))
    assert close(scored.contributions["win"]["spam"], log(4 / 14))
    assert close(scored.contributions["cash"]["ham"], log(2 / 15))


# ---- Loan default: categorical MLE with a zero count, Laplace and m-estimates --------------

LOANS = [  # (home owner, marital status, income, default)
    ("Yes", "Single", 125, "No"),
    ("No", "Married", 100, "No"),
    ("No", "Single", 70, "No"),
    ("Yes", "Married", 120, "No"),
    ("No", "Divorced", 95, "Yes"),
    ("No", "Married", 60, "No"),
    ("Yes", "Divorced", 220, "No"),
    ("No", "Single", 85, "Yes"),
    ("No", "Married", 75, "No"),
    ("No", "Single", 90, "Yes"),
]


def loan_count(label: str, attribute: int, value: str) -> int:
    return sum(1 for row in LOANS if row[3] == label and row[attribute] == value)


def test_loan_categorical_mle_counts() -> None:
    assert close(
        smoothed_log_prob(loan_count("Yes", 1, "Single"), 3, alpha=0, outcomes=3), log(2 / 3)
    )
    assert (loan_count("No", 0, "No"), loan_count("No", 1, "Married")) == (4, 4)
    assert (loan_count("Yes", 0, "No"), loan_count("Yes", 1, "Married")) == (3, 0)


def test_loan_prediction_with_a_zero_likelihood() -> None:
    # x = (Home owner = No, Married, income 120). The notes take the Gaussian density
    # P(income = 120 | No) = 0.0072 and 1e-9 for Yes; the categorical terms are ours.
    priors = log_priors(Counter(row[3] for row in LOANS))
    assert close(priors["Yes"], log(0.3))
    no = (
        priors["No"]
        + smoothed_log_prob(loan_count("No", 0, "No"), 7, alpha=0, outcomes=2)
        + smoothed_log_prob(loan_count("No", 1, "Married"), 7, alpha=0, outcomes=3)
        + log(0.0072)
    )
    yes = (
        priors["Yes"]
        + smoothed_log_prob(loan_count("Yes", 0, "No"), 3, alpha=0, outcomes=2)
        + smoothed_log_prob(loan_count("Yes", 1, "Married"), 3, alpha=0, outcomes=3)
        + log(1e-9)
    )
    assert round(math.exp(no - priors["No"]), 4) == 0.0024  # 4/7 × 4/7 × 0.0072
    assert round(math.exp(no), 4) == 0.0016  # 0.7 × 0.0024
    assert yes == -math.inf  # 3/3 × 0/3 × 1e-9 = 0
    posteriors = normalise({"No": no, "Yes": yes})
    assert posteriors == {"No": 0.0, "Yes": -math.inf}


@given(
    n=st.integers(0, 10_000),
    seen=st.floats(0, 1),
    values=st.integers(1, 1_000),
)
def test_laplace_estimate_is_alpha_one_over_the_number_of_values(
    n: int, seen: float, values: int
) -> None:
    n_c = int(seen * n)
    assert close(smoothed_log_prob(n_c, n, alpha=1, outcomes=values), log((n_c + 1) / (n + values)))


@given(
    n=st.integers(0, 10_000),
    seen=st.floats(0, 1),
    m=st.floats(1e-3, 1e3),
    p=st.floats(1e-3, 1.0),
)
def test_m_estimate_is_smoothing_with_alpha_mp_over_one_over_p_outcomes(
    n: int, seen: float, m: float, p: float
) -> None:
    # (n_c + m p) / (n + m) = (n_c + α) / (n + α · k) with α = m p and k = 1/p.
    n_c = int(seen * n)
    expected = log((n_c + m * p) / (n + m))
    assert close(smoothed_log_prob(n_c, n, alpha=m * p, outcomes=1 / p), expected, 1e-12)


@pytest.mark.parametrize("values", [2, 3, 10])
def test_m_estimate_with_uniform_prior_and_m_values_is_laplace(values: int) -> None:
    m, p = values, 1 / values
    for n_c, n in [(0, 3), (2, 3), (4, 7), (0, 0)]:
        m_estimate = log((n_c + m * p) / (n + m))
        assert close(smoothed_log_prob(n_c, n, alpha=1, outcomes=values), m_estimate)


# ---- Feizi: Bayes rule exercise and coin MLE -------------------------------------------------


def test_flu_exercise_posterior() -> None:
    # P(A) = 0.05, P(B|A) = 0.8, P(B|¬A) = 0.2: P(A|B) = 0.04 / 0.23 = 4/23.
    posteriors = normalise({"flu": log(0.05) + log(0.8), "no flu": log(0.95) + log(0.2)})
    assert close(probability(posteriors["flu"]), 4 / 23)


@pytest.mark.parametrize(("ones", "zeros"), [(3, 2), (0, 5), (7, 0), (1, 99)])
def test_coin_mle_is_relative_frequency(ones: int, zeros: int) -> None:
    value = smoothed_log_prob(ones, ones + zeros, alpha=0, outcomes=2)
    assert probability(value) == pytest.approx(ones / (ones + zeros), abs=EXACT)


# ---- small functions -------------------------------------------------------------------------


def test_safe_log_of_zero_numerator_is_minus_infinity() -> None:
    assert safe_log(0, 5) == -math.inf
    assert close(safe_log(3, 12), log(0.25))


def test_log_priors_need_at_least_one_message() -> None:
    with pytest.raises(ValueError):
        log_priors({"ham": 0, "spam": 0})
    assert log_priors({"ham": 3, "spam": 0})["spam"] == -math.inf


def test_normalise_refuses_all_zero_likelihoods() -> None:
    with pytest.raises(ValueError):
        normalise({"ham": -math.inf, "spam": -math.inf})


def test_log_sum_exp_edge_cases() -> None:
    assert log_sum_exp([]) == -math.inf
    assert log_sum_exp([-math.inf, -math.inf]) == -math.inf
    assert log_sum_exp([-math.inf, 0.0]) == 0.0
    assert close(log_sum_exp([0.0, 0.0]), log(2))


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([-1e6, -1e6 - 1], -1e6 + math.log1p(math.exp(-1))),
        ([1e6, 1e6], 1e6 + log(2)),
        ([-1e308, -1e308], -1e308),
        ([710.0, 0.0], 710.0),  # exp(710) overflows a double
        ([-750.0, -750.0], -750.0 + log(2)),  # exp(-750) underflows to 0
    ],
)
def test_log_sum_exp_is_stable_at_huge_magnitudes(values: list[float], expected: float) -> None:
    result = log_sum_exp(values)
    assert math.isfinite(result)
    assert close(result, expected)


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=30), st.floats(-1e6, 1e6))
def test_log_sum_exp_properties(values: list[float], shift: float) -> None:
    result = log_sum_exp(values)
    top = max(values)
    assert top <= result <= top + log(len(values)) + 1e-9 * max(1.0, abs(top))
    assert close(result, float(np.logaddexp.reduce(values)), 1e-12)
    shifted = log_sum_exp([v + shift for v in values])
    assert math.isclose(shifted, result + shift, rel_tol=1e-12, abs_tol=1e-6)


def test_log_odds_do_not_saturate_where_the_probability_does() -> None:
    def score(times: int) -> Scored:
        return multinomial(
            [Evidence("viagra", times, {"spam": 50, "ham": 1})],
            totals={"spam": ClassTotals(10, 100), "ham": ClassTotals(10, 100)},
            vocabulary=20,
            alpha=1,
        )

    strong, stronger = score(100), score(200)
    assert probability(strong.log_posteriors["spam"]) == 1.0
    assert probability(stronger.log_posteriors["spam"]) == 1.0
    assert stronger.log_odds("spam", "ham") > strong.log_odds("spam", "ham") > 300
    assert close(stronger.log_odds("spam", "ham"), 200 * log(51 / 2))


# ---- scikit-learn as an oracle -----------------------------------------------------------------

SEEDS = [0, 1, 2, 3, 4]
ALPHAS = [1.0, 0.5, 0.01]
ORACLE = 1e-9


def training_set(seed: int, n_classes: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Poisson counts, every class with documents and every feature column non-zero."""
    rng = np.random.default_rng(seed)
    labels = [f"c{i}" for i in range(n_classes)]
    n_docs, n_features = 40, 25
    rates = rng.uniform(0.05, 3.0, size=(n_classes, n_features))
    y = np.array([labels[i % n_classes] for i in range(n_docs)])
    rng.shuffle(y)
    x = np.vstack([rng.poisson(rates[labels.index(label)]) for label in y])
    for column in np.flatnonzero(x.sum(axis=0) == 0):
        x[rng.integers(n_docs), column] = 1
    return x, y, labels


def scoring_rows(seed: int, n_features: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1000)
    return rng.poisson(1.0, size=(12, n_features))


def token(j: int) -> str:
    return f"t{j}"


def multinomial_of(row: np.ndarray, x: np.ndarray, y: np.ndarray, alpha: float) -> Scored:
    classes = sorted(set(y.tolist()))
    sums = {c: x[y == c].sum(axis=0) for c in classes}
    evidence = [
        Evidence(token(int(j)), int(row[j]), {c: int(sums[c][j]) for c in classes})
        for j in np.flatnonzero(row)
    ]
    totals = {c: ClassTotals(int((y == c).sum()), int(sums[c].sum())) for c in classes}
    return multinomial(evidence, totals=totals, vocabulary=x.shape[1], alpha=alpha)


def bernoulli_of(row: np.ndarray, x: np.ndarray, y: np.ndarray, alpha: float) -> Scored:
    classes = sorted(set(y.tolist()))
    documents = {c: (x[y == c] > 0).sum(axis=0) for c in classes}
    per_feature = [{c: int(documents[c][j]) for c in classes} for j in range(x.shape[1])]
    evidence = [Evidence(token(int(j)), 1, per_feature[j]) for j in np.flatnonzero(row)]
    messages = {c: int((y == c).sum()) for c in classes}
    return bernoulli(evidence, vocabulary_counts=per_feature, messages=messages, alpha=alpha)


def assert_matches(
    ours: Scored, joint: np.ndarray, posterior: np.ndarray, classes: list[str]
) -> None:
    for index, label in enumerate(classes):
        assert math.isclose(ours.log_joint[label], joint[index], rel_tol=0, abs_tol=ORACLE)
        assert math.isclose(ours.log_posteriors[label], posterior[index], rel_tol=0, abs_tol=ORACLE)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("seed", SEEDS)
def test_multinomial_matches_sklearn(seed: int, alpha: float, n_classes: int) -> None:
    x, y, _ = training_set(seed, n_classes)
    model = MultinomialNB(alpha=alpha).fit(x, y)
    rows = scoring_rows(seed, x.shape[1])
    joints = model.predict_joint_log_proba(rows)
    posteriors = model.predict_log_proba(rows)
    for row, joint, posterior in zip(rows, joints, posteriors, strict=True):
        ours = multinomial_of(row, x, y, alpha)
        assert_matches(ours, joint, posterior, model.classes_.tolist())


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("seed", SEEDS)
def test_bernoulli_matches_sklearn(seed: int, alpha: float, n_classes: int) -> None:
    x, y, _ = training_set(seed, n_classes)
    binary = (x > 0).astype(int)
    model = BernoulliNB(alpha=alpha).fit(binary, y)
    rows = (scoring_rows(seed, x.shape[1]) > 0).astype(int)
    joints = model.predict_joint_log_proba(rows)
    posteriors = model.predict_log_proba(rows)
    for row, joint, posterior in zip(rows, joints, posteriors, strict=True):
        ours = bernoulli_of(row, binary, y, alpha)
        assert_matches(ours, joint, posterior, model.classes_.tolist())


@pytest.mark.parametrize("alpha", ALPHAS)
def test_incremental_learning_equals_batch_for_sklearn_and_for_summed_counts(
    alpha: float,
) -> None:
    # partial_fit one message at a time (what the service's learn does, one upsert each)
    # ends with the same model as one fit, and our scoring of the summed counts agrees.
    x, y, labels = training_set(7, 2)
    incremental = MultinomialNB(alpha=alpha)
    for row, label in zip(x, y, strict=True):
        incremental.partial_fit(row[None, :], [label], classes=labels)
    batch = MultinomialNB(alpha=alpha).fit(x, y)
    rows = scoring_rows(7, x.shape[1])
    np.testing.assert_allclose(
        incremental.predict_joint_log_proba(rows),
        batch.predict_joint_log_proba(rows),
        rtol=0,
        atol=ORACLE,
    )
    for row, joint, posterior in zip(
        rows,
        incremental.predict_joint_log_proba(rows),
        incremental.predict_log_proba(rows),
        strict=True,
    ):
        assert_matches(multinomial_of(row, x, y, alpha), joint, posterior, labels)


# ---- invariants (hypothesis) -----------------------------------------------------------------

LABELS = ("ham", "spam")


@st.composite
def multinomial_models(draw: st.DrawFn) -> tuple[list[Evidence], dict[str, ClassTotals], int]:
    """Unique tokens with learned counts, class totals that cover them, and |V|."""
    n_tokens = draw(st.integers(0, 25))
    evidence = []
    sums = dict.fromkeys(LABELS, 0)
    for i in range(n_tokens):
        counts = {label: draw(st.integers(0, 10_000)) for label in LABELS}
        for label, count in counts.items():
            sums[label] += count
        evidence.append(Evidence(f"tok{i}", draw(st.integers(1, 50)), counts))
    totals = {
        label: ClassTotals(draw(st.integers(1, 10**6)), sums[label] + draw(st.integers(0, 10**7)))
        for label in LABELS
    }
    vocabulary = n_tokens + draw(st.integers(1, 10**6))
    return evidence, totals, vocabulary


alphas = st.floats(1e-3, 10.0)


@settings(max_examples=200)
@given(multinomial_models(), alphas)
def test_multinomial_posteriors_sum_to_one(
    model: tuple[list[Evidence], dict[str, ClassTotals], int], alpha: float
) -> None:
    evidence, totals, vocabulary = model
    scored = multinomial(evidence, totals=totals, vocabulary=vocabulary, alpha=alpha)
    assert close(math.fsum(probability(v) for v in scored.log_posteriors.values()), 1.0)
    assert all(v <= 0.0 for v in scored.log_posteriors.values())


@settings(max_examples=200)
@given(multinomial_models(), alphas)
def test_multinomial_log_odds_is_prior_ratio_plus_clue_weights(
    model: tuple[list[Evidence], dict[str, ClassTotals], int], alpha: float
) -> None:
    evidence, totals, vocabulary = model
    scored = multinomial(evidence, totals=totals, vocabulary=vocabulary, alpha=alpha)
    priors = log_priors({label: t.messages for label, t in totals.items()})
    found = clues(scored, "spam", "ham", limit=len(evidence) + 10)
    assert len(found) == len(evidence)
    expected = priors["spam"] - priors["ham"] + math.fsum(c.weight for c in found)
    tolerance = 1e-9 * max(1.0, sum(abs(c.weight) for c in found))
    assert math.isclose(scored.log_odds("spam", "ham"), expected, abs_tol=tolerance)


def bernoulli_inputs(
    rng: random.Random, n_vocabulary: int, n_present: int
) -> tuple[list[Evidence], list[dict[str, int]], dict[str, int]]:
    messages = {label: rng.randint(1, 500) for label in LABELS}
    vocabulary = [
        {label: rng.randint(0, messages[label]) for label in LABELS} for _ in range(n_vocabulary)
    ]
    evidence = [Evidence(f"tok{i}", 1, vocabulary[i]) for i in range(n_present)]
    return evidence, vocabulary, messages


@settings(max_examples=200)
@given(st.integers(0, 2**32), st.integers(1, 40), st.data(), alphas)
def test_bernoulli_log_odds_is_baseline_plus_clue_weights(
    seed: int, n_vocabulary: int, data: st.DataObject, alpha: float
) -> None:
    # Bernoulli: the "all absent" message scores prior + Σ_V log(1 - p); each present token
    # then moves the log-odds by its clue weight.
    n_present = data.draw(st.integers(0, n_vocabulary))
    evidence, vocabulary, messages = bernoulli_inputs(random.Random(seed), n_vocabulary, n_present)
    scored = bernoulli(evidence, vocabulary_counts=vocabulary, messages=messages, alpha=alpha)
    baseline = bernoulli([], vocabulary_counts=vocabulary, messages=messages, alpha=alpha)
    assert close(math.fsum(probability(v) for v in scored.log_posteriors.values()), 1.0)
    found = clues(scored, "spam", "ham", limit=n_vocabulary)
    expected = baseline.log_odds("spam", "ham") + math.fsum(c.weight for c in found)
    assert math.isclose(scored.log_odds("spam", "ham"), expected, abs_tol=1e-9)


@given(multinomial_models(), alphas, st.randoms(use_true_random=False), st.integers(0, 30))
def test_clues_are_ordered_by_magnitude_and_deterministic(
    model: tuple[list[Evidence], dict[str, ClassTotals], int],
    alpha: float,
    rng: random.Random,
    limit: int,
) -> None:
    evidence, totals, vocabulary = model
    scored = multinomial(evidence, totals=totals, vocabulary=vocabulary, alpha=alpha)
    found = clues(scored, "spam", "ham", limit=limit)
    assert len(found) == min(limit, len(evidence))
    keys = [(-abs(c.weight), c.token) for c in found]
    assert keys == sorted(keys)
    for clue in found:
        per_label = scored.contributions[clue.token]
        assert clue.weight == per_label["spam"] - per_label["ham"]
    everything = clues(scored, "spam", "ham", limit=len(evidence))
    if found:  # the ones left out weigh no more than the last one kept
        assert all(abs(c.weight) <= abs(found[-1].weight) for c in everything[limit:])
    shuffled = list(evidence)
    rng.shuffle(shuffled)
    rescored = multinomial(shuffled, totals=totals, vocabulary=vocabulary, alpha=alpha)
    again = clues(rescored, "spam", "ham", limit=limit)
    assert [c.token for c in again] == [c.token for c in found]
    for a, b in zip(again, found, strict=True):
        assert close(a.weight, b.weight)


def test_clue_ties_break_on_token_text() -> None:
    same = {"spam": 5, "ham": 1}
    scored = multinomial(
        [Evidence(t, 1, same) for t in ("zeta", "alpha", "mid")]
        + [Evidence("neg", 1, {"spam": 1, "ham": 5})],
        totals={"spam": ClassTotals(3, 50), "ham": ClassTotals(3, 50)},
        vocabulary=10,
        alpha=1,
    )
    found = clues(scored, "spam", "ham", limit=10)
    assert [c.token for c in found] == ["alpha", "mid", "neg", "zeta"]
    assert found[2].weight == -found[0].weight
    assert clues(scored, "spam", "ham", limit=0) == []


# A tiny "learned model" made of labelled token lists, counted the way the service counts.
words = st.sampled_from([f"w{i}" for i in range(12)])
documents = st.lists(
    st.tuples(st.sampled_from(LABELS), st.lists(words, min_size=1, max_size=8)),
    min_size=2,
    max_size=25,
).filter(lambda docs: {label for label, _ in docs} == set(LABELS))


Learned = tuple[dict[str, Counter[str]], dict[str, int], dict[str, int]]


def learn_one_by_one(docs: Sequence[tuple[str, list[str]]]) -> Learned:
    occurrences: dict[str, Counter[str]] = {label: Counter() for label in LABELS}
    messages: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    for label, text in docs:
        for word in text:
            occurrences[label][word] += 1
            tokens[label] += 1
        messages[label] += 1
    return occurrences, dict(messages), dict(tokens)


def learn_in_one_batch(docs: Sequence[tuple[str, list[str]]]) -> Learned:
    occurrences = {
        label: sum((Counter(text) for lb, text in docs if lb == label), Counter())
        for label in LABELS
    }
    messages = {label: sum(1 for lb, _ in docs if lb == label) for label in LABELS}
    tokens = {label: sum(occurrences[label].values()) for label in LABELS}
    return occurrences, messages, tokens


def score(
    message_words: Sequence[str],
    occurrences: Mapping[str, Counter[str]],
    messages: Mapping[str, int],
    tokens: Mapping[str, int],
    alpha: float,
) -> Scored:
    """Score like the service: evidence only for tokens with a learned count."""
    vocabulary = set().union(*(set(c) for c in occurrences.values()))
    in_message = Counter(message_words)
    evidence = [
        Evidence(w, n, {label: occurrences[label][w] for label in LABELS})
        for w, n in sorted(in_message.items())
        if w in vocabulary
    ]
    totals = {label: ClassTotals(messages[label], tokens[label]) for label in LABELS}
    return multinomial(evidence, totals=totals, vocabulary=len(vocabulary), alpha=alpha)


@given(documents, st.lists(words, max_size=10), alphas)
def test_incremental_counts_equal_batch_counts(
    docs: list[tuple[str, list[str]]], message_words: list[str], alpha: float
) -> None:
    incremental = learn_one_by_one(docs)
    batch = learn_in_one_batch(docs)
    assert incremental == batch
    assert score(message_words, *incremental, alpha) == score(message_words, *batch, alpha)


@given(documents, st.lists(words, max_size=10), alphas)
def test_learn_then_forget_restores_the_score(
    docs: list[tuple[str, list[str]]], message_words: list[str], alpha: float
) -> None:
    before = learn_one_by_one(docs)
    relearned = learn_one_by_one([*docs, ("spam", ["w0", "w0", "zz-new"])])
    occurrences, messages, tokens = relearned  # forget: subtract what learning added
    occurrences["spam"].subtract({"w0": 2, "zz-new": 1})
    occurrences["spam"] = +occurrences["spam"]  # a zero count leaves the vocabulary
    messages["spam"] -= 1
    tokens["spam"] -= 3
    assert (occurrences, messages, tokens) == before
    assert score(message_words, *relearned, alpha) == score(message_words, *before, alpha)


@given(documents, st.lists(words, max_size=10), st.lists(st.text(min_size=1), max_size=10))
def test_tokens_outside_the_vocabulary_change_nothing(
    docs: list[tuple[str, list[str]]], message_words: list[str], unknown: list[str]
) -> None:
    model = learn_one_by_one(docs)
    unseen = [f"never-learned:{u}" for u in unknown]
    plain = score(message_words, *model, alpha=1.0)
    assert score([*message_words, *unseen], *model, alpha=1.0) == plain
    assert set(plain.contributions) <= set(message_words)


def test_order_of_vocabulary_and_evidence_does_not_matter_for_bernoulli() -> None:
    rng = random.Random(5)
    evidence, vocabulary, messages = bernoulli_inputs(rng, 30, 12)
    scored = bernoulli(evidence, vocabulary_counts=vocabulary, messages=messages, alpha=1.0)
    rng.shuffle(vocabulary)
    rng.shuffle(evidence)
    again = bernoulli(evidence, vocabulary_counts=vocabulary, messages=messages, alpha=1.0)
    for label in LABELS:
        assert close(again.log_joint[label], scored.log_joint[label])
    assert again.contributions == scored.contributions
