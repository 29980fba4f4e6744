"""Scoring only the most decisive tokens."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from app.domain import naive_bayes as nb

TOTALS = {"ham": nb.ClassTotals(messages=10, tokens=100), "spam": nb.ClassTotals(10, 100)}


def evidence(token: str, ham: int, spam: int) -> nb.Evidence:
    return nb.Evidence(token, 1, {"ham": ham, "spam": spam})


def kind(token: str) -> str:
    return "field" if ":" in token else "word"


def test_top_keeps_the_largest_spreads_and_sums_only_them() -> None:
    items = [evidence("strong", 0, 30), evidence("weak", 5, 6), evidence("medium", 9, 1)]
    full = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0)
    top = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0, top=2)

    assert set(top.contributions) == {"strong", "medium"}
    weak = full.contributions["weak"]
    for label in ("ham", "spam"):
        assert math.isclose(top.log_joint[label], full.log_joint[label] - weak[label])
    assert math.isclose(math.fsum(math.exp(v) for v in top.log_posteriors.values()), 1.0)


def test_top_none_or_larger_than_the_message_scores_everything() -> None:
    items = [evidence("a", 1, 2), evidence("b", 3, 0)]
    full = nb.multinomial(items, totals=TOTALS, vocabulary=5, alpha=1.0)
    top = nb.multinomial(items, totals=TOTALS, vocabulary=5, alpha=1.0, top=10)
    assert set(top.contributions) == set(full.contributions)
    for label, value in full.log_joint.items():
        assert math.isclose(top.log_joint[label], value, rel_tol=1e-12)


def test_top_zero_leaves_only_the_prior() -> None:
    scored = nb.multinomial([evidence("a", 0, 9)], totals=TOTALS, vocabulary=5, alpha=1.0, top=0)
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

    single = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0, top=2)
    grouped = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0, top=2, group=kind)

    assert set(single.contributions) == {"received:a", "received:b"}
    assert set(grouped.contributions) == {"received:a", "received:b", "cheap", "meeting"}
    full = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0)
    dropped = ("received:c", "the")
    for label in ("ham", "spam"):
        expected = full.log_joint[label] - math.fsum(full.contributions[t][label] for t in dropped)
        assert math.isclose(grouped.log_joint[label], expected)


def test_a_group_smaller_than_its_budget_keeps_every_token() -> None:
    items = [evidence("subject:hi", 0, 3), evidence("a", 1, 2), evidence("b", 3, 0)]
    grouped = nb.multinomial(
        items, totals=TOTALS, vocabulary=5, alpha=1.0, top=2, group=lambda t: t[:1]
    )
    assert set(grouped.contributions) == {"subject:hi", "a", "b"}


def test_a_short_group_counts_as_top_tokens_of_its_mean_strength() -> None:
    # Budget 4 per kind, floor 1: two header tokens weigh 4/2 = 2 each, four words weigh 1.
    items = [
        evidence("from:a", 0, 9),
        evidence("received:b", 1, 6),
        evidence("cheap", 1, 9),
        evidence("meeting", 6, 1),
        evidence("offer", 2, 7),
        evidence("lunch", 5, 2),
    ]
    plain = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0, top=4, group=kind)
    weighted = nb.multinomial(
        items, totals=TOTALS, vocabulary=50, alpha=1.0, top=4, group=kind, floor=1
    )

    priors = nb.log_priors({"ham": 10, "spam": 10})
    for label in ("ham", "spam"):
        fields = plain.contributions["from:a"][label] + plain.contributions["received:b"][label]
        words = math.fsum(plain.contributions[t][label] for t in ("cheap", "meeting", "offer"))
        words += plain.contributions["lunch"][label]
        assert math.isclose(weighted.log_joint[label], priors[label] + 2 * fields + words)
        assert math.isclose(
            weighted.contributions["from:a"][label], 2 * plain.contributions["from:a"][label]
        )
        assert weighted.contributions["cheap"][label] == plain.contributions["cheap"][label]
    assert math.isclose(math.fsum(math.exp(v) for v in weighted.log_posteriors.values()), 1.0)


def test_the_floor_bounds_the_weight_of_a_few_tokens() -> None:
    # One token with a budget of 25: weight 25 without a floor, 25/10 with a floor of 10.
    items = [evidence("cheap", 1, 9)]
    plain = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0, top=25)
    spread = plain.log_odds("spam", "ham")
    for floor, weight in ((1, 25.0), (10, 2.5), (25, 1.0), (40, 1.0)):
        scored = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0, top=25, floor=floor)
        assert math.isclose(scored.log_odds("spam", "ham"), weight * spread), floor


def test_a_full_group_and_the_unnormalised_score_are_unchanged() -> None:
    items = [evidence(f"w{i}", i % 4, 7 - i % 4) for i in range(8)]
    plain = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0, top=5)
    weighted = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0, top=5, floor=1)
    assert weighted.log_joint == plain.log_joint
    # Without a budget there is no length to normalise to: every token scores once.
    full = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0, floor=1)
    assert (
        full.log_joint == nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0).log_joint
    )


def test_the_log_odds_are_the_prior_plus_the_weighted_clues() -> None:
    items = [evidence("subject:win", 0, 4), evidence("cash", 1, 8), evidence("hello", 6, 2)]
    scored = nb.multinomial(
        items, totals=TOTALS, vocabulary=30, alpha=1.0, top=25, group=kind, floor=3
    )
    clues = nb.clues(scored, "spam", "ham", limit=10)
    assert math.isclose(scored.log_odds("spam", "ham"), math.fsum(c.weight for c in clues))


# ---- tokens that repeat the same learned counts ------------------------------------------------


def test_tokens_learned_together_count_once() -> None:
    # A relay's host name and its networks, learned in the same 12 spam every time.
    relay = [evidence(f"received:{name}", 0, 12) for name in ("host:mx.example", "ip:192.0.2")]
    items = [*relay, evidence("received:ip:192.0", 0, 12), evidence("cheap", 1, 9)]
    scored = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0, group=kind, distinct=10)
    full = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0, group=kind)

    assert set(scored.contributions) == {"received:host:mx.example", "cheap"}
    once = full.contributions["received:ip:192.0"]
    spread = (once["spam"] - once["ham"]) * 2  # two of the three copies are gone
    assert math.isclose(scored.log_odds("spam", "ham"), full.log_odds("spam", "ham") - spread)


def test_tokens_below_the_support_or_with_other_counts_all_count() -> None:
    items = [
        evidence("rare:a", 0, 3),  # identical, but from 3 messages: chance, not a pair
        evidence("rare:b", 0, 3),
        evidence("list:a", 20, 2),
        evidence("list:b", 20, 3),  # one spam apart: different evidence
    ]
    scored = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0, distinct=10)
    assert set(scored.contributions) == {"rare:a", "rare:b", "list:a", "list:b"}


def test_identical_counts_in_different_groups_or_message_counts_are_kept() -> None:
    items = [evidence("subject:cheap", 0, 12), evidence("cheap", 0, 12)]
    assert len(nb.distinct_evidence(items, 10, group=kind)) == 2
    assert len(nb.distinct_evidence(items, 10)) == 1  # one group: one observation
    twice = [nb.Evidence("cheap", 2, {"spam": 12}), nb.Evidence("cheaper", 1, {"spam": 12})]
    assert len(nb.distinct_evidence(twice, 10)) == 2


def test_distinct_keeps_the_first_token_by_text_whatever_the_order() -> None:
    items = [evidence("b", 0, 12), evidence("c", 0, 12), evidence("a", 0, 12)]
    for order in (items, items[::-1]):
        assert [e.token for e in nb.distinct_evidence(order, 10)] == ["a"]


def test_an_absent_label_and_a_zero_count_are_the_same_counts() -> None:
    items = [nb.Evidence("a", 1, {"spam": 12}), nb.Evidence("b", 1, {"ham": 0, "spam": 12})]
    assert [e.token for e in nb.distinct_evidence(items, 10)] == ["a"]


def distinct_reference(items: list[nb.Evidence], least: int) -> list[str]:
    """The rule as ``distinct_evidence`` states it, plainly: tokens learned from ``least``
    messages or more that count alike here and hold the same non-zero counts, per group, are
    one, kept under the first token by text. The tokens kept, sorted."""
    kept, sets = [], {}
    for e in items:
        if sum(e.counts.values()) < least:
            kept.append(e.token)
            continue
        same = (kind(e.token), e.in_message, frozenset((k, v) for k, v in e.counts.items() if v))
        sets.setdefault(same, []).append(e.token)
    return sorted([*kept, *(min(tokens) for tokens in sets.values())])


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c", "subject:a", "subject:b", "url:a"]),
            st.integers(1, 2),
            st.dictionaries(st.sampled_from(["ham", "spam", "other"]), st.integers(0, 12)),
        ),
        max_size=30,
    ),
    st.integers(0, 12),
)
def test_distinct_evidence_keeps_what_the_rule_keeps(
    drawn: list[tuple[str, int, dict[str, int]]], least: int
) -> None:
    items = [nb.Evidence(f"{token}{i}", n, counts) for i, (token, n, counts) in enumerate(drawn)]
    expected = distinct_reference(items, least)
    two = [item for item in items if "other" not in item.counts]
    for labels in (None, ["ham", "spam", "other"], ["other", "spam", "ham"]):
        kept = nb.distinct_evidence(items, least, group=kind, labels=labels)
        assert sorted(e.token for e in kept) == expected
    assert sorted(
        e.token for e in nb.distinct_evidence(two, least, group=kind, labels=["ham", "spam"])
    ) == (distinct_reference(two, least))


def reference(
    items: list[nb.Evidence],
    totals: dict[str, nb.ClassTotals],
    vocabulary: int,
    top: int,
    floor: int | None,
) -> dict[str, float]:
    """The joint log-likelihoods as the module's docstring writes them, one plain step at a
    time: every contribution, the ``top`` most decisive of each kind (spread, then token
    text), each kind's length weight, then the sum in that order."""
    labels = list(totals)
    per = {
        e.token: [
            e.in_message
            * (math.log(e.counts.get(lb, 0) + 1.0) - math.log(totals[lb].tokens + vocabulary))
            for lb in labels
        ]
        for e in items
    }
    ranked = sorted(per, key=lambda t: (-(max(per[t]) - min(per[t])), t))
    chosen: list[str] = []
    for token in ranked:
        if sum(kind(t) == kind(token) for t in chosen) < top:
            chosen.append(token)
    joint = nb.log_priors({lb: t.messages for lb, t in totals.items()})
    for token in chosen:
        size = sum(kind(t) == kind(token) for t in chosen)
        weight = 1.0 if floor is None or size >= top else top / max(size, min(floor, top))
        for index, lb in enumerate(labels):
            joint[lb] += (weight * per[token][index]) if floor is not None else per[token][index]
    return joint


