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

from collections.abc import Callable, Mapping, Sequence

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
                for label in site_totals
            }
            combined[item.token] = Evidence(item.token, item.in_message, summed)
    kept: Sequence[Evidence] = list(combined.values())
    if distinct is not None:
        kept = distinct_evidence(kept, distinct, group=group)
    site_messages = sum(t.messages for t in site_totals.values())
    mass = {label: strength * t.tokens / t.messages for label, t in site_totals.items()}
    spread = {label: t.tokens + alpha * site_vocabulary for label, t in site_totals.items()}
    evidence = []
    for item in kept:
        mine = own_by_token.get(item.token)
        theirs = site_by_token.get(item.token)
        counts: dict[str, float] = {}
        for label in site_totals:
            prior = ((theirs.counts.get(label, 0) if theirs else 0) + alpha) / spread[label]
            counts[label] = (mine.counts.get(label, 0) if mine else 0) + mass[label] * prior
        evidence.append(Evidence(item.token, item.in_message, counts))
    nothing = ClassTotals(0, 0)
    totals = {
        label: ClassTotals(
            own_totals.get(label, nothing).messages + strength * t.messages / site_messages,
            own_totals.get(label, nothing).tokens + mass[label],
        )
        for label, t in site_totals.items()
    }
    return evidence, totals
