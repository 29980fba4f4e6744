"""The model policy on its own (app.domain.scoring): evidence by presence or occurrence, the
choice of multinomial or Bernoulli, and a user's own model overruling the blend.

Hand-worked numbers come from the seeds' notes (../shared/seeds): Chang's spam slide
(multinomial with Laplace), Piech's Lord of the Rings example (Bernoulli with Laplace);
scikit-learn's MultinomialNB and BernoulliNB are the oracle on generated counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.naive_bayes import BernoulliNB, MultinomialNB

from app.domain import fallback, scoring
from app.domain import naive_bayes as nb
from app.domain.scoring import Counting, Kind, ScoringParams

log = math.log
EXACT = 1e-12

# Every token scores, no length normalisation, no repeats left out: the textbook model.
PLAIN = ScoringParams(
    labels=("ham", "spam"),
    kind="multinomial",
    counting="occurrences",
    alpha=1.0,
    top=None,
    per_kind=False,
    floor=None,
    distinct=None,
    fallback_strength=0.0,
    min_messages=0,
)


@dataclass(frozen=True)
class Stats:
    """A token's learned counts under one label (as storage returns them)."""

    occurrences: int
    messages: int


@dataclass(frozen=True)
class LabelTotals:
    messages: int = 0
    occurrences: int = 0
    token_messages: int = 0


@dataclass(frozen=True)
class Totals:
    labels: dict[str, LabelTotals]
    vocabulary: int

    def of(self, label: str) -> LabelTotals:
        return self.labels.get(label, LabelTotals())


@dataclass
class Model:
    """Learned counts built from labelled documents, and the message's side of a score."""

    counts: dict[int, dict[str, Stats]] = field(default_factory=dict)
    totals: Totals = field(default_factory=lambda: Totals({}, 0))
    ids: dict[str, int] = field(default_factory=dict)

    def names(self) -> dict[int, str]:
        return {tid: token for token, tid in self.ids.items()}


def learned(documents: Sequence[tuple[str, Sequence[str]]], ids: dict[str, int]) -> Model:
    """What learning ``documents`` (label, tokens) leaves: per token and label occurrences and
    messages, per label messages, occurrences and Σ distinct tokens per message."""
    counts: dict[int, dict[str, Stats]] = {}
    labels: dict[str, LabelTotals] = {}
    for label, tokens in documents:
        for token in set(tokens):
            tid = ids.setdefault(token, len(ids))
            old = counts.setdefault(tid, {}).get(label, Stats(0, 0))
            counts[tid][label] = Stats(old.occurrences + tokens.count(token), old.messages + 1)
        old_total = labels.get(label, LabelTotals())
        labels[label] = LabelTotals(
            old_total.messages + 1,
            old_total.occurrences + len(tokens),
            old_total.token_messages + len(set(tokens)),
        )
    return Model(dict(sorted(counts.items())), Totals(labels, len(counts)), ids)


def score(model: Model, message: Sequence[str], params: ScoringParams) -> nb.Scored:
    """``scoring.score`` of ``message`` against ``model`` (its vocabulary's message counts
    given for the Bernoulli model)."""
    ids = [model.ids[token] for token in set(message) if token in model.ids]
    vocabulary = [{lb: s.messages for lb, s in per.items()} for per in model.counts.values()]
    found = scoring.evidence(
        {tid: model.counts[tid] for tid in sorted(ids)},
        names=model.names(),
        in_message={token: message.count(token) for token in message},
        counting=scoring.counting_of(params),
    )
    return scoring.score(found, totals=model.totals, vocabulary_counts=vocabulary, params=params)


# ---- Chang's spam slide: occurrences as the slide counts them, and presence -------------------

SLIDE = [
    ("spam", ["win", "cash", "now"]),
    ("spam", ["win", "win", "prize"]),
    ("ham", ["meeting", "at", "noon"]),
    ("ham", ["cash", "report", "at", "noon"]),
]


def test_occurrence_evidence_is_the_slides_multinomial_with_laplace() -> None:
    """P(w|c) = (Count(w, c) + 1) / (Count(c) + |V|): T_spam = 6, T_ham = 7, |V| = 8; 'win'
    counts twice in 'win win cash'."""
    scored = score(learned(SLIDE, {}), ["win", "win", "cash"], PLAIN)
    assert math.isclose(scored.log_joint["spam"], log(2 / 4) + 2 * log(4 / 14) + log(2 / 14))
    assert math.isclose(scored.log_joint["ham"], log(2 / 4) + 2 * log(1 / 15) + log(2 / 15))


