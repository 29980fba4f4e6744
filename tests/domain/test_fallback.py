"""The m-estimate blend of a user's counts with the site-wide model (app.domain.fallback)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pytest

from app.domain import naive_bayes as nb
from app.domain.fallback import blend

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
