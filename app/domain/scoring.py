"""Model policy: which learned counts are evidence, which model scores them, and when a
user's own model overrules the site-wide blend.

Pure functions over learned counts and a ``ScoringParams`` the service builds once from its
settings; the maths they call is in ``naive_bayes`` and ``fallback``.

Evidence (``evidence``, ``class_totals``). Under presence counting a token counts once in
the message and its learned count under label c is D_ct, the learned messages holding it;
the label's total is Σ_t D_ct (each learned message's distinct tokens, summed). Under
occurrence counting it counts n_t(x) times, its learned count is T_ct, its occurrences, and
the total is T_c. The Bernoulli model reads presence evidence and the label's messages N_c.

A user's score (``score_user``), with the site-wide model as prior: the blend of
``fallback``; and once the user's own model gives verdicts of its own (``gives_verdicts``),
the lower of the two log-odds of junk against not-junk, L (``classes.junk_log_odds``;
log-odds(spam : ham) with the two default classes), is served (``overrule``):

    served = own    if L(own) < L(blend)
             blend  otherwise

so the site-wide model helps catch spam but never condemns on its own what the user's own
mail calls ham.

A model scores the declared classes it has learned a message of (``classes.scorable``): a
class that has learned nothing has prior 0. ``classes`` arguments name them; None means
every declared class (``ScoringParams.labels``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

from app.domain import fallback
from app.domain import naive_bayes as nb
from app.domain.classes import grouped_messages, junk_log_odds, scorable
from app.domain.tokenizer import token_kind

Kind = Literal["multinomial", "bernoulli"]
Counting = Literal["occurrences", "presence"]


class TokenCounts(Protocol):
    """A token's learned counts under one label: occurrences T_ct and messages D_ct."""

    @property
    def occurrences(self) -> int: ...

    @property
    def messages(self) -> int: ...


class LabelCounts(Protocol):
    """A label's learned totals: messages N_c, occurrences T_c and Σ_t D_ct."""

    @property
    def messages(self) -> int: ...

    @property
    def occurrences(self) -> int: ...

    @property
    def token_messages(self) -> int: ...


class ModelCounts(Protocol):
    """A model's totals: per label (zeros for a label it has not learned), and |V|."""

    @property
    def vocabulary(self) -> int: ...

    def of(self, label: str) -> LabelCounts: ...


# Token id -> label -> learned counts (a label the token has no count in may be absent).
Counts = Mapping[int, Mapping[str, TokenCounts]]


@dataclass(frozen=True, slots=True)
class ScoringParams:
    """What shapes a score, built once from the settings (see ``naive_bayes.multinomial``).

    ``top``: score the most decisive tokens only (None: every token), of each kind of token
    when ``per_kind``; ``floor``: length normalisation's floor (None: off); ``distinct``:
    repeats learned together from at least this many messages count once (None: off);
    ``fallback_strength``: the site-wide prior's weight K, in messages (0: none);
    ``min_messages``: learned messages of junk and of not-junk before a model gives
    verdicts; ``labels``: the declared classes, ``junk`` those of them that are junk.
    """

    labels: tuple[str, ...]
    kind: Kind
    counting: Counting
    alpha: float
    top: int | None
    per_kind: bool
    floor: int | None
    distinct: int | None
    fallback_strength: float
    min_messages: int
    junk: tuple[str, ...] = ("spam",)


def group_of(params: ScoringParams) -> Callable[[str], str] | None:
    """What ``top`` counts within: a token's kind (``token_kind``), or None for one budget."""
    return token_kind if params.per_kind else None


def evidence(
    counts: Counts,
    *,
    names: Mapping[int, str],
    in_message: Mapping[str, int],
    counting: Counting,
    lumps: Mapping[str, str] | None = None,
) -> list[nb.Evidence]:
    """The message's tokens with their learned counts, in the order of ``counts``: D_ct
    counted once under presence counting, else T_ct counted ``in_message`` times (``names``:
    token id -> token). Tokens without learned occurrences are left out. With ``lumps``
    (class -> the class it is lumped into), each lump counts the sum of its classes'
    counts: integers, so exactly what a model that learned the lumps would count."""
    presence = counting == "presence"
    found: list[nb.Evidence] = []
    # A plain loop: a generator per token to test its occurrences took a tenth of a learn.
    for tid, per in counts.items():
        learned: dict[str, float] = {}
        seen = False
        if lumps is None:
            for label, stats in per.items():
                learned[label] = stats.messages if presence else stats.occurrences
                if stats.occurrences > 0:
                    seen = True
        else:
            for label, stats in per.items():
                lump = lumps[label]
                value = stats.messages if presence else stats.occurrences
                learned[lump] = learned.get(lump, 0) + value
                if stats.occurrences > 0:
                    seen = True
        if seen:
            name = names[tid]
            found.append(nb.Evidence(name, 1 if presence else in_message[name], learned))
    return found


