"""More than two classes: the junk-vs-not-junk log-odds (bit-identical to spam-vs-ham with
the two default classes), the most likely class, scikit-learn's MultinomialNB with three and
five classes as an oracle, a three-class worked example from the seeds' play-tennis table,
and the rules a declared list of classes follows."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.naive_bayes import MultinomialNB

from app.domain.classes import (
    class_margin,
    grouped_messages,
    junk_log_odds,
    junk_pair,
    log_mass,
    most_likely,
    scorable,
    training_lead,
)
from app.domain.labels import MAX_CLASSES, check_classes, parse_class
from app.domain.naive_bayes import NEG_INF, ClassTotals, Evidence, Scored, multinomial
from tests.domain.test_naive_bayes import (
    ALPHAS,
    ORACLE,
    SEEDS,
    TENNIS,
    multinomial_of,
    scoring_rows,
    training_set,
)

log = math.log


def random_pair_score(rng: random.Random) -> Scored:
    """A multinomial score of random evidence against random ham and spam totals."""
    vocabulary = rng.randint(5, 400)
    totals = {
        "ham": ClassTotals(rng.randint(1, 500), rng.randint(1, 10_000)),
        "spam": ClassTotals(rng.randint(1, 500), rng.randint(1, 10_000)),
    }
    evidence = [
        Evidence(
            f"t{j}", rng.randint(1, 4), {"ham": rng.randint(0, 50), "spam": rng.randint(0, 50)}
        )
        for j in range(rng.randint(0, 60))
    ]
    return multinomial(
        evidence, totals=totals, vocabulary=vocabulary, alpha=rng.choice([1.0, 0.5, 0.01])
    )


@given(st.integers(0, 2**32))
def test_two_classes_give_the_spam_ham_log_odds_bit_for_bit(seed: int) -> None:
    scored = random_pair_score(random.Random(seed))
    posteriors = scored.log_posteriors
    odds = scored.log_odds("spam", "ham")
    assert junk_log_odds(posteriors, ("spam",)) == odds  # exactly: no tolerance
    assert log_mass(posteriors, ("spam",)) == posteriors["spam"]
    assert class_margin(posteriors, "spam") == odds
    assert class_margin(posteriors, "ham") == -odds
    assert junk_pair(posteriors, ("spam",)) == ("spam", "ham")
    assert training_lead(posteriors, "spam", ("spam",)) == odds
    assert training_lead(posteriors, "ham", ("spam",)) == -odds


@pytest.mark.parametrize("n_classes", [3, 5])
@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("seed", SEEDS)
def test_junk_log_odds_and_most_likely_match_sklearn(
    seed: int, alpha: float, n_classes: int
) -> None:
    x, y, labels = training_set(seed, n_classes)
    model = MultinomialNB(alpha=alpha).fit(x, y)
    junk = labels[1::2]  # c1, c3: junk; c0, c2, c4: not
    rows = scoring_rows(seed, x.shape[1])
    probabilities = model.predict_proba(rows)
    predicted = model.predict(rows)
    classes = model.classes_.tolist()
    for row, proba, best in zip(rows, probabilities, predicted, strict=True):
        ours = multinomial_of(row, x, y, alpha)
        in_junk = sum(p for c, p in zip(classes, proba, strict=True) if c in junk)
        expected = log(in_junk) - log(1 - in_junk)
        assert math.isclose(junk_log_odds(ours.log_posteriors, junk), expected, abs_tol=1e-7)
        assert math.isclose(log_mass(ours.log_posteriors, junk), log(in_junk), abs_tol=ORACLE)
        assert most_likely(ours.log_posteriors) == best


def tennis_by_outlook(alpha: float) -> Scored:
    """The seeds' play-tennis table read the other way round: Outlook (sunny, overcast,
    rain) is the class, whether they played the one token of each day."""
    played: dict[str, Counter[str]] = {"S": Counter(), "O": Counter(), "R": Counter()}
    for outlook, *_, play in TENNIS:
        played[outlook][play] += 1
    days = {outlook: sum(c.values()) for outlook, c in played.items()}
    return multinomial(
        [Evidence("play:+", 1, {outlook: c["+"] for outlook, c in played.items()})],
        totals={outlook: ClassTotals(n, n) for outlook, n in days.items()},
        vocabulary=2,
        alpha=alpha,
    )


def test_three_class_worked_example_from_the_tennis_table_mle() -> None:
    # Days: sunny 5 (2 played), overcast 4 (4 played), rain 5 (3 played); 9 played of 14.
    # P(S|+) = (5/14 · 2/5) / (9/14) = 2/9, P(O|+) = 4/9, P(R|+) = 3/9.
    scored = tennis_by_outlook(alpha=0)
    expected = {"S": 2 / 9, "O": 4 / 9, "R": 3 / 9}
    for outlook, p in expected.items():
        assert math.isclose(scored.log_posteriors[outlook], log(p), abs_tol=1e-12)
    assert most_likely(scored.log_posteriors) == "O"
    # Sunny or rain against overcast: (2 + 3) / 9 against 4 / 9.
    assert math.isclose(junk_log_odds(scored.log_posteriors, ("S", "R")), log(5 / 4), abs_tol=1e-12)
    assert junk_pair(scored.log_posteriors, ("S", "R")) == ("R", "O")


def test_three_class_worked_example_from_the_tennis_table_laplace() -> None:
    # Laplace over the two values of Play: P(+|S) = 3/7, P(+|O) = 5/6, P(+|R) = 4/7.
    scored = tennis_by_outlook(alpha=1)
    joint = {"S": 5 / 14 * 3 / 7, "O": 4 / 14 * 5 / 6, "R": 5 / 14 * 4 / 7}
    total = sum(joint.values())
    for outlook, p in joint.items():
        assert math.isclose(scored.log_posteriors[outlook], log(p / total), abs_tol=1e-12)
    margin = class_margin(scored.log_posteriors, "S")
    assert margin is not None
    assert math.isclose(margin, log(joint["S"] / joint["O"]), abs_tol=1e-12)


def test_a_class_missing_from_the_posteriors_has_probability_zero() -> None:
    posteriors = {"ham": log(0.25), "spam": log(0.75)}
    assert log_mass(posteriors, ("phishing",)) == NEG_INF
    assert junk_log_odds(posteriors, ("spam", "phishing")) == posteriors["spam"] - posteriors["ham"]
    assert class_margin(posteriors, "phishing") is None
    assert class_margin({"ham": 0.0}, "ham") is None


def test_thick_training_weighs_the_side_once_the_class_leads() -> None:
    # P(ham, hard_ham, spam) = 0.5, 0.3, 0.2: ham leads hard_ham by log(5/3) nats only,
    # and the not-junk side leads spam by log(0.8/0.2) = log 4.
    posteriors = {"ham": log(0.5), "hard_ham": log(0.3), "spam": log(0.2)}
    junk = ("spam",)
    assert math.isclose(training_lead(posteriors, "ham", junk) or 0.0, log(4))
    # A hard ham message the model thinks is ham: wrong class, its class margin (< 0).
    assert training_lead(posteriors, "hard_ham", junk) == log(0.3) - log(0.5)
    assert training_lead(posteriors, "spam", junk) == log(0.2) - log(0.5)
    # A spam message judged spam: the junk side's lead, log(0.6 / 0.4).
    spammy = {"ham": log(0.3), "hard_ham": log(0.1), "spam": log(0.6)}
    assert math.isclose(training_lead(spammy, "spam", junk) or 0.0, log(0.6 / 0.4))
    assert training_lead(spammy, "phishing", ("spam", "phishing")) is None


def test_most_likely_takes_the_first_of_equals() -> None:
    assert most_likely({"ham": log(0.5), "spam": log(0.5)}) == "ham"
    assert most_likely({"b": -1.0, "a": -1.0, "c": -2.0}) == "b"


def test_scorable_classes_need_junk_and_not_junk() -> None:
    classes, junk = ("ham", "spam", "news", "phish"), ("spam", "phish")
    learned = {"ham": 3, "spam": 0, "news": 2, "phish": 1}
    assert scorable(learned, classes, junk) == ("ham", "news", "phish")
    assert scorable({"ham": 3, "news": 2}, classes, junk) is None
    assert scorable({"spam": 3, "phish": 2}, classes, junk) is None
    assert grouped_messages(learned, junk) == {"not_junk": 5, "junk": 1}


@pytest.mark.parametrize(
    ("classes", "junk", "problem"),
    [
        (("ham", "spam", "News"), ("spam",), "class name 'News'"),
        (("ham", "spam", "9lives"), ("spam",), "class name '9lives'"),
        (("ham", "spam", "a" * 32), ("spam",), "at most 31"),
        (("ham", "spam", "news", "news"), ("spam",), "named twice: news"),
        (("ham", "news"), ("news",), "missing: spam"),
        (("ham", "spam"), ("spam", "phish"), "not among the classes: phish"),
        (("ham", "spam", "phish"), ("phish",), "spam must be among the junk classes"),
        (("ham", "spam"), ("ham", "spam"), "ham cannot be a junk class"),
        (("ham", "spam", *(f"c{i}" for i in range(MAX_CLASSES - 1))), ("spam",), "at most 20"),
    ],
)
def test_declared_classes_are_checked(
    classes: tuple[str, ...], junk: tuple[str, ...], problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        check_classes(classes, junk)


def test_valid_declarations_pass() -> None:
    check_classes(("ham", "spam"), ("spam",))
    check_classes(("newsletter", "ham", "phishing", "spam"), ("phishing", "spam"))
    check_classes(("ham", "spam", *(f"c{i}" for i in range(MAX_CLASSES - 2))), ("spam",))


def test_parse_class_names_the_declared_classes() -> None:
    assert parse_class(" Newsletter ", ("ham", "spam", "newsletter")) == "newsletter"
    with pytest.raises(ValueError, match="expected one of ham, spam, newsletter"):
        parse_class("receipt", ("ham", "spam", "newsletter"))


@given(st.integers(0, 2**32), st.sampled_from([1.0, 0.5, 0.01]), st.sampled_from([3, 5, 10]))
def test_many_class_contributions_are_the_term_by_term_values_exactly(
    seed: int, alpha: float, n_classes: int
) -> None:
    """Each token's contribution to each class is n · (log(count + α) − log(T_c + α|V|)),
    to the last bit, whether the token has a count in the class or not."""
    rng = random.Random(seed)
    labels = [f"c{i}" for i in range(n_classes)]
    vocabulary = rng.randint(5, 400)
    totals = {c: ClassTotals(rng.randint(1, 99), rng.randint(0, 5_000)) for c in labels}
    evidence = [
        Evidence(
            f"t{j}",
            rng.randint(1, 3),
            {c: rng.randint(1, 40) for c in labels if rng.random() < 0.3},
        )
        for j in range(rng.randint(1, 40))
    ]
    scored = multinomial(evidence, totals=totals, vocabulary=vocabulary, alpha=alpha)
    for item in evidence:
        for c in labels:
            d = totals[c].tokens + alpha * vocabulary
            expected = item.in_message * (log(item.counts.get(c, 0) + alpha) - log(d))
            assert scored.contributions[item.token][c] == expected
