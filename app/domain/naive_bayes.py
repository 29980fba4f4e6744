"""Naive Bayes in log space: counts in, log-probabilities out.

Pure functions over sufficient statistics. Nothing here reads settings or does I/O: the
caller passes counts, the smoothing constant and the labels. All returned scores are natural
logarithms (nats) unless a name says ``probability``.

Multinomial model (McCallum & Nigam 1998; IIR 13.2):

    log P(c|x) ∝ log N_c/N + Σ_t n_t(x) · log((T_ct + α) / (T_c + α·|V|))

Bernoulli model (binary features, absent vocabulary tokens count):

    log P(c|x) ∝ log N_c/N + Σ_{t∈V} [x_t log p_tc + (1 - x_t) log(1 - p_tc)],
    p_tc = (D_ct + α) / (N_c + 2α)

Tokens outside the vocabulary V carry no evidence and are ignored by both.

Scoring only the N most decisive tokens of each group S_g (``top``), the multinomial score
can be length-normalised (``floor`` m): a group that offers n < N tokens has its evidence
weighted as if it had N tokens of the same average strength,

    log P(c|x) ∝ log N_c/N + Σ_g w_g Σ_{t∈S_g} log P(t|c),   w_g = N / max(n_g, min(m, N)),

the geometric-mean combining of Robinson's "A Statistical Approach to the Spam Problem".
Without it a short message, or one with few header tokens, sits near zero whatever its
tokens say; the floor m bounds the weight so that one or two tokens cannot decide alone.
The posterior is still normalised with log-sum-exp over the weighted joint likelihoods.

Tokens of one group whose learned counts are identical under every label, from at least
``distinct`` messages, can count once (``distinct_evidence``): they were always learned
together, so they are one observation that Naive Bayes would otherwise add once per token.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

NEG_INF = float("-inf")


class Evidence(NamedTuple):
    """One token of the message being scored, with what the model learned about it.

    ``in_message`` is how often the token counts in this message (1 under presence
    counting); ``counts`` maps each label to the learned count for the token (occurrences
    or messages, matching how the class totals were counted). A named tuple: a message
    makes hundreds, and a frozen dataclass took three times as long to build.
    """

    token: str
    in_message: int
    counts: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class ClassTotals:
    """Per-label totals: learned messages, and the sum of token counts ``T_c`` (pseudo-counts
    may be fractional, see ``fallback``)."""

    messages: float
    tokens: float


@dataclass(frozen=True, slots=True)
class Clue:
    """A token and its contribution to the log-odds (nats; > 0 pushes towards ``positive``)."""

    token: str
    weight: float


@dataclass(frozen=True, slots=True)
class Scored:
    """Joint log-likelihoods, normalised log-posteriors and per-token contributions."""

    log_joint: dict[str, float]
    log_posteriors: dict[str, float]
    contributions: dict[str, dict[str, float]]

    def log_odds(self, positive: str, negative: str) -> float:
        """log P(positive|x) - log P(negative|x), in nats (does not saturate)."""
        return self.log_posteriors[positive] - self.log_posteriors[negative]


def log_sum_exp(values: Iterable[float]) -> float:
    """log Σ exp(v), computed without overflow; -inf for an empty or all -inf input."""
    items = list(values)
    top = max(items, default=NEG_INF)
    if top == NEG_INF:
        return NEG_INF
    return top + math.log(math.fsum(math.exp(v - top) for v in items))


def safe_log(numerator: float, denominator: float) -> float:
    """log(numerator / denominator); -inf when the numerator is 0 (MLE of an unseen event)."""
    if numerator <= 0:
        return NEG_INF
    return math.log(numerator) - math.log(denominator)


def log_priors(messages: Mapping[str, float]) -> dict[str, float]:
    """Maximum-likelihood class priors log(N_c / N) from learned-message counts."""
    total = sum(messages.values())
    if total <= 0:
        raise ValueError("priors need at least one learned message")
    return {label: safe_log(count, total) for label, count in messages.items()}


def smoothed_log_prob(count: float, total: float, *, alpha: float, outcomes: float) -> float:
    """Additive (Lidstone; Laplace when alpha = 1) estimate log((count+α)/(total+α·outcomes))."""
    return safe_log(count + alpha, total + alpha * outcomes)


def normalise(log_joint: Mapping[str, float]) -> dict[str, float]:
    """Log-posteriors from joint log-likelihoods: subtract their log-sum-exp."""
    norm = log_sum_exp(log_joint.values())
    if norm == NEG_INF:
        raise ValueError("every class has zero likelihood; use alpha > 0")
    return {label: value - norm for label, value in log_joint.items()}


def multinomial(
    evidence: Sequence[Evidence],
    *,
    totals: Mapping[str, ClassTotals],
    vocabulary: int,
    alpha: float,
    top: int | None = None,
    group: Callable[[str], str] | None = None,
    floor: int | None = None,
    distinct: int | None = None,
    junk: Collection[str] = (),
) -> Scored:
    """Score a message under the multinomial model.

    ``vocabulary`` is |V|, the number of distinct tokens with a non-zero learned count.
    Contributions are ``in_message · log P(t|c)`` per token and label. With ``distinct``,
    tokens that repeat another token's learned counts first count once (see
    ``distinct_evidence``). With ``top`` only the ``top`` most decisive tokens score (see
    ``most_decisive``), or the ``top`` most decisive of each group when ``group`` names a
    token's group; None scores every token. With ``top`` and ``floor``, a group short of
    ``top`` tokens is length-normalised (see ``normalise_length``); the contributions
    returned are the weighted ones. With more than two labels and ``junk`` naming some of
    them, ``top`` ranks tokens by how far they move junk against the other labels instead
    (see ``junk_spread``).
    """
    labels = list(totals)
    if top is not None and len(labels) == 2:
        # why: the default model; one pass, not three, and the sum unrolled took its score
        # from 0.247 to 0.166 ms a message (docs/benchmarks.md, "Measurements behind the
        # design").
        first, second = labels
        pairs = [
            (e.token, e.in_message, e.counts.get(first, 0), e.counts.get(second, 0))
            for e in evidence
        ]
        scored = pair_multinomial(
            pairs,
            totals=totals,
            vocabulary=vocabulary,
            alpha=alpha,
            top=top,
            group=group,
            floor=floor,
            distinct=distinct,
        )
        if scored is not None:
            return scored
    # smoothed_log_prob inlined, its denominator's log taken once per label: the same
    # operations in the same order (so the same floating-point values), a third of the time.
    denominators = [t.tokens + alpha * vocabulary for t in totals.values()]
    logs = [math.log(d) if d > 0 else None for d in denominators]
    log_joint = log_priors({label: t.messages for label, t in totals.items()})
    chosen = _chosen(
        evidence,
        labels=labels,
        denominators=denominators,
        logs=logs,
        alpha=alpha,
        top=top,
        group=group,
        distinct=distinct,
        junk=junk,
    )
    if top is not None and floor is not None:
        weights = _weights([key for _, _, key in chosen], top, floor)
        chosen = [
            (token, tuple([weights[key] * v for v in values]), key) for token, values, key in chosen
        ]
    contributions: dict[str, dict[str, float]] = {}
    for token, values, _ in chosen:
        contributions[token] = dict(zip(labels, values, strict=True))
        for label, value in zip(labels, values, strict=True):
            log_joint[label] += value
    return Scored(log_joint, normalise(log_joint), contributions)


# A token of a message scored under two labels: the token, how often it counts in the
# message, and its learned counts under the first label and under the second (0 for none).
Pair = tuple[str, int, float, float]


def pair_multinomial(
    pairs: Iterable[Pair],
    *,
    totals: Mapping[str, ClassTotals],
    vocabulary: int,
    alpha: float,
    top: int,
    group: Callable[[str], str] | None = None,
    floor: int | None = None,
    distinct: int | None = None,
) -> Scored | None:
    """``multinomial`` of the two labels of ``totals`` (in their order) with a ``top``, each
    token's counts given as a ``Pair``: the same scores, bit for bit, as ``multinomial`` of
    ``Evidence(token, in_message, {first: p, second: q})``. None when a label's denominator
    T_c + α·|V| is not positive, which ``multinomial`` scores term by term.

    The default model is scored here in one pass over the tokens; a caller that holds the
    counts (``scoring.score_counts``) builds no ``Evidence`` or map a token for it."""
    (first, total_first), (second, total_second) = totals.items()
    # smoothed_log_prob inlined, its denominator's log taken once per label: the same
    # operations in the same order as the general path (so the same floating-point values).
    denominator_first = total_first.tokens + alpha * vocabulary
    denominator_second = total_second.tokens + alpha * vocabulary
    if denominator_first <= 0 or denominator_second <= 0:
        return None
    logs = (math.log(denominator_first), math.log(denominator_second))
    log_joint = log_priors({label: t.messages for label, t in totals.items()})
    chosen = _pair_chosen(pairs, logs=logs, alpha=alpha, top=top, group=group, least=distinct)
    return _pair_scored(chosen, labels=(first, second), log_joint=log_joint, top=top, floor=floor)


def _pair_scored(
    chosen: list[Chosen],
    *,
    labels: Sequence[str],
    log_joint: Mapping[str, float],
    top: int,
    floor: int | None,
) -> Scored:
    """The end of ``multinomial`` for two labels and a ``top``, unrolled: each chosen
    token's contributions weighted (with a ``floor``) and added to the priors
    ``log_joint``, the same operations in the same order as the general loop."""
    first, second = labels
    weights = None if floor is None else _weights([key for _, _, key in chosen], top, floor)
    joint_first, joint_second = log_joint[first], log_joint[second]
    contributions: dict[str, dict[str, float]] = {}
    for token, (a, b), key in chosen:
        if weights is not None:
            weight = weights[key]
            a, b = weight * a, weight * b
        contributions[token] = {first: a, second: b}
        joint_first += a
        joint_second += b
    joint = {first: joint_first, second: joint_second}
    return Scored(joint, normalise(joint), contributions)


# A token's row: minus its spread (max - min of its contributions), the token, and its
# contributions in label order. Sorting rows ranks the tokens as ``most_decisive`` does.
Row = tuple[float, str, tuple[float, ...]]
# A chosen token: the token, its contributions in label order, and its group's name.
Chosen = tuple[str, tuple[float, ...], str]


def _chosen(
    evidence: Sequence[Evidence],
    *,
    labels: Sequence[str],
    denominators: Sequence[float],
    logs: Sequence[float | None],
    alpha: float,
    top: int | None,
    group: Callable[[str], str] | None,
    distinct: int | None,
    junk: Collection[str],
) -> list[Chosen]:
    """The tokens ``multinomial`` scores, in the order it adds them, step by step: repeats
    left out (``distinct_evidence``), every token's row, the rows ranked (by the junk spread
    with more than two labels and junk named) and the ``top`` of each group taken."""
    if distinct is not None:
        evidence = distinct_evidence(evidence, distinct, group=group, labels=labels)
    if len(labels) == 2 and None not in logs:
        rows = _pair_rows(evidence, labels=labels, logs=logs, alpha=alpha)
    else:
        rows = _rows(evidence, labels=labels, denominators=denominators, alpha=alpha)
    # why: hard ham as a third class, 1-ROCA% 0.088 -> 0.062 on seed 1 (docs/classes.md).
    sides = [label in junk for label in labels]
    if top is not None and len(labels) > 2 and any(sides) and not all(sides):
        spread = _SideSpread(sides)
        rows = [(-spread.of(values), token, values) for _, token, values in rows]
    if top is None:
        return [(token, values, "") for _, token, values in rows]
    return _choose(rows, top, group)


def _pair_chosen(
    pairs: Iterable[Pair],
    *,
    logs: Sequence[float],
    alpha: float,
    top: int,
    group: Callable[[str], str] | None,
    least: int | None,
) -> list[Chosen]:
    """``_chosen`` for two labels whose denominators are positive (``logs``: their logs), in
    one pass over the tokens' ``pairs``: the same tokens with the same contributions in the
    same order, bit for bit.

    Each token's group is found once. A token that ``distinct_evidence`` would weigh as a
    repeat waits under its key (group, count in the message, learned counts) until the
    first by token text is known, and only that one gets a row. The rows are kept apart by
    group, so the ``top`` of each are the first ``top`` of its rows sorted; the tokens of all
    groups are then sorted together, the order ``_choose`` takes them in. Rows sort on
    minus the spread, then the token (a message's tokens are distinct), so the order does
    not depend on how the rows were gathered."""
    log_first, log_second = logs
    log, inf = math.log, NEG_INF
    spares: dict[tuple[str, int, float, float], str] = {}
    grouped: dict[str, list[tuple[float, str, tuple[float, ...], str]]] = {}
    # why: a token's row made where it is read, not from a list of every token first; the
    # rows of 900 captured messages took 7.8 % fewer instructions (callgrind). The spares'
    # rows, made after, are the same arithmetic (a row for each repeat left out would cost
    # more than the list saved).
    for token, n, p, q in pairs:
        key = "" if group is None else group(token)
        if least is not None and p + q >= least:
            spare = (key, n, p, q)
            held = spares.get(spare)
            if held is None or token < held:
                spares[spare] = token
            continue
        x = p + alpha
        a = n * (log(x) - log_first) if x > 0 else n * inf
        y = q + alpha
        b = n * (log(y) - log_second) if y > 0 else n * inf
        rows = grouped.get(key)
        if rows is None:
            rows = grouped[key] = []
        rows.append((-abs(a - b), token, (a, b), key))
    for (key, n, p, q), token in spares.items():
        x = p + alpha
        a = n * (log(x) - log_first) if x > 0 else n * inf
        y = q + alpha
        b = n * (log(y) - log_second) if y > 0 else n * inf
        rows = grouped.get(key)
        if rows is None:
            rows = grouped[key] = []
        rows.append((-abs(a - b), token, (a, b), key))
    budget = max(top, 0)
    taken = [row for rows in grouped.values() for row in sorted(rows)[:budget]]
    return [(token, values, key) for _, token, values, key in sorted(taken)]


def _rows(
    evidence: Iterable[Evidence],
    *,
    labels: Sequence[str],
    denominators: Sequence[float],
    alpha: float,
) -> list[Row]:
    """Every token's row, for any number of labels: the same values as term by term, with
    the log of each positive denominator taken once and the term of a label the token has
    no count in, log(α/d), once per label (with ten classes a token has counts in a few;
    this was most of a classify's arithmetic)."""
    # Why: ten classes classified in 1.94x the time of two, 1.65x with both terms taken
    # once ('spamfilter bench classes'; docs/benchmarks.md, "Classes").
    log, inf = math.log, NEG_INF
    logs = [log(d) if d > 0 else None for d in denominators]
    index = {label: k for k, label in enumerate(labels)}
    pairs = list(zip(denominators, logs, strict=True))
    # A denominator <= 0 (nothing learned, no vocabulary) fails only once a token needs it.
    absent = None if alpha > 0 and None in logs else [_term(alpha, d, ld) for d, ld in pairs]
    rows: list[Row] = []
    for item in evidence:
        n = item.in_message
        if absent is None:
            values = [n * _term(alpha, d, ld) for d, ld in pairs]
        else:
            values = absent.copy() if n == 1 else [n * v for v in absent]
        for label, count in item.counts.items():
            k = index.get(label)
            if k is not None:
                numerator = count + alpha
                log_d = logs[k]
                if numerator <= 0:
                    values[k] = n * inf
                elif log_d is not None:
                    values[k] = n * (log(numerator) - log_d)
                else:
                    values[k] = n * _term(numerator, denominators[k], None)
        rows.append((-(max(values) - min(values)), item.token, tuple(values)))
    return rows


def junk_spread(values: Sequence[float], sides: Sequence[bool]) -> float:
    """How far a token moves junk against not-junk, in nats: from its contributions
    ``values`` (``sides``: which labels are junk), with J the junk labels and N the others,

        | log(Σ_{c∈J} P(t|c) / |J|) − log(Σ_{c∈N} P(t|c) / |N|) |,

    each side's labels weighted alike. A token that tells two labels of one side apart
    (ham from newsletters) says nothing here. With one label a side, |a − b|: the spread
    ``_rows`` ranks by."""
    return _SideSpread(sides).of(values)


class _SideSpread:
    """``junk_spread`` with the labels' sides fixed, for every token of a message: each
    side's indices and log |side| found once, each side's log-sum-exp over a list, not a
    generator (with ten classes this ranking was half a classify's arithmetic)."""

    def __init__(self, sides: Sequence[bool]) -> None:
        self.junk = [k for k, is_junk in enumerate(sides) if is_junk]
        self.other = [k for k, is_junk in enumerate(sides) if not is_junk]
        self.log_junk = math.log(len(self.junk))
        self.log_other = math.log(len(self.other))

    def of(self, values: Sequence[float]) -> float:
        """``junk_spread(values, sides)``."""
        gap = (_log_sum_exp_at(values, self.junk) - self.log_junk) - (
            _log_sum_exp_at(values, self.other) - self.log_other
        )
        # Both sides -inf (nothing learned, alpha 0) say nothing.
        return 0.0 if math.isnan(gap) else abs(gap)


def _log_sum_exp_at(values: Sequence[float], indices: Sequence[int]) -> float:
    """``log_sum_exp`` of ``values`` at ``indices``, in that order, bit for bit
    (``math.fsum`` is exactly rounded)."""
    top = NEG_INF
    for k in indices:
        if values[k] > top:
            top = values[k]
    if top == NEG_INF:
        return NEG_INF
    exp = math.exp
    return top + math.log(math.fsum([exp(values[k] - top) for k in indices]))


def _term(numerator: float, denominator: float, log_denominator: float | None) -> float:
    """log(numerator / denominator) as ``_rows`` takes it: -inf for a numerator <= 0, else
    log(numerator) - log(denominator) (ValueError for a denominator <= 0)."""
    if numerator <= 0:
        return NEG_INF
    if log_denominator is None:
        return math.log(numerator) - math.log(denominator)
    return math.log(numerator) - log_denominator


def _pair_rows(
    evidence: Iterable[Evidence],
    *,
    labels: Sequence[str],
    logs: Sequence[float | None],
    alpha: float,
) -> list[Row]:
    """``_rows`` for two labels whose denominators are positive: the same values, unrolled
    (a message has hundreds of tokens, and this is most of a classify's arithmetic). The
    spread |a - b| equals max - min exactly: a - b and b - a round alike."""
    first, second = labels
    log_first, log_second = logs
    assert log_first is not None and log_second is not None
    log, inf = math.log, NEG_INF
    rows: list[Row] = []
    for item in evidence:
        n, get = item.in_message, item.counts.get
        x = get(first, 0) + alpha
        a = n * (log(x) - log_first) if x > 0 else n * inf
        y = get(second, 0) + alpha
        b = n * (log(y) - log_second) if y > 0 else n * inf
        rows.append((-abs(a - b), item.token, (a, b)))
    return rows


def distinct_evidence(
    evidence: Sequence[Evidence],
    least: int,
    *,
    group: Callable[[str], str] | None = None,
    labels: Sequence[str] | None = None,
) -> list[Evidence]:
    """``evidence`` with each repeat of the same learned counts left out.

    Two tokens of one group (``group(token)``; all one group when None) that count the same
    in this message and have identical learned counts under every label, at least ``least``
    in all, have been learned together every time: a relay's host name and its networks, a
    mailing list's bounce address and footer. They are one observation, so only the first
    by token text is kept. Rarer tokens are all kept: two tokens seen once each in spam
    agree by chance, not because they always travel together. The rarer tokens come first,
    in their given order, then one token per set of repeats (order does not matter to
    ``multinomial``, which ranks by strength and token text). ``labels``: every label the
    counts may name (default: those they do name).
    """
    if labels is None:
        labels = sorted({label for item in evidence for label in item.counts})
    kept: list[Evidence] = []
    first: dict[tuple[str, int, tuple[float, ...]], Evidence] = {}
    # Two labels unrolled: this loop runs for every token of every message judged.
    pair = len(labels) == 2
    a, b = labels if pair else ("", "")
    for item in evidence:
        # The counts in label order, 0 for a label absent: one key for equal counts.
        get = item.counts.get
        learned = (get(a, 0), get(b, 0)) if pair else tuple([get(label, 0) for label in labels])
        if sum(learned) < least:
            kept.append(item)
            continue
        key = ("" if group is None else group(item.token), item.in_message, learned)
        held = first.get(key)
        if held is None or item.token < held.token:
            first[key] = item
    kept.extend(first.values())
    return kept


def most_decisive(
    contributions: Mapping[str, Mapping[str, float]],
    top: int,
    group: Callable[[str], str] | None = None,
) -> dict[str, dict[str, float]]:
    """The ``top`` tokens whose contributions differ most between labels (max - min).

    With two labels that is |contribution to the log-odds|; ties break on the token text.
    A token that scores about the same under every label says nothing about the class, so
    dropping it changes little, while capping the count keeps a long message from
    outweighing a short one by length alone (Graham's 15, SpamAssassin's 150 tokens).

    With ``group``, the budget applies to each group on its own (``group(token)`` names the
    group): the ``top`` most decisive tokens of every group score, so that one kind of
    evidence (say, a dozen correlated relay tokens) cannot crowd out another.
    """

    rows = []
    for token, per_label in contributions.items():
        values = tuple(per_label.values())
        rows.append((-(max(values) - min(values)), token, values))
    return {token: dict(contributions[token]) for token, _, _ in _choose(rows, top, group)}


def _choose(rows: Iterable[Row], top: int, group: Callable[[str], str] | None) -> list[Chosen]:
    """``most_decisive`` over rows: the chosen tokens, most decisive first, each with its
    contributions and its group's name."""
    budget = max(top, 0)
    taken: dict[str, int] = {}
    chosen: list[tuple[str, tuple[float, ...], str]] = []
    for _, token, values in sorted(rows):
        key = "" if group is None else group(token)
        held = taken.get(key, 0)
        if held < budget:
            taken[key] = held + 1
            chosen.append((token, values, key))
    return chosen


def normalise_length(
    contributions: Mapping[str, Mapping[str, float]],
    *,
    top: int,
    floor: int,
    group: Callable[[str], str] | None = None,
) -> dict[str, dict[str, float]]:
    """Each group's contributions times ``top / max(n, min(floor, top))``, n its token count.

    A group with ``top`` tokens or more is unchanged, and so is every group when ``floor``
    is ``top`` or more; a group of n < ``top`` tokens counts as ``top`` tokens of its mean
    strength, but never by more than ``top / floor``.
    """
    keys = {token: "" if group is None else group(token) for token in contributions}
    weights = _weights(list(keys.values()), top, floor)
    return {
        token: {label: weights[keys[token]] * value for label, value in per_label.items()}
        for token, per_label in contributions.items()
    }


def _weights(keys: Sequence[str], top: int, floor: int) -> dict[str, float]:
    """``normalise_length``'s weight of each group, given the group of every token scored."""
    sizes: dict[str, int] = {}
    for key in keys:
        sizes[key] = sizes.get(key, 0) + 1
    least = max(min(floor, top), 1)
    return {key: top / max(size, least) if size < top else 1.0 for key, size in sizes.items()}


def bernoulli(
    evidence: Sequence[Evidence],
    *,
    vocabulary_counts: Iterable[Mapping[str, int]],
    messages: Mapping[str, int],
    alpha: float,
) -> Scored:
    """Score a message under the Bernoulli model.

    ``evidence`` holds the message's tokens with per-label message counts D_ct;
    ``vocabulary_counts`` yields D_ct for every token of V (present ones included), because
    absent tokens contribute log(1 - p_tc). Contributions are log p_tc - log(1 - p_tc) for
    present tokens: the change from "absent" to "present".
    """
    labels = list(messages)
    # Σ log(1 - p_tc) over V, kept as a finite sum plus a count of -inf terms, so that a
    # present token whose absent term is -inf (p = 1 under MLE) can be taken out exactly.
    finite = dict.fromkeys(labels, 0.0)
    infinite = dict.fromkeys(labels, 0)
    for counts in vocabulary_counts:
        for label in labels:
            term = _absent(counts.get(label, 0), messages[label], alpha)
            if term == NEG_INF:
                infinite[label] += 1
            else:
                finite[label] += term
    contributions: dict[str, dict[str, float]] = {}
    for item in evidence:
        per_label: dict[str, float] = {}
        for label in labels:
            seen = item.counts.get(label, 0)
            present = smoothed_log_prob(seen, messages[label], alpha=alpha, outcomes=2)
            absent = _absent(seen, messages[label], alpha)
            if absent == NEG_INF:
                infinite[label] -= 1
                absent = 0.0
            finite[label] += present - absent
            per_label[label] = present - absent
        contributions[item.token] = per_label
    priors = log_priors(messages)
    log_joint = {
        label: NEG_INF if infinite[label] > 0 else priors[label] + finite[label] for label in labels
    }
    return Scored(log_joint, normalise(log_joint), contributions)


def _absent(seen: float, messages: int, alpha: float) -> float:
    """log P(token absent | class) = log(1 - p_tc) under additive smoothing."""
    return smoothed_log_prob(messages - seen, messages, alpha=alpha, outcomes=2)


def clues(scored: Scored, positive: str, negative: str, *, limit: int) -> list[Clue]:
    """The ``limit`` tokens whose contributions moved the log-odds most, largest |weight| first.

    Ties break on the token text so that the answer is deterministic.
    """
    weights = [
        Clue(token, per_label[positive] - per_label[negative])
        for token, per_label in scored.contributions.items()
    ]
    weights.sort(key=lambda c: (-abs(c.weight), c.token))
    return weights[:limit]


def probability(log_posterior: float) -> float:
    """exp(log_posterior): a probability in [0, 1] (saturates; never rank by it)."""
    return math.exp(log_posterior)