def test_presence_evidence_counts_messages_once_each() -> None:
    """Under presence counting 'win' is in D = 2 spam messages ('win win prize' counts once),
    the totals are Σ distinct tokens per message (spam 3 + 2, ham 3 + 4), and
    'win' counts once however often the message repeats it."""
    presence = replace(PLAIN, counting="presence")
    model = learned(SLIDE, {})
    assert model.totals.of("spam").token_messages == 5
    scored = score(model, ["win", "win", "cash"], presence)
    assert math.isclose(scored.log_joint["spam"], log(2 / 4) + log(3 / 13) + log(2 / 13))
    assert math.isclose(scored.log_joint["ham"], log(2 / 4) + log(1 / 15) + log(2 / 15))
    assert score(model, ["win", "cash"], presence) == scored


@pytest.mark.parametrize("counting", ["presence", "occurrences"])
def test_evidence_leaves_out_tokens_never_learned_keeping_the_order(counting: Counting) -> None:
    counts = {
        7: {"spam": Stats(3, 2)},
        2: {"ham": Stats(0, 0)},  # its counts fell to zero: no evidence
        5: {"ham": Stats(1, 1), "spam": Stats(4, 1)},
    }
    names = {7: "seven", 2: "two", 5: "five"}
    found = scoring.evidence(
        counts, names=names, in_message={"seven": 3, "five": 1, "two": 1}, counting=counting
    )
    if counting == "presence":
        expected = [("seven", 1, {"spam": 2}), ("five", 1, {"ham": 1, "spam": 1})]
    else:
        expected = [("seven", 3, {"spam": 3}), ("five", 1, {"ham": 1, "spam": 4})]
    assert [tuple(item) for item in found] == expected


def test_class_totals_follow_the_counting() -> None:
    totals = Totals({"spam": LabelTotals(2, 6, 5)}, 8)
    assert scoring.class_totals(totals, ("ham", "spam"), "presence") == {
        "ham": nb.ClassTotals(0, 0),
        "spam": nb.ClassTotals(2, 5),
    }
    assert scoring.class_totals(totals, ("spam",), "occurrences") == {"spam": nb.ClassTotals(2, 6)}


# ---- Piech's Lord of the Rings: the Bernoulli model chosen by kind ---------------------------

LOTR = Model(
    counts={
        1: {"0": Stats(10, 10), "1": Stats(13, 13)},  # liked Star Wars
        2: {"0": Stats(8, 8), "1": Stats(10, 10)},  # liked Harry Potter
    },
    totals=Totals({"0": LabelTotals(13, 18, 18), "1": LabelTotals(17, 23, 23)}, 2),
    ids={"star_wars": 1, "harry_potter": 2},
)


def test_bernoulli_kind_scores_absent_tokens_as_the_notes_do() -> None:
    """The new user likes Star Wars, not Harry Potter; with Laplace, P(x1|y=0) = 11/15 and
    P(not x2|y=0) = 1 - 9/15, P(x1|y=1) = 14/19 and P(not x2|y=1) = 1 - 11/19."""
    bernoulli = replace(PLAIN, labels=("0", "1"), kind="bernoulli", counting="occurrences")
    scored = score(LOTR, ["star_wars", "star_wars"], bernoulli)
    assert math.isclose(scored.log_joint["0"], log(13 / 30) + log(11 / 15) + log(6 / 15))
    assert math.isclose(scored.log_joint["1"], log(17 / 30) + log(14 / 19) + log(8 / 19))


def test_only_the_bernoulli_kind_reads_the_vocabulary() -> None:
    def vocabulary() -> Iterator[Mapping[str, int]]:
        raise AssertionError("the multinomial model read every vocabulary token")
        yield {}

    model = learned(SLIDE, {})
    found = scoring.evidence(
        model.counts,
        names=model.names(),
        in_message={token: 1 for token in model.ids},
        counting=scoring.counting_of(PLAIN),
    )
    scored = scoring.score(found, totals=model.totals, vocabulary_counts=vocabulary(), params=PLAIN)
    assert set(scored.contributions) == set(model.ids)


