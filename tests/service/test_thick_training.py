"""Thick training: learn only what the model gets wrong or is unsure about."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from app.domain.decision import worth_learning
from app.service import Outcome, SpamFilter
from app.settings.schema import Settings
from tests.builders import make_message
from tests.service.test_classify import HAMMY, SPAMMY, train
from tests.storage.snapshot import snapshot

MakeService = Callable[..., SpamFilter]
MakeSettings = Callable[..., Settings]


@pytest.mark.parametrize(
    ("log_odds", "label", "expected"),
    [
        (None, "spam", True),  # cannot score yet: learn
        (50.0, "spam", False),  # right and confident: skip
        (50.0, "ham", True),  # wrong: always learn (an explicit correction)
        (-50.0, "ham", False),
        (-50.0, "spam", True),
        (20.0, "spam", True),  # right but within the margin: learn
        (-30.0, "ham", True),  # exactly at the margin: learn
        (0.0, "ham", True),
    ],
)
def test_worth_learning(log_odds: float | None, label: str, expected: bool) -> None:
    assert worth_learning(log_odds, label=label, positive="spam", margin=30.0) is expected


@pytest.mark.parametrize(
    ("counts", "expected"),
    [((0, 10), True), ((9, 10), True), ((10, 10), False), ((500, 10), False), ((), False)],
)
def test_a_label_short_of_min_messages_learns_even_a_confident_message(
    counts: tuple[int, ...], expected: bool
) -> None:
    """``counts`` is (learned messages of the label, min_messages); none: the plain rule."""
    given = dict(zip(("label_messages", "min_messages"), counts, strict=False))
    assert worth_learning(50.0, label="spam", positive="spam", margin=30.0, **given) is expected
    assert worth_learning(-50.0, label="spam", positive="spam", margin=30.0, **given) is True


def thick_service(
    make_service: MakeService, make_settings: MakeSettings, margin: float
) -> SpamFilter:
    return make_service(
        make_settings(
            training_mode="thick",
            training_margin=margin,
            decision={"min_messages": 1},
            model={"top_tokens": 0},
        )
    )


def test_a_confident_right_answer_is_skipped_and_changes_nothing(
    make_service: MakeService, make_settings: MakeSettings, database_url: str
) -> None:
    service = thick_service(make_service, make_settings, margin=1.0)
    train(service, 20)
    assert service.classify(SPAMMY).log_odds > 1.0
    before = snapshot(database_url)

    result = service.learn(SPAMMY, "spam")

    assert result.outcome == Outcome.SKIPPED
    assert snapshot(database_url) == before
    assert service.forget(SPAMMY).outcome == Outcome.UNKNOWN


def test_a_correction_is_always_learned(
    make_service: MakeService, make_settings: MakeSettings
) -> None:
    service = thick_service(make_service, make_settings, margin=1.0)
    train(service, 20)
    assert service.classify(SPAMMY).log_odds > 1.0

    assert service.learn(SPAMMY, "ham").outcome == Outcome.LEARNED
    assert service.learn(SPAMMY, "spam").outcome == Outcome.RELABELLED


def test_an_uncertain_message_is_learned(
    make_service: MakeService, make_settings: MakeSettings
) -> None:
    service = thick_service(make_service, make_settings, margin=1e9)
    train(service, 5)
    assert service.learn(HAMMY, "ham").outcome == Outcome.LEARNED
    assert service.learn(HAMMY, "ham").outcome == Outcome.UNCHANGED


def test_an_untrained_model_learns_everything(
    make_service: MakeService, make_settings: MakeSettings
) -> None:
    service = thick_service(make_service, make_settings, margin=0.0)
    assert service.learn(SPAMMY, "spam").outcome == Outcome.LEARNED
    assert service.learn(HAMMY, "ham").outcome == Outcome.LEARNED


def test_thick_training_cannot_hold_verdicts_back_for_ever(
    make_service: MakeService, make_settings: MakeSettings
) -> None:
    """With a margin any message clears, only the first messages of a label would be learned;
    each label still learns until it has the min_messages that verdicts wait for."""
    service = make_service(
        make_settings(training_mode="thick", training_margin=1.0, decision={"min_messages": 10})
    )
    train(service, 15)

    spam, ham = service.classify(SPAMMY), service.classify(HAMMY)
    assert (spam.verdict, spam.reason) == ("spam", None)
    assert (ham.verdict, ham.reason) == ("ham", None)
    assert service.learn(SPAMMY, "spam").outcome == Outcome.SKIPPED


@pytest.mark.parametrize(
    ("novelty", "novelty_margin", "expected"),
    [
        (0.0, 0.25, False),  # nothing new: the plain rule, right by the margin, skip
        (0.24, 0.25, False),
        (0.25, 0.25, True),  # a quarter of its tokens new: learn however confident
        (1.0, 0.25, True),
        (1.0, 0.0, False),  # off
    ],
)
def test_a_message_new_enough_is_learned_however_confident(
    novelty: float, novelty_margin: float, expected: bool
) -> None:
    assert (
        worth_learning(
            50.0,
            label="spam",
            positive="spam",
            margin=30.0,
            novelty=novelty,
            novelty_margin=novelty_margin,
        )
        is expected
    )
    # Wrong or close calls are learned whatever their novelty.
    assert worth_learning(
        -50.0, label="spam", positive="spam", margin=30.0, novelty=0.0, novelty_margin=0.25
    )
    assert worth_learning(
        10.0, label="spam", positive="spam", margin=30.0, novelty=0.0, novelty_margin=0.25
    )


def test_a_confident_message_with_new_tokens_is_learned_with_the_novelty_rule(
    make_service: MakeService, make_settings: MakeSettings
) -> None:
    # SPAMMY's words were never learned; its sender and subject words are mostly new.
    novel_spam = make_message(
        "Claim your lottery prize now",
        "Urgent: claim your cash prize today, zorblax quuxfoo wibblenet frobnitz.\n",
        sender="Prize Desk <desk@winners.example>",
    )
    for novelty, outcome in ((0.0, Outcome.SKIPPED), (0.25, Outcome.LEARNED)):
        service = make_service(
            make_settings(
                training_mode="thick",
                training_margin=1.0,
                training_novelty=novelty,
                decision={"min_messages": 1},
                model={"top_tokens": 0},
            )
        )
        train(service, 20)
        service.learn(SPAMMY, "spam")
        assert service.classify(novel_spam).log_odds > 1.0
        assert service.learn(novel_spam, "spam").outcome == outcome
        # Learned once, it is known: the same message again is unchanged or skipped.
        assert service.learn(novel_spam, "spam").outcome in (Outcome.UNCHANGED, Outcome.SKIPPED)