def pair_evidence(
    counts: Counts,
    *,
    names: Mapping[int, str],
    in_message: Mapping[str, int],
    counting: Counting,
    labels: tuple[str, str],
) -> list[nb.Pair]:
    """``evidence`` for a model scored over two ``labels``, each token as a ``nb.Pair``:
    the token, how often it counts, and its learned counts under the first label and the
    second (0 for a label it has no count in); the same tokens in the same order."""
    first, second = labels
    presence = counting == "presence"
    found: list[nb.Pair] = []
    # why: the default model's evidence without a map and a named tuple a token; judging a
    # message took 14 % fewer instructions (docs/benchmarks.md, "Measurements behind the
    # design").
    for tid, per in counts.items():
        one, other = per.get(first), per.get(second)
        # A token learned under another label only (a third class, not scored here) is
        # kept, at 0 under both, as ``evidence`` keeps it.
        if (
            (one is None or one.occurrences <= 0)
            and (other is None or other.occurrences <= 0)
            and not any(stats.occurrences > 0 for stats in per.values())
        ):
            continue
        p = 0 if one is None else one.messages if presence else one.occurrences
        q = 0 if other is None else other.messages if presence else other.occurrences
        name = names[tid]
        found.append((name, 1 if presence else in_message[name], p, q))
    return found


def class_totals(
    totals: ModelCounts, labels: Iterable[str], counting: Counting
) -> dict[str, nb.ClassTotals]:
    """Per label, learned messages N_c and the token total matching ``evidence``: Σ_t D_ct
    under presence counting, else T_c."""
    presence = counting == "presence"
    return {
        lb: nb.ClassTotals(
            totals.of(lb).messages,
            totals.of(lb).token_messages if presence else totals.of(lb).occurrences,
        )
        for lb in labels
    }


def falls_back(params: ScoringParams) -> bool:
    """Whether a user's model has the site-wide one as prior: a positive strength, and a
    multinomial model (a Bernoulli model is never blended)."""
    return params.fallback_strength > 0 and params.kind != "bernoulli"


def gives_verdicts(totals: ModelCounts, params: ScoringParams) -> bool:
    """Whether a model has learned ``min_messages`` (at least one) of the junk classes
    together and of the others together (every label, with ham and spam alone)."""
    needed = max(params.min_messages, 1)
    learned = {label: totals.of(label).messages for label in params.labels}
    return all(n >= needed for n in grouped_messages(learned, params.junk).values())


def scored_classes(totals: ModelCounts, params: ScoringParams) -> tuple[str, ...] | None:
    """The declared classes a model has learned a message of, or None while it holds no
    junk class or no other class (``classes.scorable``)."""
    learned = {label: totals.of(label).messages for label in params.labels}
    return scorable(learned, params.labels, params.junk)


def spam_odds(scored: nb.Scored, junk: tuple[str, ...] = ("spam",)) -> float:
    """log P(junk|x) - log P(not junk|x), in nats: log P(spam|x) - log P(ham|x) with the
    two default classes."""
    return junk_log_odds(scored.log_posteriors, junk)


def overrule(blended: nb.Scored, own: nb.Scored, junk: tuple[str, ...] = ("spam",)) -> nb.Scored:
    """The score served to a user whose own model gives verdicts: the own model's where its
    log-odds are lower, else the blend's (ties keep the blend)."""
    return own if spam_odds(own, junk) < spam_odds(blended, junk) else blended


def counting_of(params: ScoringParams) -> Counting:
    """How ``evidence`` counts for ``params``: presence under the Bernoulli model."""
    return "presence" if params.kind == "bernoulli" else params.counting


