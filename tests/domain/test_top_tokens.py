"""Scoring only the most decisive tokens."""

from __future__ import annotations

import math

from app.domain import naive_bayes as nb

TOTALS = {"ham": nb.ClassTotals(messages=10, tokens=100), "spam": nb.ClassTotals(10, 100)}


def evidence(token: str, ham: int, spam: int) -> nb.Evidence:
    return nb.Evidence(token, 1, {"ham": ham, "spam": spam})


def test_top_keeps_the_largest_spreads_and_sums_only_them() -> None:
    items = [evidence("strong", 0, 30), evidence("weak", 5, 6), evidence("medium", 9, 1)]
    full = nb.multinomial(items, TOTALS, vocabulary=50, alpha=1.0)
    top = nb.multinomial(items, TOTALS, vocabulary=50, alpha=1.0, top=2)

    assert set(top.contributions) == {"strong", "medium"}
    weak = full.contributions["weak"]
    for label in ("ham", "spam"):
        assert math.isclose(top.log_joint[label], full.log_joint[label] - weak[label])
    assert math.isclose(math.fsum(math.exp(v) for v in top.log_posteriors.values()), 1.0)


def test_top_none_or_larger_than_the_message_scores_everything() -> None:
    items = [evidence("a", 1, 2), evidence("b", 3, 0)]
    full = nb.multinomial(items, TOTALS, vocabulary=5, alpha=1.0)
    top = nb.multinomial(items, TOTALS, 5, 1.0, top=10)
    assert set(top.contributions) == set(full.contributions)
    for label, value in full.log_joint.items():
        assert math.isclose(top.log_joint[label], value, rel_tol=1e-12)


def test_top_zero_leaves_only_the_prior() -> None:
    scored = nb.multinomial([evidence("a", 0, 9)], TOTALS, vocabulary=5, alpha=1.0, top=0)
    assert scored.contributions == {}
    assert math.isclose(scored.log_odds("spam", "ham"), 0.0)


def test_ties_break_on_the_token_text() -> None:
    contributions = {"b": {"ham": 0.0, "spam": 1.0}, "a": {"ham": 1.0, "spam": 0.0}}
    assert list(nb.most_decisive(contributions, 1)) == ["a"]