# ---- scikit-learn as the oracle ------------------------------------------------------------


def generated(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Poisson counts of 25 features over 40 documents of two labels (every feature learned),
    and 12 messages to score."""
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.05, 3.0, size=(2, 25))
    y = np.array(["ham", "spam"] * 20)
    rng.shuffle(y)
    x = np.vstack([rng.poisson(rates[int(label == "spam")]) for label in y])
    for column in np.flatnonzero(x.sum(axis=0) == 0):
        x[rng.integers(len(y)), column] = 1
    return x, y, rng.poisson(1.0, size=(12, 25))


def model_of(x: np.ndarray, y: np.ndarray) -> Model:
    documents = [
        (str(label), [f"t{j}" for j in range(x.shape[1]) for _ in range(int(row[j]))])
        for row, label in zip(x, y, strict=True)
    ]
    return learned(documents, {f"t{j}": j for j in range(x.shape[1])})


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    ("kind", "counting"),
    [("multinomial", "occurrences"), ("multinomial", "presence"), ("bernoulli", "presence")],
)
def test_each_kind_and_counting_is_sklearns_estimator(
    seed: int, kind: Kind, counting: Counting
) -> None:
    """Occurrences: MultinomialNB on the counts; presence: MultinomialNB on the counts
    binarised (x > 0); Bernoulli: BernoulliNB."""
    x, y, rows = generated(seed)
    params = replace(PLAIN, kind=kind, counting=counting, alpha=0.5)
    binary = counting == "presence"
    oracle = BernoulliNB(alpha=0.5) if kind == "bernoulli" else MultinomialNB(alpha=0.5)
    oracle.fit((x > 0).astype(int) if binary else x, y)
    joints = oracle.predict_joint_log_proba((rows > 0).astype(int) if binary else rows)
    model = model_of(x, y)
    for row, joint in zip(rows, joints, strict=True):
        message = [f"t{j}" for j in range(len(row)) for _ in range(int(row[j]))]
        ours = score(model, message, params)
        for index, label in enumerate(oracle.classes_):
            assert math.isclose(ours.log_joint[str(label)], joint[index], abs_tol=1e-9)


# ---- a user's own model and the site-wide blend ------------------------------------------

SPAMMY = ["win", "cash", "prize", "now"]
HAMMY = ["meeting", "report", "at", "noon"]


def user_score(
    own: Model, site: Model, message: Sequence[str], params: ScoringParams
) -> nb.Scored | None:
    ids = sorted({own.ids[t] for t in message if t in own.ids})

    def found(model: Model) -> dict[int, dict[str, Stats]]:
        return {tid: model.counts[tid] for tid in ids if tid in model.counts}

    return scoring.score_user(
        found(own),
        site=found(site),
        names=own.names(),
        in_message={token: message.count(token) for token in message},
        own_totals=own.totals,
        site_totals=site.totals,
        params=params,
    )


def models(site_docs: int, own_docs: int) -> tuple[Model, Model]:
    """A site-wide model that learned the spammy words as spam, and a user's (sharing its
    token ids) who received them as ham and the hammy words as spam."""
    ids: dict[str, int] = {}
    site = learned([("spam", SPAMMY)] * site_docs + [("ham", HAMMY)] * site_docs, ids)
    own = learned([("ham", SPAMMY)] * own_docs + [("spam", HAMMY)] * own_docs, ids)
    return own, site


def test_a_user_whose_model_gives_verdicts_is_served_the_lower_log_odds() -> None:
    params = replace(PLAIN, fallback_strength=1e6, min_messages=3)
    own, site = models(site_docs=20, own_docs=3)
    blended = user_score(own, learned([], dict(own.ids)), SPAMMY, params)
    assert blended is None  # an empty site-wide model is no prior
    served = user_score(own, site, SPAMMY, params)
    alone = score(own, SPAMMY, params)
    assert served is not None and scoring.spam_odds(alone) < 0
    assert served == alone  # the own model overrules: the very same score
    # on the hammy words the user's own model says spam: the blend (the site: ham) is served
    served_ham = user_score(own, site, HAMMY, params)
    assert served_ham is not None
    assert scoring.spam_odds(served_ham) < 0 < scoring.spam_odds(score(own, HAMMY, params))


def test_below_min_messages_the_blend_is_served() -> None:
    """With K huge the blend is the site-wide model (see test_fallback); two messages of each
    label are fewer than min_messages, so the user's own model says nothing."""
    params = replace(PLAIN, fallback_strength=1e9, min_messages=3)
    own, site = models(site_docs=20, own_docs=2)
    served = user_score(own, site, SPAMMY, params)
    site_alone = score(site, SPAMMY, params)
    assert served is not None
    assert scoring.spam_odds(served) > 0 > scoring.spam_odds(score(own, SPAMMY, params))
    assert scoring.spam_odds(served) == pytest.approx(scoring.spam_odds(site_alone), rel=1e-6)


