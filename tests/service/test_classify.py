"""classify on a real database: the untrained guard rail, and scores after training."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import pytest

from app.service import SpamFilter
from app.settings.schema import Settings
from tests.builders import ham_message, make_message, spam_message
from tests.storage.snapshot import snapshot

MakeService = Callable[..., SpamFilter]
MakeSettings = Callable[..., Settings]

SPAMMY = make_message(
    "Claim your lottery prize",
    "Urgent: claim your cash prize today, a guaranteed bonus for the winner.\n",
    sender="Prize Desk <desk@winners.example>",
)
HAMMY = make_message(
    "Agenda for the project review",
    "Please find the draft agenda attached; the review meeting is tomorrow after lunch.\n",
    sender="Carol <carol@example.org>",
)


def train(service: SpamFilter, per_label: int, seed: int = 31) -> None:
    rng = random.Random(seed)
    for serial in range(per_label):
        service.learn(spam_message(rng, 2 * serial), "spam")
        service.learn(ham_message(rng, 2 * serial + 1), "ham")


def assert_untrained(result: Any) -> None:
    assert result.verdict == "unsure"
    assert result.reason == "not_enough_training"
    assert result.log_odds == 0
    assert result.spam_probability == pytest.approx(0.5)
    assert result.clues == []


def test_an_empty_model_is_unsure_for_lack_of_training(service: SpamFilter) -> None:
    assert_untrained(service.classify(SPAMMY))
    assert_untrained(service.classify(HAMMY))


def test_one_label_alone_is_not_enough(service: SpamFilter) -> None:
    rng = random.Random(32)
    for serial in range(15):
        service.learn(spam_message(rng, serial), "spam")
    assert_untrained(service.classify(SPAMMY))


@pytest.mark.parametrize(
    "model",
    [
        {"counting": "presence"},
        {"counting": "occurrences"},
        {"kind": "bernoulli"},
    ],
    ids=["presence", "occurrences", "bernoulli"],
)
def test_after_training_spam_scores_positive_and_ham_negative(
    make_settings: MakeSettings, make_service: MakeService, model: dict[str, str]
) -> None:
    settings = make_settings(model=model, decision={"ham_log_odds": 0.0, "spam_log_odds": 0.0})
    service = make_service(settings)
    train(service, per_label=15)

    spam, ham = service.classify(SPAMMY), service.classify(HAMMY)
    assert spam.log_odds > 0 > ham.log_odds
    assert (spam.verdict, spam.reason) == ("spam", None)
    assert (ham.verdict, ham.reason) == ("ham", None)
    for result in (spam, ham):
        assert math.fsum(math.exp(v) for v in result.log_posteriors.values()) == pytest.approx(1)
        assert result.clues
    assert spam.spam_probability > 0.5 > ham.spam_probability
    assert spam.clues[0].weight > 0 > ham.clues[0].weight


def test_too_little_training_scores_but_stays_unsure(service: SpamFilter) -> None:
    train(service, per_label=3)
    result = service.classify(SPAMMY)
    assert result.log_odds > 0
    assert (result.verdict, result.reason) == ("unsure", "not_enough_training")


def test_classify_is_read_only(service: SpamFilter, database_url: str) -> None:
    train(service, per_label=12)
    before = snapshot(database_url)
    for raw in (SPAMMY, HAMMY, make_message("never seen", "entirely novel words here\n")):
        service.classify(raw)
    assert snapshot(database_url) == before


def test_forgetting_all_training_returns_to_the_guard_rail(service: SpamFilter) -> None:
    rng = random.Random(33)
    messages = [(spam_message(rng, i), "spam") for i in range(11)]
    messages += [(ham_message(rng, 100 + i), "ham") for i in range(11)]
    for raw, label in messages:
        service.learn(raw, label)
    assert service.classify(SPAMMY).log_odds > 0
    for raw, _ in messages:
        service.forget(raw)
    assert_untrained(service.classify(SPAMMY))


@pytest.mark.parametrize(("per_kind", "expected_kinds"), [(True, 2), (False, 1)])
def test_the_top_tokens_budget_applies_per_kind_when_asked(
    make_service: MakeService, make_settings: MakeSettings, per_kind: bool, expected_kinds: int
) -> None:
    """With top_tokens=1 per kind, the best body word and the best header token score;
    with one budget, only the single most decisive token of either kind does."""
    service = make_service(
        make_settings(model={"top_tokens": 1, "top_per_kind": per_kind, "clues": 10})
    )
    train(service, 12)

    result = service.classify(SPAMMY)

    kinds = {":" in clue.token for clue in result.clues}
    assert len(result.clues) == expected_kinds
    assert len(kinds) == expected_kinds


def test_tokens_learned_together_count_once_unless_turned_off(
    make_service: MakeService, make_settings: MakeSettings
) -> None:
    """Twelve spam came through one relay: its host names and its /24, /16 and /8 were
    learned together every time, so by default they score as one token; with 0, as five.
    The sender and MIME tokens that every message shares collapse the same way."""
    relay = (("Received", "from mx.bad.example (mx.bad.example [192.0.2.7]) by mx.example.net"),)
    relay_tokens = {
        "received:host:mx.bad.example",
        "received:host:mx.example.net",
        "received:ip:192.0.2",
        "received:ip:192.0",
        "received:ip:192",
    }
    # Without length normalisation, so that the remaining weights are comparable as they are.
    model = {"top_tokens": 25, "clues": 200, "normalise_length": False}
    learner = make_service(make_settings(model=model))
    for serial in range(12):
        words = f"offer number {serial} for you"
        learner.learn(make_message(f"deal {serial}", words, headers=relay), "spam")
        learner.learn(make_message(f"notes {serial}", f"minutes {serial} attached"), "ham")
    clues = {}
    log_odds = {}
    for least in (0, 10):  # the same learned counts, read with each setting
        service = make_service(make_settings(model={**model, "distinct_min_messages": least}))
        result = service.classify(make_message("hello", "see you soon", headers=relay))
        clues[least] = {c.token: c.weight for c in result.clues}
        log_odds[least] = result.log_odds

    assert relay_tokens <= clues[0].keys()
    assert relay_tokens & clues[10].keys() == {"received:host:mx.bad.example"}  # first by text
    assert {"from:addr:alice@example.org", "mime:type:text/plain"} <= clues[0].keys()
    assert len({t for t in clues[10] if t.startswith(("from:", "mime:"))}) <= 1
    for token, weight in clues[10].items():
        assert weight == pytest.approx(clues[0][token])
    dropped = sum(w for t, w in clues[0].items() if t not in clues[10])
    assert log_odds[10] == pytest.approx(log_odds[0] - dropped)
    assert log_odds[10] < log_odds[0]


def test_length_normalisation_weighs_a_short_kind_up_to_the_budget(
    make_service: MakeService, make_settings: MakeSettings
) -> None:
    """SPAMMY has fewer than 25 tokens of each kind: with normalisation on, every clue of a
    kind with n tokens weighs 25 / max(n, 10) times its weight with normalisation off."""
    model = {"top_tokens": 25, "clues": 200}
    results = {}
    for on in (False, True):
        service = make_service(make_settings(model={**model, "normalise_length": on}))
        train(service, 12)
        results[on] = service.classify(SPAMMY)

    plain = {clue.token: clue.weight for clue in results[False].clues}
    sizes = {kind: sum((":" in t) == kind for t in plain) for kind in (False, True)}
    assert 0 < sizes[True] < 25 and 0 < sizes[False] < 25, sizes
    weighted = {clue.token: clue.weight for clue in results[True].clues}
    assert weighted.keys() == plain.keys()
    for token, weight in plain.items():
        factor = 25 / max(sizes[":" in token], 10)
        assert weighted[token] == pytest.approx(factor * weight)
    assert results[True].log_odds > results[False].log_odds > 0