@given(
    labels=st.sampled_from([("ham", "spam"), ("spam", "ham"), ("a", "b", "c")]),
    counts=st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(0, 40), st.booleans()),
        min_size=0,
        max_size=40,
    ),
    top=st.integers(1, 12),
    floor=st.one_of(st.none(), st.integers(1, 15)),
)
def test_the_score_is_the_documented_sum_to_the_last_bit(
    labels: tuple[str, ...],
    counts: list[tuple[int, int, int, bool]],
    top: int,
    floor: int | None,
) -> None:
    """Two labels take an unrolled path, any other number the general one: both must give
    exactly (not just closely) the plain computation, or a cached and an uncached score of
    one message could differ."""
    items = [
        nb.Evidence(
            ("subject:" if field else "") + f"t{i}",
            1 + i % 2,
            dict(zip(labels, c[: len(labels)], strict=True)),
        )
        for i, (*c, field) in enumerate(counts)
    ]
    totals = {lb: nb.ClassTotals(3 + i, 500 + 7 * i) for i, lb in enumerate(labels)}
    scored = nb.multinomial(
        items, totals=totals, vocabulary=90, alpha=1.0, top=top, group=kind, floor=floor
    )
    assert scored.log_joint == reference(items, totals, 90, top, floor)


THREE = {
    "ham": nb.ClassTotals(messages=10, tokens=100),
    "hard_ham": nb.ClassTotals(messages=10, tokens=100),
    "spam": nb.ClassTotals(messages=10, tokens=100),
}