def test_overrule_keeps_the_blend_on_a_tie_and_takes_the_lower() -> None:
    def scored(odds: float) -> nb.Scored:
        return nb.Scored({}, {"spam": odds, "ham": 0.0}, {})

    blend, lower, higher = scored(2.0), scored(-1.0), scored(3.0)
    assert scoring.overrule(blend, lower) is lower
    assert scoring.overrule(blend, higher) is blend
    assert scoring.overrule(blend, scored(2.0)) is blend


@pytest.mark.parametrize(
    ("kind", "strength", "expected"),
    [("multinomial", 5.0, True), ("multinomial", 0.0, False), ("bernoulli", 5.0, False)],
)
def test_only_a_multinomial_model_with_strength_falls_back(
    kind: Kind, strength: float, expected: bool
) -> None:
    params = replace(PLAIN, kind=kind, fallback_strength=strength)
    assert scoring.falls_back(params) is expected


@pytest.mark.parametrize(("least", "needed"), [(0, 1), (1, 1), (4, 4)])
def test_verdicts_need_min_messages_of_every_label_and_at_least_one(
    least: int, needed: int
) -> None:
    params = replace(PLAIN, min_messages=least)
    enough = Totals({"ham": LabelTotals(needed), "spam": LabelTotals(needed + 5)}, 3)
    short = Totals({"ham": LabelTotals(needed - 1), "spam": LabelTotals(needed + 5)}, 3)
    assert scoring.gives_verdicts(enough, params)
    assert not scoring.gives_verdicts(short, params)


# ---- score_counts: the same scores from the counts, whichever path ----------------------------
# A message scored from its tokens' counts gives ``score`` of their ``evidence``, to the last
# bit, whichever path it takes (the default model's pairs, or evidence for every other model
# and for a model that cannot take them).

THREE = ("ham", "spam", "news")
PREFIXES = ("w", "subject:", "url:host:", "from:addr:")


# A token's counts under a label: few values, so that repeats (equal counts) are common; a
# label may be absent, and a count may have messages but no occurrences left.
stats = st.one_of(
    st.none(),
    st.sampled_from([Stats(1, 1), Stats(12, 11), Stats(12, 11), Stats(3, 1), Stats(0, 2)]),
)
token_rows = st.lists(
    st.tuples(st.sampled_from(PREFIXES), st.integers(1, 2), stats, stats, stats), max_size=50
)
label_totals = st.builds(
    LabelTotals,
    messages=st.integers(0, 40),
    occurrences=st.sampled_from([0, 7, 400]),
    token_messages=st.sampled_from([0, 5, 300]),
)
params_strategy = st.builds(
    ScoringParams,
    labels=st.sampled_from([THREE[:2], THREE[1::-1], THREE]),
    kind=st.sampled_from(["multinomial", "multinomial", "bernoulli"]),
    counting=st.sampled_from(["presence", "occurrences"]),
    alpha=st.sampled_from([1.0, 0.5, 0.01]),
    top=st.one_of(st.none(), st.integers(0, 12)),
    per_kind=st.booleans(),
    floor=st.one_of(st.none(), st.integers(1, 15)),
    distinct=st.one_of(st.none(), st.integers(1, 20)),
    fallback_strength=st.just(0.0),
    min_messages=st.just(0),
)


def counts_of(
    rows: list[tuple[str, int, Stats | None, Stats | None, Stats | None]],
) -> tuple[dict[int, dict[str, Stats]], dict[int, str], dict[str, int]]:
    """The counts (token id -> label -> stats; tokens with no stats left out, as storage
    leaves them), the names, and each token's times in the message."""
    counts: dict[int, dict[str, Stats]] = {}
    names: dict[int, str] = {}
    in_message: dict[str, int] = {}
    for tid, (prefix, times, *per_label) in enumerate(rows):
        token = f"{prefix}t{tid % 5}{tid}"
        names[tid] = token
        in_message[token] = times
        per = {lb: s for lb, s in zip(THREE, per_label, strict=True) if s is not None}
        if per:
            counts[tid] = per
    return counts, names, in_message


