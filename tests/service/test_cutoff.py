"""The calibrated spam cut-off on a real database: ham scored before learning moves it."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from app.domain.cutoff import score_bin
from app.service import SpamFilter
from app.settings.schema import Settings
from tests.builders import ham_message, spam_message
from tests.storage.snapshot import snapshot

MakeService = Callable[..., SpamFilter]
MakeSettings = Callable[..., Settings]

# Messages of spam words learned as ham: ham that scores high before it is learned.
SPAMMY_HAM = [
    spam_message(random.Random(100 + serial), 700 + serial, length=3) for serial in range(6)
]


def calibrated(
    make_settings: MakeSettings, model: dict[str, object] | None = None, **decision: object
) -> Settings:
    return make_settings(
        model=model or {},
        decision={
            "calibrate": True,
            "spam_log_odds": 2.0,
            "spam_log_odds_max": 30.0,
            "ham_loss_pct": 10.0,
            "min_ham": 20,
            "min_messages": 1,
            **decision,
        },
    )


def train(service: SpamFilter, per_label: int, user: str | None = None) -> None:
    rng = random.Random(5)
    for serial in range(per_label):
        service.learn(spam_message(rng, 2 * serial), "spam", user=user)
        service.learn(ham_message(rng, 2 * serial + 1), "ham", user=user)


def learn_spammy(service: SpamFilter, label: str) -> list[float]:
    """Learn SPAMMY_HAM as ``label``; their log-odds just before each was learned."""
    scores = []
    for raw in SPAMMY_HAM:
        scores.append(service.classify(raw).log_odds)
        service.learn(raw, label)
    return scores


def test_the_ceiling_until_min_ham_have_scored(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    service = make_service(calibrated(make_settings))
    train(service, per_label=15)
    stats = service.stats()
    # The first ham cannot be scored: a label must have a message first.
    assert stats.ham_scored == 14
    assert stats.spam_cutoff == 30.0
    rng = random.Random(9)
    result = service.classify(spam_message(rng, 1000))
    assert result.spam_cutoff == 30.0
    assert (result.verdict == "spam") == (result.log_odds > 30.0)


def test_ham_that_scores_low_brings_the_cut_off_to_the_floor(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    service = make_service(calibrated(make_settings))
    train(service, per_label=30)
    assert service.stats().ham_scored == 29
    rng = random.Random(9)
    result = service.classify(spam_message(rng, 1000))
    assert result.spam_cutoff == 2.0 == service.stats().spam_cutoff
    assert result.log_odds > 2.0 and result.verdict == "spam"


def test_spammy_ham_raises_the_cut_off_above_its_scores(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    # 10 % of the ham may lie above the cut-off: 30 plain ham and 6 spammy ones, scored
    # high before each is learned, leave at most 3 above it.
    service = make_service(calibrated(make_settings))
    train(service, per_label=30)
    scores = learn_spammy(service, "ham")
    assert service.stats().ham_scored == 35
    high = sorted(scores)
    assert high[0] > 2.5, "the test needs ham that scores well above the floor"
    cut = service.stats().spam_cutoff
    assert sum(1 for score in scores if score > cut) <= 3
    # The bin of the fourth-highest score is below the cut-off.
    assert cut >= score_bin(high[-4]) * 0.5
    probe = service.classify(SPAMMY_HAM[0])
    assert probe.spam_cutoff == cut


def test_a_ham_message_is_scored_once_and_forgetting_or_relabelling_takes_it_out(
    make_settings: MakeSettings, make_service: MakeService, database_url: str
) -> None:
    service = make_service(calibrated(make_settings))
    train(service, per_label=5)
    before = service.stats().ham_scored
    raw = SPAMMY_HAM[0]
    service.learn(raw, "ham")
    service.learn(raw, "ham")
    assert service.stats().ham_scored == before + 1
    # Relabelled: it was spam after all, so its score is no ham score.
    service.learn(raw, "spam")
    assert service.stats().ham_scored == before
    # A message first learned as spam is not new ham when relabelled.
    service.learn(raw, "ham")
    assert service.stats().ham_scored == before
    # Learned as new ham and forgotten: the database is as it was.
    other = SPAMMY_HAM[1]
    held = snapshot(database_url)
    service.learn(other, "ham")
    assert service.stats().ham_scored == before + 1
    service.forget(other)
    assert service.stats().ham_scored == before
    assert snapshot(database_url) == held


# A site's wanted mail of two kinds and its junk of two.
CLASSES = {"classes": "ham,spam,newsletter,phishing", "junk_classes": "spam,phishing"}


@pytest.mark.parametrize("mode", ["everything", "thick"])
def test_every_not_junk_class_scores_as_ham_and_no_junk_class_does(
    make_settings: MakeSettings, make_service: MakeService, mode: str
) -> None:
    # The cut-off weighs junk against not-junk: it is chosen from all the mail the site
    # wants, whatever class that mail is learned as.
    settings = calibrated(make_settings, CLASSES).model_copy(update={"training_mode": mode})
    service = make_service(settings)
    train(service, per_label=5)
    before = service.stats().ham_scored
    assert before == 4
    service.learn(SPAMMY_HAM[0], "newsletter")
    assert service.stats().ham_scored == before + 1
    service.learn(SPAMMY_HAM[1], "phishing")
    assert service.stats().ham_scored == before + 1
    # Relabelled as junk, or forgotten, its score is taken out again.
    service.learn(SPAMMY_HAM[0], "phishing")
    assert service.stats().ham_scored == before
    service.learn(SPAMMY_HAM[2], "newsletter")
    service.forget(SPAMMY_HAM[2])
    assert service.stats().ham_scored == before


def test_spammy_mail_of_a_not_junk_class_raises_the_cut_off(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    # As in test_spammy_ham_raises_the_cut_off_above_its_scores, with the spammy mail
    # learned as newsletters: at most 3 of the 35 not-junk scores lie above the cut-off.
    service = make_service(calibrated(make_settings, CLASSES))
    train(service, per_label=30)
    scores = learn_spammy(service, "newsletter")
    assert service.stats().ham_scored == 35
    assert sorted(scores)[0] > 2.5, "the test needs mail that scores well above the floor"
    cut = service.stats().spam_cutoff
    assert cut > 2.0
    assert sum(1 for score in scores if score > cut) <= 3


def test_thick_training_scores_skipped_ham_too(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    settings = calibrated(make_settings).model_copy(update={"training_mode": "thick"})
    service = make_service(settings)
    train(service, per_label=40)
    outcomes = [service.learn(ham_message(random.Random(3), 500 + n), "ham") for n in range(10)]
    assert any(result.outcome == "skipped" for result in outcomes)
    assert service.stats().ham_scored == 40 - 1 + 10


def test_without_calibration_the_cut_off_is_fixed(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    service = make_service(calibrated(make_settings, calibrate=False))
    train(service, per_label=30)
    assert service.stats().ham_scored == 0
    assert service.stats().spam_cutoff == 2.0
    assert service.classify(SPAMMY_HAM[0]).spam_cutoff == 2.0


def test_a_user_is_judged_by_the_site_wide_ham_until_their_own_suffices(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    service = make_service(calibrated(make_settings))
    train(service, per_label=30)
    assert service.stats().spam_cutoff == 2.0
    # Alice's model has scored no ham: the site-wide model's cut-off applies.
    assert service.stats(user="alice").spam_cutoff == 2.0
    assert service.classify(SPAMMY_HAM[0], user="alice").spam_cutoff == 2.0
    # Her own spammy ham, 6 of 26 scored, lies above 10 %: her cut-off rises, the site's
    # model also learned them, but from 36 it keeps its own.
    rng = random.Random(77)
    for serial in range(20):
        service.learn(ham_message(rng, 900 + serial), "ham", user="alice")
    for raw in SPAMMY_HAM:
        service.learn(raw, "ham", user="alice")
    alice = service.stats(user="alice")
    assert alice.ham_scored == 26
    assert alice.spam_cutoff > 2.0
    assert service.classify(SPAMMY_HAM[0], user="alice").spam_cutoff == alice.spam_cutoff
    # Deleting her model deletes her ham scores with it.
    service.delete_user("alice")
    assert service.stats(user="alice").ham_scored == 0


@pytest.mark.parametrize("field", ["ham_scored", "spam_cutoff"])
def test_stats_document_carries_the_cut_off(
    make_settings: MakeSettings, make_service: MakeService, field: str
) -> None:
    from app.service.accounts import stats_document

    service = make_service(calibrated(make_settings))
    train(service, per_label=3)
    assert field in stats_document(service.stats())


def test_without_the_fallback_a_user_is_judged_by_their_own_ham_alone(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    settings = calibrated(make_settings).model_copy(
        update={"users": make_settings().users.model_copy(update={"fallback_strength": 0})}
    )
    service = make_service(settings)
    train(service, per_label=30)
    assert service.stats().spam_cutoff == 2.0
    assert service.stats(user="alice").spam_cutoff == 30.0