def score(
    found: list[nb.Evidence],
    *,
    totals: ModelCounts,
    vocabulary_counts: Iterable[Mapping[str, int]],
    params: ScoringParams,
    classes: tuple[str, ...] | None = None,
) -> nb.Scored:
    """One model's score of a message over ``classes`` from its ``evidence`` (counted as
    ``counting_of(params)``): Bernoulli or multinomial as ``params.kind`` says. Every class
    scored needs a learned message. ``vocabulary_counts`` (D_ct of every vocabulary token)
    is read by the Bernoulli model only."""
    scored = params.labels if classes is None else classes
    if params.kind == "bernoulli":
        messages = {lb: totals.of(lb).messages for lb in scored}
        return nb.bernoulli(
            found, vocabulary_counts=vocabulary_counts, messages=messages, alpha=params.alpha
        )
    return own_multinomial(found, totals=totals, params=params, classes=scored)


def score_counts(
    counts: Counts,
    *,
    names: Mapping[int, str],
    in_message: Mapping[str, int],
    totals: ModelCounts,
    vocabulary_counts: Iterable[Mapping[str, int]],
    params: ScoringParams,
    classes: tuple[str, ...] | None = None,
    lumps: Mapping[str, str] | None = None,
) -> nb.Scored:
    """``score`` of the ``evidence`` of ``counts`` (the message's tokens' learned counts in
    one model; ``names``: token id -> token; ``in_message``: token -> times in the message;
    ``lumps`` as ``evidence`` takes them), the same scores bit for bit. The default model
    (multinomial, two classes, a ``top``, no lumps) is scored from the counts in one pass
    (``pair_evidence``, ``nb.pair_multinomial``)."""
    scored = params.labels if classes is None else classes
    counting = counting_of(params)
    top = params.top
    if lumps is None and params.kind == "multinomial" and top is not None and len(scored) == 2:
        pairs = pair_evidence(
            counts,
            names=names,
            in_message=in_message,
            counting=counting,
            labels=(scored[0], scored[1]),
        )
        found = nb.pair_multinomial(
            pairs,
            totals=class_totals(totals, scored, params.counting),
            vocabulary=totals.vocabulary,
            alpha=params.alpha,
            top=top,
            group=group_of(params),
            floor=params.floor,
            distinct=params.distinct,
        )
        if found is not None:
            return found
    return score(
        evidence(counts, names=names, in_message=in_message, counting=counting, lumps=lumps),
        totals=totals,
        vocabulary_counts=vocabulary_counts,
        params=params,
        classes=scored,
    )


def own_multinomial(
    found: list[nb.Evidence],
    *,
    totals: ModelCounts,
    params: ScoringParams,
    classes: tuple[str, ...] | None = None,
) -> nb.Scored:
    """The multinomial score of ``found`` (see ``evidence``) against one model's totals,
    over ``classes``."""
    return nb.multinomial(
        found,
        totals=class_totals(totals, params.labels if classes is None else classes, params.counting),
        vocabulary=totals.vocabulary,
        alpha=params.alpha,
        top=params.top,
        group=group_of(params),
        floor=params.floor,
        distinct=params.distinct,
        junk=params.junk,
    )


def score_user(
    mine: Counts,
    *,
    site: Counts,
    names: Mapping[int, str],
    in_message: Mapping[str, int],
    own_totals: ModelCounts,
    site_totals: ModelCounts,
    params: ScoringParams,
    classes: tuple[str, ...] | None = None,
    lumps: Mapping[str, str] | None = None,
) -> nb.Scored | None:
    """A user's multinomial score over ``classes`` from the learned counts of the message's
    tokens in the user's model (``mine``) and the site-wide one (``site``; ``names``,
    ``in_message`` and ``lumps`` as ``evidence`` takes them): the site-wide model as prior
    (``fallback.blend``), overruled by the user's own model where ``overrule`` says; None
    where there is no prior to blend (a site-wide class without tokens). The default model
    (two classes, a ``top``, no lumps) is blended and scored from the counts as pairs
    (``pair_evidence``, ``fallback.blend_pairs``), the same scores bit for bit."""
    labels = params.labels if classes is None else classes
    prior = class_totals(site_totals, labels, params.counting)
    if not all(t.tokens > 0 for t in prior.values()):
        return None
    own_classes = scored_classes(own_totals, params) if gives_verdicts(own_totals, params) else None
    found = _Blend(mine, site, names, in_message, labels, prior, own_classes)
    top = params.top
    # The pairs score two classes, so an own model that overrules must score those two.
    if lumps is None and top is not None and len(labels) == 2 and own_classes in (None, labels):
        scored = _user_pairs(
            found, top=top, own_totals=own_totals, site_totals=site_totals, params=params
        )
        if scored is not None:
            return scored
    return _user_evidence(
        found, own_totals=own_totals, site_totals=site_totals, params=params, lumps=lumps
    )


