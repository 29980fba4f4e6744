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

from app.domain.naive_bayes import ClassTotals, Evidence, Pair, distinct_evidence


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
    if len(site_totals) == 2:
        a, b = site_totals
        pairs, totals = blend_pairs(
            [(e.token, e.in_message, e.counts.get(a, 0), e.counts.get(b, 0)) for e in own],
            own_totals=own_totals,
            site=[(e.token, e.in_message, e.counts.get(a, 0), e.counts.get(b, 0)) for e in site],
            site_totals=site_totals,
            site_vocabulary=site_vocabulary,
            alpha=alpha,
            strength=strength,
            distinct=distinct,
            group=group,
        )
        return [Evidence(token, n, {a: p, b: q}) for token, n, p, q in pairs], totals
    mass, spread = _prior(site_totals, site_vocabulary, alpha=alpha, strength=strength)
    evidence = _combine(
        own, site, mass=mass, spread=spread, alpha=alpha, distinct=distinct, group=group
    )
    return evidence, _totals(own_totals, site_totals, mass=mass, strength=strength)


def blend_pairs(
    own: Sequence[Pair],
    *,
    own_totals: Mapping[str, ClassTotals],
    site: Sequence[Pair],
    site_totals: Mapping[str, ClassTotals],
    site_vocabulary: int,
    alpha: float,
    strength: float,
    distinct: int | None = None,
    group: Callable[[str], str] | None = None,
) -> tuple[list[Pair], dict[str, ClassTotals]]:
    """``blend`` of the two labels of ``site_totals`` (in its order), each model's tokens
    and the blend's given as ``naive_bayes.Pair``s (the token, its count in the message, its
    counts under the two labels): the same pseudo-counts bit for bit, for
    ``pair_multinomial(..., alpha=0)``, without an ``Evidence`` and a map a token."""
    if len(site_totals) != 2:
        raise ValueError("pairs blend two labels")
    mass, spread = _prior(site_totals, site_vocabulary, alpha=alpha, strength=strength)
    pairs = _combine_pair(
        own, site, mass=mass, spread=spread, alpha=alpha, distinct=distinct, group=group
    )
    return pairs, _totals(own_totals, site_totals, mass=mass, strength=strength)


def _prior(
    site_totals: Mapping[str, ClassTotals], site_vocabulary: int, *, alpha: float, strength: float
) -> tuple[dict[str, float], dict[str, float]]:
    """Per label, the prior's confidence m_c and the denominator of its estimate p_c(w)."""
    if alpha <= 0:
        raise ValueError("the site-wide prior needs alpha > 0")
    if any(t.messages <= 0 or t.tokens <= 0 for t in site_totals.values()):
        raise ValueError("the site-wide prior needs a message with tokens in every label")
    mass = {label: strength * t.tokens / t.messages for label, t in site_totals.items()}
    spread = {label: t.tokens + alpha * site_vocabulary for label, t in site_totals.items()}
    return mass, spread


def _totals(
    own_totals: Mapping[str, ClassTotals],
    site_totals: Mapping[str, ClassTotals],
    *,
    mass: Mapping[str, float],
    strength: float,
) -> dict[str, ClassTotals]:
    """The blend's totals: the user's messages and tokens plus the prior's."""
    nothing = ClassTotals(0, 0)
    site_messages = sum(t.messages for t in site_totals.values())
    return {
        label: ClassTotals(
            own_totals.get(label, nothing).messages + strength * t.messages / site_messages,
            own_totals.get(label, nothing).tokens + mass[label],
        )
        for label, t in site_totals.items()
    }


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
    own: Sequence[Pair],
    site: Sequence[Pair],
    *,
    mass: Mapping[str, float],
    spread: Mapping[str, float],
    alpha: float,
    distinct: int | None,
    group: Callable[[str], str] | None,
) -> list[Pair]:
    """``_combine`` for two labels (those of ``mass``, in its order), unrolled over pairs:
    the same operations in the same order, so the same values bit for bit, without a dict
    of summed counts per token (a user's classify blends every token of the message). A
    model without the token counts 0.0 here, 0 there: the same sums for every count below
    2**53, as every count a model learns is."""
    (mass_a, mass_b), (spread_a, spread_b) = mass.values(), spread.values()
    # Each token once, the user's first: its count in the message, then both models' counts
    # (a token given twice keeps its first place and takes its last counts, as ``_combine``
    # does; its count in the message is the same each time).
    rows: dict[str, tuple[int, float, float, float, float]] = {}
    for token, n, mine_a, mine_b in own:
        rows[token] = (n, mine_a, mine_b, 0.0, 0.0)
    for token, n, theirs_a, theirs_b in site:
        row = rows.get(token)
        if row is None:
            rows[token] = (n, 0.0, 0.0, theirs_a, theirs_b)
        else:
            rows[token] = (row[0], row[1], row[2], theirs_a, theirs_b)
    tokens: Iterable[str] = rows
    if distinct is not None:
        tokens = _distinct_pair(rows, distinct, group=group)
    pairs: list[Pair] = []
    for token in tokens:
        n, mine_a, mine_b, theirs_a, theirs_b = rows[token]
        pairs.append(
            (
                token,
                n,
                mine_a + mass_a * ((theirs_a + alpha) / spread_a),
                mine_b + mass_b * ((theirs_b + alpha) / spread_b),
            )
        )
    return pairs


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
