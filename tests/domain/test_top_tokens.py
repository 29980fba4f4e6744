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


def test_a_group_budget_applies_to_each_group_on_its_own() -> None:
    # Three strong header tokens and two weaker words: one budget of 2 would take two
    # header tokens; a budget of 2 per group takes the best two of each kind.
    items = [
        evidence("received:a", 0, 40),
        evidence("received:b", 0, 35),
        evidence("received:c", 0, 30),
        evidence("cheap", 1, 9),
        evidence("meeting", 6, 1),
        evidence("the", 5, 5),
    ]

    def kind(token: str) -> str:
        return "field" if ":" in token else "word"

    single = nb.multinomial(items, TOTALS, vocabulary=50, alpha=1.0, top=2)
    grouped = nb.multinomial(items, TOTALS, vocabulary=50, alpha=1.0, top=2, group=kind)

    assert set(single.contributions) == {"received:a", "received:b"}
    assert set(grouped.contributions) == {"received:a", "received:b", "cheap", "meeting"}
    full = nb.multinomial(items, TOTALS, vocabulary=50, alpha=1.0)
    dropped = ("received:c", "the")
    for label in ("ham", "spam"):
        expected = full.log_joint[label] - math.fsum(full.contributions[t][label] for t in dropped)
        assert math.isclose(grouped.log_joint[label], expected)


def test_a_group_smaller_than_its_budget_keeps_every_token() -> None:
    items = [evidence("subject:hi", 0, 3), evidence("a", 1, 2), evidence("b", 3, 0)]
    grouped = nb.multinomial(items, TOTALS, 5, 1.0, top=2, group=lambda t: t[:1])
    assert set(grouped.contributions) == {"subject:hi", "a", "b"}