def assert_same(got: nb.Scored, expected: nb.Scored) -> None:
    assert list(got.contributions.items()) == list(expected.contributions.items())
    assert list(got.log_joint.items()) == list(expected.log_joint.items())
    assert list(got.log_posteriors.items()) == list(expected.log_posteriors.items())


@settings(max_examples=400)
@given(
    rows=token_rows,
    params=params_strategy,
    totals=st.tuples(label_totals, label_totals, label_totals),
    vocabulary=st.sampled_from([0, 3, 90]),
    two=st.booleans(),
    lumped=st.booleans(),
)
def test_score_counts_is_score_of_the_evidence_bit_for_bit(
    rows: list[tuple[str, int, Stats | None, Stats | None, Stats | None]],
    params: ScoringParams,
    totals: tuple[LabelTotals, LabelTotals, LabelTotals],
    vocabulary: int,
    two: bool,
    lumped: bool,
) -> None:
    """Every model, counting and budget; two of three classes scored (tokens learned only
    under the third count, at 0, as ``evidence`` keeps them); classes lumped into sides;
    totals with no tokens and no vocabulary (no pairs then: a denominator is 0)."""
    counts, names, in_message = counts_of(rows)
    model = Totals(dict(zip(THREE, totals, strict=True)), vocabulary)
    classes = params.labels[:2] if two else params.labels
    lumps = {"ham": "ham", "news": "ham", "spam": "spam"} if lumped else None
    vocabulary_counts = [{lb: s.messages for lb, s in per.items()} for per in counts.values()]
    found = scoring.evidence(
        counts,
        names=names,
        in_message=in_message,
        counting=scoring.counting_of(params),
        lumps=lumps,
    )

    def from_counts() -> nb.Scored:
        return scoring.score_counts(
            counts,
            names=names,
            in_message=in_message,
            totals=model,
            vocabulary_counts=vocabulary_counts,
            params=params,
            classes=classes,
            lumps=lumps,
        )

    try:
        expected = scoring.score(
            found,
            totals=model,
            vocabulary_counts=vocabulary_counts,
            params=params,
            classes=classes,
        )
    except (ValueError, ZeroDivisionError) as error:
        # A model that cannot score (no messages, a zero denominator a token needs) fails
        # the same way through either path.
        with pytest.raises(type(error)):
            from_counts()
        return
    assert_same(from_counts(), expected)


@given(
    rows=token_rows,
    counting=st.sampled_from(["presence", "occurrences"]),
    labels=st.sampled_from([("ham", "spam"), ("spam", "ham"), ("spam", "news")]),
)
def test_pairs_are_the_evidence_of_two_labels(
    rows: list[tuple[str, int, Stats | None, Stats | None, Stats | None]],
    counting: scoring.Counting,
    labels: tuple[str, str],
) -> None:
    """The same tokens in the same order, counting as often, with the evidence's counts of
    the two labels (0 where it has none)."""
    counts, names, in_message = counts_of(rows)
    evidence = scoring.evidence(counts, names=names, in_message=in_message, counting=counting)
    pairs = scoring.pair_evidence(
        counts, names=names, in_message=in_message, counting=counting, labels=labels
    )
    first, second = labels
    assert pairs == [
        (e.token, e.in_message, e.counts.get(first, 0), e.counts.get(second, 0)) for e in evidence
    ]


def test_pair_multinomial_declines_a_denominator_that_is_not_positive() -> None:
    """With no tokens and no vocabulary a label's denominator is 0: ``multinomial`` scores
    that term by term, so the pairs' path says None."""
    totals = {"ham": nb.ClassTotals(3, 0), "spam": nb.ClassTotals(2, 40)}
    pairs: list[nb.Pair] = [("w", 1, 0, 2)]
    assert nb.pair_multinomial(pairs, totals=totals, vocabulary=0, alpha=1.0, top=5) is None
    scored = nb.pair_multinomial(pairs, totals=totals, vocabulary=4, alpha=1.0, top=5)
    assert scored is not None
    evidence = [nb.Evidence("w", 1, {"ham": 0, "spam": 2})]
    assert_same(scored, nb.multinomial(evidence, totals=totals, vocabulary=4, alpha=1.0, top=5))


