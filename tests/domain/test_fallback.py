"""The m-estimate blend of a user's counts with the site-wide model (app.domain.fallback)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain import fallback
from app.domain import naive_bayes as nb
from app.domain.fallback import blend
from app.domain.tokenizer import token_kind

SITE_TOTALS = {"ham": nb.ClassTotals(30, 600), "spam": nb.ClassTotals(10, 400)}
SITE = [
    nb.Evidence("meeting", 1, {"ham": 20, "spam": 1}),
    nb.Evidence("viagra", 1, {"spam": 30}),
]
VOCABULARY = 50
ALPHA = 1.0

Blended = tuple[list[nb.Evidence], dict[str, nb.ClassTotals]]


def blend_with_site(
    own: Sequence[nb.Evidence],
    own_totals: Mapping[str, nb.ClassTotals],
    *,
    site: Sequence[nb.Evidence] = SITE,
    site_totals: Mapping[str, nb.ClassTotals] = SITE_TOTALS,
    alpha: float = ALPHA,
    strength: float,
    distinct: int | None = None,
) -> Blended:
    """``blend`` with the site-wide model above (``VOCABULARY`` tokens) as the prior."""
    return blend(
        own,
        own_totals=own_totals,
        site=site,
        site_totals=site_totals,
        site_vocabulary=VOCABULARY,
        alpha=alpha,
        strength=strength,
        distinct=distinct,
    )


def pseudo_scored(blended: Blended) -> nb.Scored:
    """The blend's pseudo-counts scored as ``blend`` says: without further smoothing."""
    evidence, totals = blended
    return nb.multinomial(evidence, totals=totals, vocabulary=0, alpha=0.0)


def test_the_m_estimate_of_the_seeds() -> None:
    """P(w|c) = (n_c + m p) / (n + m), p the site-wide Laplace estimate, m = K G_c / M_c."""
    own = [nb.Evidence("meeting", 1, {"ham": 4})]
    own_totals = {"ham": nb.ClassTotals(5, 40), "spam": nb.ClassTotals(0, 0)}
    evidence, totals = blend_with_site(own, own_totals, strength=6)
    by_token = {item.token: item.counts for item in evidence}
    m_ham, m_spam = 6 * 600 / 30, 6 * 400 / 10  # 120 and 240 tokens
    p_ham = (20 + 1) / (600 + 50)
    assert by_token["meeting"]["ham"] == pytest.approx(4 + m_ham * p_ham)
    assert by_token["meeting"]["spam"] == pytest.approx(m_spam * (1 + 1) / (400 + 50))
    assert by_token["viagra"]["ham"] == pytest.approx(m_ham * 1 / 650)
    assert totals["ham"].tokens == pytest.approx(40 + m_ham)
    assert totals["spam"].tokens == pytest.approx(m_spam)
    # the class prior: (N_c + K pi_c) / (N + K), pi from the site-wide messages
    assert totals["ham"].messages == pytest.approx(5 + 6 * 30 / 40)
    assert totals["spam"].messages == pytest.approx(6 * 10 / 40)
    scored = pseudo_scored((evidence, totals))
    expected = math.log(by_token["meeting"]["ham"] / totals["ham"].tokens)
    assert scored.contributions["meeting"]["ham"] == pytest.approx(expected)


def test_a_user_with_nothing_learned_is_judged_as_the_site_wide_model() -> None:
    blended = pseudo_scored(blend_with_site([], {}, strength=37))
    site = nb.multinomial(SITE, totals=SITE_TOTALS, vocabulary=VOCABULARY, alpha=ALPHA)
    for label in ("ham", "spam"):
        assert blended.log_posteriors[label] == pytest.approx(site.log_posteriors[label])
        for token in ("meeting", "viagra"):
            assert blended.contributions[token][label] == pytest.approx(
                site.contributions[token][label]
            )


def test_a_users_own_mail_dominates_once_they_have_learned_much_more() -> None:
    """The site says 'meeting' is ham; this user's 2,000 messages say it is spam."""
    own = [nb.Evidence("meeting", 1, {"spam": 900, "ham": 10})]
    own_totals = {"ham": nb.ClassTotals(1000, 20_000), "spam": nb.ClassTotals(1000, 20_000)}
    site = [SITE[0]]
    weak = blend_with_site(own, own_totals, site=site, strength=10)
    strong = blend_with_site(own, own_totals, site=site, strength=1e6)
    odds_weak = pseudo_scored(weak).log_odds("spam", "ham")
    odds_strong = pseudo_scored(strong).log_odds("spam", "ham")
    site_scored = nb.multinomial(site, totals=SITE_TOTALS, vocabulary=VOCABULARY, alpha=ALPHA)
    site_odds = site_scored.log_odds("spam", "ham")
    assert site_odds < 0 < odds_weak
    assert odds_strong == pytest.approx(site_odds, abs=0.05)


def test_a_token_known_to_one_model_only_still_has_a_positive_estimate() -> None:
    own = [nb.Evidence("mine-only", 1, {"ham": 2})]
    own_totals = {"ham": nb.ClassTotals(3, 30), "spam": nb.ClassTotals(1, 10)}
    evidence, _ = blend_with_site(own, own_totals, strength=5)
    assert all(value > 0 for item in evidence for value in item.counts.values())
    assert {item.token for item in evidence} == {"mine-only", "meeting", "viagra"}