class _Blend(NamedTuple):
    """What a user's score reads: both models' counts of the message's tokens, the names
    and tallies, the classes scored, the prior's totals over them, and the classes the
    user's own model scores (None while it gives no verdicts)."""

    mine: Counts
    site: Counts
    names: Mapping[int, str]
    in_message: Mapping[str, int]
    labels: tuple[str, ...]
    prior: dict[str, nb.ClassTotals]
    own_classes: tuple[str, ...] | None


def _user_pairs(
    found: _Blend,
    *,
    top: int,
    own_totals: ModelCounts,
    site_totals: ModelCounts,
    params: ScoringParams,
) -> nb.Scored | None:
    """``_user_evidence`` of two classes with ``params.top`` (``top``), no lumps and an own
    model that scores the same two classes if any, from pairs: the same score bit for bit,
    or None where a denominator is not positive (``pair_multinomial``)."""
    first, second = found.labels
    counting = counting_of(params)

    def pairs(counts: Counts) -> list[nb.Pair]:
        return pair_evidence(
            counts,
            names=found.names,
            in_message=found.in_message,
            counting=counting,
            labels=(first, second),
        )

    group = group_of(params)
    own, own_labels = pairs(found.mine), class_totals(own_totals, found.labels, params.counting)
    blended, blended_totals = fallback.blend_pairs(
        own,
        own_totals=own_labels,
        site=pairs(found.site),
        site_totals=found.prior,
        site_vocabulary=site_totals.vocabulary,
        alpha=params.alpha,
        strength=params.fallback_strength,
        distinct=params.distinct,
        group=group,
    )
    scored = nb.pair_multinomial(
        blended,
        totals=blended_totals,
        vocabulary=0,
        alpha=0.0,
        top=top,
        group=group,
        floor=params.floor,
    )
    if scored is None or found.own_classes is None:
        return scored
    own_score = nb.pair_multinomial(
        own,
        totals=own_labels,
        vocabulary=own_totals.vocabulary,
        alpha=params.alpha,
        top=top,
        group=group,
        floor=params.floor,
        distinct=params.distinct,
    )
    return None if own_score is None else overrule(scored, own_score, params.junk)


def _user_evidence(
    found: _Blend,
    *,
    own_totals: ModelCounts,
    site_totals: ModelCounts,
    params: ScoringParams,
    lumps: Mapping[str, str] | None,
) -> nb.Scored:
    """``score_user`` term by term, through each model's ``evidence``: any classes, lumps
    and budget."""
    counting = counting_of(params)

    def evidence_of(counts: Counts) -> list[nb.Evidence]:
        return evidence(
            counts,
            names=found.names,
            in_message=found.in_message,
            counting=counting,
            lumps=lumps,
        )

    own = evidence_of(found.mine)
    blended, blended_totals = fallback.blend(
        own,
        own_totals=class_totals(own_totals, found.labels, params.counting),
        site=evidence_of(found.site),
        site_totals=found.prior,
        site_vocabulary=site_totals.vocabulary,
        alpha=params.alpha,
        strength=params.fallback_strength,
        distinct=params.distinct,
        group=group_of(params),
    )
    scored = nb.multinomial(
        blended,
        totals=blended_totals,
        vocabulary=0,
        alpha=0.0,
        top=params.top,
        group=group_of(params),
        floor=params.floor,
        junk=params.junk,
    )
    if found.own_classes is None:
        return scored
    own_score = own_multinomial(own, totals=own_totals, params=params, classes=found.own_classes)
    return overrule(scored, own_score, params.junk)