# The default model's rules for header tokens: a budget per kind, a length floor, repeats
# from 10 messages counted once.
HEADER_RULES = ScoringParams(
    labels=("ham", "spam"),
    kind="multinomial",
    counting="presence",
    alpha=1.0,
    top=25,
    per_kind=True,
    floor=10,
    distinct=10,
    fallback_strength=0.0,
    min_messages=0,
)


def test_the_default_models_pairs_count_a_repeat_once() -> None:
    """Two header tokens learned together from 11 messages each way count once, as the
    evidence's path counts them; a rarer pair both count."""
    params = HEADER_RULES
    together, rare = Stats(12, 11), Stats(1, 1)
    counts = {
        0: {"spam": together},
        1: {"spam": together},
        2: {"ham": rare},
        3: {"ham": rare},
    }
    names = {0: "from:addr:a", 1: "from:addr:b", 2: "from:addr:c", 3: "from:addr:d"}
    model = Totals({"ham": LabelTotals(20, 0, 900), "spam": LabelTotals(20, 0, 800)}, 500)
    got = scoring.score_counts(
        counts,
        names=names,
        in_message=dict.fromkeys(names.values(), 1),
        totals=model,
        vocabulary_counts=[],
        params=params,
    )
    assert sorted(got.contributions) == ["from:addr:a", "from:addr:c", "from:addr:d"]


# ---- score_user: a user's score from pairs is the blend of the evidence -----------------------
# A user's score is the blend of both models' evidence (``fallback.blend``) scored term by term,
# overruled by the user's own model where it gives verdicts; the default model takes pairs
# through the blend, and must give that score to the last bit.

ByTid = dict[int, dict[str, Stats]]
user_rows = st.lists(
    st.tuples(
        st.sampled_from(PREFIXES),
        st.integers(1, 2),
        st.tuples(stats, stats, stats),
        st.tuples(stats, stats, stats),
    ),
    max_size=40,
)


def user_counts_of(
    rows: list[tuple[str, int, tuple[Stats | None, ...], tuple[Stats | None, ...]]],
) -> tuple[ByTid, ByTid, dict[int, str], dict[str, int]]:
    """The user's counts and the site-wide counts of one message's tokens (a token either
    model never learned left out of its counts), the names and each token's times."""
    mine: dict[int, dict[str, Stats]] = {}
    site: dict[int, dict[str, Stats]] = {}
    names: dict[int, str] = {}
    in_message: dict[str, int] = {}
    for tid, (prefix, times, own_stats, site_stats) in enumerate(rows):
        token = f"{prefix}t{tid % 5}{tid}"
        names[tid] = token
        in_message[token] = times
        for counts, per_label in ((mine, own_stats), (site, site_stats)):
            per = {lb: s for lb, s in zip(THREE, per_label, strict=True) if s is not None}
            if per:
                counts[tid] = per
    return mine, site, names, in_message


def blended_by_evidence(
    mine: dict[int, dict[str, Stats]],
    site: dict[int, dict[str, Stats]],
    *,
    names: dict[int, str],
    in_message: dict[str, int],
    own_totals: Totals,
    site_totals: Totals,
    params: ScoringParams,
    classes: tuple[str, ...],
    lumps: dict[str, str] | None,
) -> nb.Scored | None:
    """A user's score as the module defines it, term by term from each model's evidence."""
    prior = scoring.class_totals(site_totals, classes, params.counting)
    if not all(t.tokens > 0 for t in prior.values()):
        return None
    counting = scoring.counting_of(params)
    own = scoring.evidence(mine, names=names, in_message=in_message, counting=counting, lumps=lumps)
    blended, blended_totals = fallback.blend(
        own,
        own_totals=scoring.class_totals(own_totals, classes, params.counting),
        site=scoring.evidence(
            site, names=names, in_message=in_message, counting=counting, lumps=lumps
        ),
        site_totals=prior,
        site_vocabulary=site_totals.vocabulary,
        alpha=params.alpha,
        strength=params.fallback_strength,
        distinct=params.distinct,
        group=scoring.group_of(params),
    )
    scored = nb.multinomial(
        blended,
        totals=blended_totals,
        vocabulary=0,
        alpha=0.0,
        top=params.top,
        group=scoring.group_of(params),
        floor=params.floor,
        junk=params.junk,
    )
    own_classes = scoring.scored_classes(own_totals, params)
    if own_classes is None or not scoring.gives_verdicts(own_totals, params):
        return scored
    alone = scoring.own_multinomial(own, totals=own_totals, params=params, classes=own_classes)
    return scoring.overrule(scored, alone, params.junk)


