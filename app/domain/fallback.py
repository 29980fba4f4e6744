"""A user's counts with the site-wide model as their prior: the m-estimate.

For label c and token w, with the user's learned counts u_c(w) and token total U_c, and the
site-wide model's Laplace estimate p_c(w) = (g_c(w) + α) / (G_c + α·|V_site|):

    P(w|c) = (u_c(w) + m_c · p_c(w)) / (U_c + m_c),     m_c = K · G_c / M_c

This is the m-estimate (n_c + m·p) / (n + m) of the seeds' notes, with the site-wide model as
the prior belief p and the confidence m_c the token mass of K average site-wide messages of
class c (M_c messages, G_c tokens). The class prior is blended the same way:

    P(c) = (N_c + K · π_c) / (N + K),     π_c = M_c / M

So a user who has learned nothing is scored exactly as the site-wide model, and a user's own
mail outweighs it once the user has learned many more than K messages of a class: DSPAM's
merged groups and rspamd's per-user fallback, with the weight set by the amount of evidence.

The result is a set of pseudo-counts for ``naive_bayes.multinomial`` with ``alpha = 0``:
every token known to either model has a positive estimate, so none is -inf.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from app.domain.naive_bayes import ClassTotals, Evidence, distinct_evidence


def blend(
    own: Sequence[Evidence],
    *,
    own_totals: Mapping[str, ClassTotals],
    site: Sequence[Evidence],
    site_totals: Mapping[str, ClassTotals],
    site_vocabulary: int,
    alpha: float,
    strength: float,
    distinct: int | None = None,
    group: Callable[[str], str] | None = None,
) -> tuple[list[Evidence], dict[str, ClassTotals]]:
    """The user's evidence and totals with the site-wide model as prior (see the module).

    ``own`` and ``site`` hold the message's tokens with the user's and the site-wide learned
    counts (a token known to one model only appears in one); ``strength`` is K, in messages.
    Every label of ``site_totals`` needs a message and ``alpha`` must be positive, so that
    each prior estimate is positive. With ``distinct`` (see
    ``naive_bayes.distinct_evidence``), repeats are found on the two models' counts summed,
    so a user who has learned nothing keeps the same tokens as the site-wide model.
    Returns pseudo-counts to score with ``multinomial(..., alpha=0)``.
    """
    if alpha <= 0:
        raise ValueError("the site-wide prior needs alpha > 0")
    if any(t.messages <= 0 or t.tokens <= 0 for t in site_totals.values()):
        raise ValueError("the site-wide prior needs a message with tokens in every label")
    mass = {label: strength * t.tokens / t.messages for label, t in site_totals.items()}
    spread = {label: t.tokens + alpha * site_vocabulary for label, t in site_totals.items()}
    combine = _combine_pair if len(site_totals) == 2 else _combine
    evidence = combine(
        own, site, mass=mass, spread=spread, alpha=alpha, distinct=distinct, group=group
    )
    nothing = ClassTotals(0, 0)
    site_messages = sum(t.messages for t in site_totals.values())
    totals = {
        label: ClassTotals(
            own_totals.get(label, nothing).messages + strength * t.messages / site_messages,
            own_totals.get(label, nothing).tokens + mass[label],
        )
        for label, t in site_totals.items()
    }
    return evidence, totals


def _combine(
    own: Sequence[Evidence],
    site: Sequence[Evidence],
    *,
    mass: Mapping[str, float],
    spread: Mapping[str, float],
    alpha: float,
    distinct: int | None,
    group: Callable[[str], str] | None,
) -> list[Evidence]:
    """``blend``'s evidence for any number of labels, term by term: each token of either
    model once, its counts u_c(w) + m_c · p_c(w) (``mass``: m_c; ``spread``: the
    denominator of p_c(w))."""
    site_by_token = {item.token: item for item in site}
    own_by_token = {item.token: item for item in own}
    combined: dict[str, Evidence] = {}
    for item in (*own, *site):
        if item.token not in combined:
            mine = own_by_token.get(item.token)
            theirs = site_by_token.get(item.token)
            summed = {
                label: (mine.counts.get(label, 0) if mine else 0)
                + (theirs.counts.get(label, 0) if theirs else 0)
                for label in mass
            }
            combined[item.token] = Evidence(item.token, item.in_message, summed)
    kept: Sequence[Evidence] = list(combined.values())
    if distinct is not None:
        kept = distinct_evidence(kept, distinct, group=group)
    evidence = []
    for item in kept:
        mine = own_by_token.get(item.token)
        theirs = site_by_token.get(item.token)
        counts: dict[str, float] = {}
        for label in mass:
            prior = ((theirs.counts.get(label, 0) if theirs else 0) + alpha) / spread[label]
            counts[label] = (mine.counts.get(label, 0) if mine else 0) + mass[label] * prior
        evidence.append(Evidence(item.token, item.in_message, counts))
    return evidence


def _combine_pair(
    own: Sequence[Evidence],
    site: Sequence[Evidence],
    *,
    mass: Mapping[str, float],
    spread: Mapping[str, float],
    alpha: float,
    distinct: int | None,
    group: Callable[[str], str] | None,
) -> list[Evidence]:
    """``_combine`` for two labels, unrolled: the same operations in the same order, so the
    same values bit for bit, without a dict of summed counts per token (a user's classify
    blends every token of the message). A model without the token counts 0.0 here, 0 there:
    the same sums for every count below 2**53, as every count a model learns is."""
    (a, mass_a), (b, mass_b) = mass.items()
    spread_a, spread_b = spread[a], spread[b]
    # Each token once, the user's first: its count in the message, then both models' counts.
    site_by_token = {item.token: item for item in site}
    own_by_token = {item.token: item for item in own}
    rows: dict[str, tuple[int, float, float, float, float]] = {}
    for item in (*own, *site):
        token = item.token
        if token in rows:
            continue
        mine = own_by_token.get(token)
        theirs = site_by_token.get(token)
        if mine is None:
            mine_a = mine_b = 0.0
        else:
            mine_a, mine_b = mine.counts.get(a, 0), mine.counts.get(b, 0)
        if theirs is None:
            theirs_a = theirs_b = 0.0
        else:
            theirs_a, theirs_b = theirs.counts.get(a, 0), theirs.counts.get(b, 0)
        rows[token] = (item.in_message, mine_a, mine_b, theirs_a, theirs_b)
    tokens: Iterable[str] = rows
    if distinct is not None:
        tokens = _distinct_pair(rows, distinct, group=group)
    evidence = []
    for token in tokens:
        n, mine_a, mine_b, theirs_a, theirs_b = rows[token]
        counts = {
            a: mine_a + mass_a * ((theirs_a + alpha) / spread_a),
            b: mine_b + mass_b * ((theirs_b + alpha) / spread_b),
        }
        evidence.append(Evidence(token, n, counts))
    return evidence


def _distinct_pair(
    rows: Mapping[str, tuple[int, float, float, float, float]],
    least: int,
    *,
    group: Callable[[str], str] | None,
) -> list[str]:
    """The tokens ``distinct_evidence`` keeps of ``rows``' summed counts, in its order
    (its key holds the counts in sorted label order; any one order groups alike)."""
    kept: list[str] = []
    first: dict[tuple[str, int, tuple[float, float]], str] = {}
    for token, (n, mine_a, mine_b, theirs_a, theirs_b) in rows.items():
        learned = (mine_a + theirs_a, mine_b + theirs_b)
        if learned[0] + learned[1] < least:
            kept.append(token)
            continue
        key = ("" if group is None else group(token), n, learned)
        held = first.get(key)
        if held is None or token < held:
            first[key] = token
    kept.extend(first.values())
    return kept