def three(token: str, ham: int, hard_ham: int, spam: int) -> nb.Evidence:
    return nb.Evidence(token, 1, {"ham": ham, "hard_ham": hard_ham, "spam": spam})


def test_with_junk_named_more_than_two_classes_rank_by_junk_against_not_junk() -> None:
    # "bulk" tells ham from hard ham (spread log 31) but junk from not-junk less than
    # "viagra" does; "offer" is as common in hard ham as in spam.
    items = [three("bulk", 0, 30, 15), three("viagra", 0, 0, 12), three("offer", 0, 20, 20)]
    spread = nb.multinomial(items, totals=THREE, vocabulary=50, alpha=1.0, top=1)
    assert set(spread.contributions) == {"bulk"}
    ranked = nb.multinomial(items, totals=THREE, vocabulary=50, alpha=1.0, top=1, junk=("spam",))
    assert set(ranked.contributions) == {"viagra"}
    sides = [False, False, True]
    d = math.log(150)  # the shared denominator 100 + 50
    terms = {item.token: [math.log(c + 1) - d for c in item.counts.values()] for item in items}
    # |log P(t|spam) - log((P(t|ham) + P(t|hard_ham)) / 2)|, term by term.
    assert math.isclose(nb.junk_spread(terms["viagra"], sides), math.log(13))
    assert math.isclose(nb.junk_spread(terms["bulk"], sides), math.log(16 / 16))
    assert math.isclose(nb.junk_spread(terms["offer"], sides), abs(math.log(21 / 11)))


def test_junk_spread_of_one_class_a_side_is_the_two_class_spread() -> None:
    assert nb.junk_spread([-3.5, -1.25], [False, True]) == 2.25
    assert nb.junk_spread([-1.25, -3.5], [False, True]) == 2.25
    # Two labels keep the spread ranking bit for bit, junk named or not.
    items = [evidence("strong", 0, 30), evidence("weak", 5, 6), evidence("medium", 9, 1)]
    plain = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0, top=2)
    named = nb.multinomial(items, totals=TOTALS, vocabulary=50, alpha=1.0, top=2, junk=("spam",))
    assert named == plain