@settings(max_examples=400)
@given(
    rows=user_rows,
    params=params_strategy.map(lambda p: replace(p, kind="multinomial")),
    strength=st.sampled_from([0.5, 5.0, 50.0]),
    least=st.integers(0, 3),
    own=st.tuples(label_totals, label_totals, label_totals),
    site=st.tuples(label_totals, label_totals, label_totals),
    vocabulary=st.sampled_from([(0, 0), (3, 90), (90, 3)]),
    two=st.booleans(),
    lumped=st.booleans(),
)
def test_a_users_score_is_the_blend_of_the_evidence_bit_for_bit(
    rows: list[tuple[str, int, tuple[Stats | None, ...], tuple[Stats | None, ...]]],
    params: ScoringParams,
    strength: float,
    least: int,
    own: tuple[LabelTotals, LabelTotals, LabelTotals],
    site: tuple[LabelTotals, LabelTotals, LabelTotals],
    vocabulary: tuple[int, int],
    two: bool,
    lumped: bool,
) -> None:
    """Every counting and budget, with and without a floor or a repeat rule; two or three
    classes, two of three scored (the user's own model may score all three), lumps; an own
    model that gives verdicts or not, or has learned nothing; a site-wide class without
    tokens (no prior)."""
    params = replace(params, fallback_strength=strength, min_messages=least)
    mine, theirs, names, in_message = user_counts_of(rows)
    own_totals = Totals(dict(zip(THREE, own, strict=True)), vocabulary[0])
    site_totals = Totals(dict(zip(THREE, site, strict=True)), vocabulary[1])
    classes = params.labels[:2] if two else params.labels
    lumps = {"ham": "ham", "news": "ham", "spam": "spam"} if lumped else None
    common: dict[str, Any] = {
        "names": names,
        "in_message": in_message,
        "own_totals": own_totals,
        "site_totals": site_totals,
        "params": params,
        "classes": classes,
        "lumps": lumps,
    }
    try:
        expected = blended_by_evidence(mine, theirs, **common)
    except (ValueError, ZeroDivisionError) as error:
        with pytest.raises(type(error)):
            scoring.score_user(mine, site=theirs, **common)
        return
    got = scoring.score_user(mine, site=theirs, **common)
    if expected is None:
        assert got is None
    else:
        assert got is not None
        assert_same(got, expected)


def test_a_user_whose_model_overrules_counts_its_repeats_once() -> None:
    """The user's own model, served where it overrules the blend, leaves out a repeat as
    its score alone does: two header tokens the user learned together from 11 ham count
    once, and the rarer ones each count."""
    params = replace(HEADER_RULES, fallback_strength=5.0, min_messages=3)
    together, rare = Stats(12, 11), Stats(1, 1)
    mine = {0: {"ham": together}, 1: {"ham": together}, 2: {"ham": rare}, 3: {"ham": rare}}
    site = {tid: {"spam": Stats(30, 30)} for tid in mine}
    names = {0: "from:addr:a", 1: "from:addr:b", 2: "from:addr:c", 3: "from:addr:d"}
    in_message = dict.fromkeys(names.values(), 1)
    own_totals = Totals({"ham": LabelTotals(20, 0, 900), "spam": LabelTotals(20, 0, 800)}, 500)
    site_totals = Totals({"ham": LabelTotals(90, 0, 9000), "spam": LabelTotals(90, 0, 8000)}, 900)
    served = scoring.score_user(
        mine,
        site=site,
        names=names,
        in_message=in_message,
        own_totals=own_totals,
        site_totals=site_totals,
        params=params,
    )
    alone = scoring.score_counts(
        mine,
        names=names,
        in_message=in_message,
        totals=own_totals,
        vocabulary_counts=[],
        params=params,
    )
    assert served is not None
    assert_same(served, alone)
    assert sorted(served.contributions) == ["from:addr:a", "from:addr:c", "from:addr:d"]
