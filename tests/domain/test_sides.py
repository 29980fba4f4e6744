"""The side-merged model (app.domain.sides): a site's classes summed into junk and
not-junk score exactly as a two-class model that learned the same messages as ham and spam.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from app.domain import naive_bayes as nb
from app.domain import scoring
from app.domain.classes import side_training_lead
from app.domain.sides import (
    SIDES,
    deciding_tokens,
    lumps,
    merge_totals,
    merge_vocabulary_counts,
    restricted,
    side_params,
)
from tests.domain.test_scoring import PLAIN, Model, learned

CLASSES = ("ham", "spam", "newsletter", "phishing")
JUNK = ("spam", "phishing")
SIDE = {"ham": "ham", "newsletter": "ham", "spam": "spam", "phishing": "spam"}
WORDS = [f"w{k}" for k in range(40)]


def documents(seed: int) -> list[tuple[str, list[str]]]:
    """Messages of the four classes, each class leaning on its own words."""
    rng = random.Random(seed)
    docs = []
    for serial in range(60):
        label = CLASSES[serial % 4]
        lean = WORDS[10 * (serial % 4) : 10 * (serial % 4) + 10]
        docs.append((label, [rng.choice(lean if rng.random() < 0.6 else WORDS) for _ in range(12)]))
    return docs


def scored(model: Model, message: list[str], params: scoring.ScoringParams, merged: bool) -> float:
    ids = sorted({model.ids[token] for token in message if token in model.ids})
    counts = {tid: model.counts[tid] for tid in ids}
    vocabulary = [{lb: s.messages for lb, s in per.items()} for per in model.counts.values()]
    totals: scoring.ModelCounts = model.totals
    found = scoring.evidence(
        counts,
        names=model.names(),
        in_message={token: message.count(token) for token in message},
        counting=scoring.counting_of(params),
        lumps=lumps(CLASSES, JUNK) if merged else None,
    )
    if merged:
        totals = merge_totals(model.totals, CLASSES, JUNK)
        vocabulary = list(merge_vocabulary_counts(vocabulary, JUNK))
        params = side_params(params)
    result = scoring.score(
        found, totals=totals, vocabulary_counts=vocabulary, params=params, classes=SIDES
    )
    return scoring.spam_odds(result)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(
    "params",
    [
        PLAIN,
        replace(PLAIN, counting="presence"),
        replace(PLAIN, top=8, floor=20),
        replace(PLAIN, kind="bernoulli"),
    ],
    ids=["occurrences", "presence", "top-and-floor", "bernoulli"],
)
def test_side_merged_log_odds_are_the_two_class_models_bit_for_bit(
    seed: int, params: scoring.ScoringParams
) -> None:
    docs = documents(seed)
    ids: dict[str, int] = {}
    four = learned(docs, ids)
    # The same messages learned as their side, with the same token ids.
    two = learned([(SIDE[label], tokens) for label, tokens in docs], dict(ids))
    assert two.ids == four.ids
    rng = random.Random(seed + 100)
    for _ in range(20):
        message = [rng.choice(WORDS) for _ in range(15)]
        assert scored(four, message, params, merged=True) == scored(two, message, params, False)


def test_merged_totals_sum_each_side() -> None:
    model = learned(documents(1), {})
    merged = merge_totals(model.totals, CLASSES, JUNK)
    for side in SIDES:
        members = [c for c in CLASSES if SIDE[c] == side]
        assert merged.of(side).messages == sum(model.totals.of(c).messages for c in members)
        assert merged.of(side).occurrences == sum(model.totals.of(c).occurrences for c in members)
        assert merged.of(side).token_messages == sum(
            model.totals.of(c).token_messages for c in members
        )
    assert merged.vocabulary == model.totals.vocabulary


def test_side_training_lead_learns_while_a_class_of_the_same_side_is_likelier() -> None:
    posteriors = {"ham": -2.0, "newsletter": -0.5, "spam": -3.0, "phishing": -4.0}
    # Newsletter beats ham on ham's side: ham's margin to it, negative, so learned.
    assert side_training_lead(posteriors, "ham", junk=JUNK, side_odds=-5.0) == -1.5
    # Newsletter leads its side: the side-merged lead, negated for not-junk.
    assert side_training_lead(posteriors, "newsletter", junk=JUNK, side_odds=-5.0) == 5.0
    # Spam leads the junk side: the side-merged log-odds as they are.
    assert side_training_lead(posteriors, "spam", junk=JUNK, side_odds=-5.0) == -5.0
    assert (
        side_training_lead({"ham": -1.0, "spam": -0.4}, "phishing", junk=JUNK, side_odds=0.3)
        is None
    )


def test_the_class_is_named_from_the_tokens_that_decided_the_verdict() -> None:
    """With ``top``, the classes are scored over the side-merged model's chosen tokens only;
    those are at most ``top`` a kind, so the multi-class model keeps every one of them, with
    the weights length normalisation gives them (1 here: ``top`` tokens of one kind)."""
    params = replace(PLAIN, top=6, floor=20)
    model = learned(documents(4), {})
    message = [f"w{k}" for k in (1, 3, 5, 12, 14, 22, 27, 31, 33, 38, 39, 2, 2)]
    ids = sorted({model.ids[token] for token in message})
    counts = {tid: model.counts[tid] for tid in ids}
    names = model.names()
    in_message = {token: message.count(token) for token in message}

    def found(**how: object) -> list[nb.Evidence]:
        return scoring.evidence(
            counts, names=names, in_message=in_message, counting=params.counting, **how
        )

    sides = scoring.score(
        found(lumps=lumps(CLASSES, JUNK)),
        totals=merge_totals(model.totals, CLASSES, JUNK),
        vocabulary_counts=[],
        params=side_params(params),
        classes=SIDES,
    )
    deciding = deciding_tokens(sides, params)
    assert deciding is not None and len(deciding) == 6 < len(found())
    chosen = scoring.evidence(
        restricted(counts, names, deciding),
        names=names,
        in_message=in_message,
        counting=params.counting,
    )
    classes = scoring.score(
        chosen,
        totals=model.totals,
        vocabulary_counts=[],
        params=params,
        classes=CLASSES,
    )
    assert set(classes.contributions) == set(deciding)
    unweighted = scoring.score(
        chosen,
        totals=model.totals,
        vocabulary_counts=[],
        params=replace(params, top=None, floor=None),
        classes=CLASSES,
    )
    assert classes.contributions == unweighted.contributions
    # Summed in another order (ranked by spread, not junk against not-junk).
    assert classes.log_posteriors == pytest.approx(unweighted.log_posteriors, abs=1e-12)
    assert deciding_tokens(sides, replace(params, top=None)) is None
    assert deciding_tokens(sides, replace(params, kind="bernoulli")) is None
    assert restricted(counts, names, None) is counts