@given(
    st.lists(
        st.tuples(
            st.one_of(st.floats(-200, 0, allow_nan=False), st.just(-math.inf)), st.booleans()
        ),
        min_size=3,
        max_size=12,
    ).filter(lambda pairs: 0 < sum(is_junk for _, is_junk in pairs) < len(pairs))
)
def test_the_ranking_with_sides_fixed_is_junk_spread_bit_for_bit(
    pairs: list[tuple[float, bool]],
) -> None:
    """The ranking's fast path against the formula taken side by side with ``log_sum_exp``."""
    values = [value for value, _ in pairs]
    sides = [is_junk for _, is_junk in pairs]
    junk = [v for v, is_junk in pairs if is_junk]
    other = [v for v, is_junk in pairs if not is_junk]
    gap = (nb.log_sum_exp(junk) - math.log(len(junk))) - (
        nb.log_sum_exp(other) - math.log(len(other))
    )
    formula = 0.0 if math.isnan(gap) else abs(gap)
    assert nb._SideSpread(sides).of(values).hex() == formula.hex()
    assert nb.junk_spread(values, sides).hex() == formula.hex()


def stepwise(
    items: list[nb.Evidence],
    totals: dict[str, nb.ClassTotals],
    *,
    vocabulary: int,
    alpha: float,
    top: int,
    floor: int | None,
    distinct: int | None,
) -> nb.Scored:
    """``multinomial`` through its general steps (``_chosen``: repeats left out, every row,
    the ranking, the ``top`` of each kind), then each kind's weight and the sum, label by
    label, as the general loop takes them."""
    labels = list(totals)
    denominators = [t.tokens + alpha * vocabulary for t in totals.values()]
    logs = [math.log(d) if d > 0 else None for d in denominators]
    chosen = nb._chosen(
        items,
        labels=labels,
        denominators=denominators,
        logs=logs,
        alpha=alpha,
        top=top,
        group=kind,
        distinct=distinct,
        junk=(),
    )
    weights = nb._weights([key for _, _, key in chosen], top, floor) if floor else None
    joint = nb.log_priors({lb: t.messages for lb, t in totals.items()})
    contributions: dict[str, dict[str, float]] = {}
    for token, values, key in chosen:
        weighted = [v * weights[key] if weights else v for v in values]
        contributions[token] = dict(zip(labels, weighted, strict=True))
        for label, value in zip(labels, weighted, strict=True):
            joint[label] += value
    return nb.Scored(joint, nb.normalise(joint), contributions)


@given(
    labels=st.sampled_from([("ham", "spam"), ("spam", "ham")]),
    counts=st.lists(
        st.tuples(
            st.sampled_from(["w", "subject:", "url:host:"]),
            st.integers(1, 2),
            # Few values, so that repeats (equal counts) are common.
            st.sampled_from([0, 1, 4, 12, 30, 0.25, 11.0]),
            st.sampled_from([0, 1, 4, 12, 30, 0.25, 11.0]),
        ),
        max_size=60,
    ),
    alpha=st.sampled_from([1.0, 0.5, 0.0]),
    top=st.integers(0, 12),
    floor=st.one_of(st.none(), st.integers(1, 15)),
    distinct=st.one_of(st.none(), st.integers(1, 20)),
)
def test_two_labels_score_in_one_pass_as_in_the_general_steps(
    labels: tuple[str, str],
    counts: list[tuple[str, int, float, float]],
    alpha: float,
    top: int,
    floor: int | None,
    distinct: int | None,
) -> None:
    """The one-pass path of the default model (two labels, a ``top``) gives the general
    steps' tokens, contributions, order of adding and posteriors, to the last bit: repeats
    (tokens of equal counts, drawn often here) included."""
    items = [
        nb.Evidence(f"{prefix}t{i % 7}{i}", n, {labels[0]: a, labels[1]: b})
        for i, (prefix, n, a, b) in enumerate(counts)
        if alpha > 0 or (a > 0 and b > 0)  # alpha 0: the blend, whose counts are all positive
    ]
    totals = {labels[0]: nb.ClassTotals(3, 500), labels[1]: nb.ClassTotals(4, 420)}
    kwargs = {"vocabulary": 90, "alpha": alpha, "top": top, "floor": floor, "distinct": distinct}
    scored = nb.multinomial(items, totals=totals, group=kind, **kwargs)  # type: ignore[arg-type]
    expected = stepwise(items, totals, **kwargs)  # type: ignore[arg-type]
    assert list(scored.contributions.items()) == list(expected.contributions.items())
    assert scored.log_joint == expected.log_joint
    assert scored.log_posteriors == expected.log_posteriors