def test_repeats_are_found_on_both_models_counts() -> None:
    """Two tokens always learned together count once, as the site-wide model counts them."""
    site = [
        nb.Evidence("relay:a", 1, {"spam": 12}),
        nb.Evidence("relay:b", 1, {"spam": 12}),
        nb.Evidence("word", 1, {"ham": 3}),
    ]
    evidence, _ = blend_with_site([], {}, site=site, strength=5, distinct=10)
    assert sorted(item.token for item in evidence) == ["relay:a", "word"]


@pytest.mark.parametrize(
    "site_totals",
    [
        {"ham": nb.ClassTotals(30, 600), "spam": nb.ClassTotals(0, 0)},
        {"ham": nb.ClassTotals(30, 600), "spam": nb.ClassTotals(4, 0)},
    ],
)
def test_no_prior_without_site_wide_tokens_in_every_label(
    site_totals: dict[str, nb.ClassTotals],
) -> None:
    with pytest.raises(ValueError, match="every label"):
        blend_with_site([], {}, site_totals=site_totals, strength=5)


def test_no_prior_without_smoothing() -> None:
    with pytest.raises(ValueError, match="alpha"):
        blend_with_site([], {}, alpha=0.0, strength=5)


TOKENS = st.sampled_from([f"{kind}t{i}" for kind in ("", "subject:", "from:") for i in range(12)])
COUNT = st.integers(0, 40) | st.floats(0, 40, allow_nan=False, allow_infinity=False)


@st.composite
def blend_inputs(draw: st.DrawFn) -> tuple[list[nb.Evidence], dict[str, object]]:
    """A user's and the site-wide evidence of one message over two labels in either order,
    with counts a label may lack, and every parameter ``blend`` takes."""
    labels = draw(st.sampled_from([("ham", "spam"), ("spam", "ham")]))
    tokens = draw(st.lists(TOKENS, unique=True, max_size=24))
    in_message = {token: draw(st.sampled_from([1, 1, 1, 2, 3])) for token in tokens}

    counts = st.dictionaries(st.sampled_from(labels), COUNT)
    # A few counts several tokens share: tokens learned together, the repeats ``distinct``
    # finds and keeps the first of by token text.
    shared = st.sampled_from(draw(st.lists(counts, min_size=1, max_size=3)))

    def evidence() -> list[nb.Evidence]:
        # A token may come twice (its last counts are the ones blended).
        chosen = draw(st.lists(st.sampled_from(tokens), max_size=30)) if tokens else []
        return [nb.Evidence(token, in_message[token], draw(shared | counts)) for token in chosen]

    own = evidence()
    totals = st.builds(nb.ClassTotals, st.integers(1, 500), st.integers(1, 50_000))
    return own, {
        "own_totals": draw(st.dictionaries(st.sampled_from(labels), totals)),
        "site": evidence(),
        "site_totals": {label: draw(totals) for label in labels},
        "site_vocabulary": draw(st.integers(0, 9_000)),
        "alpha": draw(st.sampled_from([1.0, 0.5, 0.1])),
        "strength": draw(st.sampled_from([1.0, 5.0, 20.0])),
        "distinct": draw(st.sampled_from([None, 1, 3, 10])),
        "group": draw(st.sampled_from([None, token_kind])),
    }


def as_pairs(evidence: Sequence[nb.Evidence], labels: Sequence[str]) -> list[nb.Pair]:
    a, b = labels
    return [(e.token, e.in_message, e.counts.get(a, 0), e.counts.get(b, 0)) for e in evidence]


@settings(max_examples=300)
@given(blend_inputs())
def test_two_labels_combine_as_every_label_does_bit_for_bit(
    drawn: tuple[list[nb.Evidence], dict[str, object]],
) -> None:
    """The unrolled two-label blend of pairs gives the term-by-term blend's tokens, in its
    order, and its pseudo-counts to the last bit; so do ``blend`` of two labels and
    ``blend_pairs``, with the same totals. (The two combines are called, not ``blend``: a
    compiled module calls its own functions directly, whatever its attributes are set to.)"""
    own, drawn_kwargs = drawn
    kwargs: dict[str, Any] = dict(drawn_kwargs)
    site_totals: dict[str, nb.ClassTotals] = kwargs["site_totals"]
    labels = list(site_totals)
    alpha, vocabulary, strength = kwargs["alpha"], kwargs["site_vocabulary"], kwargs["strength"]
    prior = {
        "mass": {label: strength * t.tokens / t.messages for label, t in site_totals.items()},
        "spread": {label: t.tokens + alpha * vocabulary for label, t in site_totals.items()},
        "alpha": alpha,
        "distinct": kwargs["distinct"],
        "group": kwargs["group"],
    }
    own_pairs, site_pairs = as_pairs(own, labels), as_pairs(kwargs["site"], labels)
    unrolled = fallback._combine_pair(own_pairs, site_pairs, **prior)
    general = fallback._combine(own, kwargs["site"], **prior)
    assert [(token, n) for token, n, _, _ in unrolled] == [(e.token, e.in_message) for e in general]
    assert [(p.hex(), q.hex()) for _, _, p, q in unrolled] == [
        tuple(float(e.counts[label]).hex() for label in labels) for e in general
    ]
    blended, totals = blend(own, **kwargs)
    assert as_pairs(blended, labels) == unrolled
    pairs_kwargs = {**kwargs, "site": site_pairs}
    assert fallback.blend_pairs(own_pairs, **pairs_kwargs) == (unrolled, totals)


def test_pairs_blend_two_labels_only() -> None:
    three = {**SITE_TOTALS, "news": nb.ClassTotals(5, 50)}
    with pytest.raises(ValueError, match="two labels"):
        fallback.blend_pairs(
            [], own_totals={}, site=[], site_totals=three, site_vocabulary=9, alpha=1.0, strength=5
        )
