"""Per-user models on a real database: the fallback blend, training, forgetting, refusals."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
import sqlalchemy as sa

from app.domain.verdict import Verdict
from app.errors import InvalidUser
from app.service import Outcome, SpamFilter
from app.settings.schema import Settings
from tests.builders import ham_message, spam_message
from tests.service.test_learn_forget import corpus, learn_all
from tests.storage.snapshot import assert_consistent, snapshot

MakeService = Callable[..., SpamFilter]
MakeSettings = Callable[..., Settings]


def probes(seed: int, count: int = 6) -> list[bytes]:
    rng = random.Random(seed)
    return [
        (spam_message if serial % 2 else ham_message)(rng, 5000 + serial) for serial in range(count)
    ]


def test_a_new_user_is_judged_as_the_site_wide_model(service: SpamFilter) -> None:
    learn_all(service, corpus(seed=21, size=40))
    for raw in probes(22):
        site, user = service.classify(raw), service.classify(raw, user="newcomer@example.org")
        assert user.verdict == site.verdict
        assert user.log_odds == pytest.approx(site.log_odds, rel=1e-9, abs=1e-9)
        assert [c.token for c in user.clues] == [c.token for c in site.clues]
    assert service.stats(user="newcomer@example.org").vocabulary == 0


def test_feedback_for_a_user_trains_theirs_and_the_site_wide_model(
    service: SpamFilter, database_url: str
) -> None:
    messages = corpus(seed=23, size=12)
    outcomes = [service.learn(raw, label, user="Alice@Example.org") for raw, label in messages]
    assert {o.outcome for o in outcomes} == {Outcome.LEARNED}
    alice, site = service.stats(user="alice@example.org"), service.stats()
    assert alice.user == "alice@example.org" and site.user is None
    assert alice.scope == "global/user:alice@example.org"
    assert alice.labels == site.labels and alice.vocabulary == site.vocabulary > 0

    raw, label = messages[0]
    assert service.learn(raw, label, user="alice@example.org").outcome is Outcome.UNCHANGED
    assert service.forget(raw, user="ALICE@example.org").outcome is Outcome.FORGOTTEN
    assert service.forget(raw).outcome is Outcome.UNKNOWN  # gone from the site-wide model too
    assert service.stats(user="alice@example.org").labels[label].messages == sum(
        1 for _, lb in messages[1:] if lb == label
    )
    assert_consistent(database_url)


def test_without_site_training_a_users_feedback_stays_theirs(
    make_settings: MakeSettings, make_service: MakeService, database_url: str
) -> None:
    service = make_service(make_settings(users={"train_site": False}))
    learn_all(service, corpus(seed=24, size=10))
    before = snapshot(database_url)
    raw, label = corpus(seed=25, size=1, first_serial=900)[0]
    assert service.learn(raw, label, user="bob").outcome is Outcome.LEARNED
    assert service.stats(user="bob").labels[label].messages == 1
    assert service.forget(raw, user="carol").outcome is Outcome.UNKNOWN
    assert service.forget(raw, user="bob").outcome is Outcome.FORGOTTEN
    after = snapshot(database_url)
    for table in ("token_count", "learned_message"):
        assert after[table] == before[table], table
    # bob's scope and total rows stay (made by his first learn), at zero
    assert all(s.messages == s.tokens == 0 for s in service.stats(user="bob").labels.values())


def test_a_users_own_mail_outweighs_the_site_wide_model(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    """The site learns one set of words as spam; this user receives them as ham."""
    service = make_service(make_settings(users={"train_site": False, "fallback_strength": 5}))
    rng = random.Random(26)
    site = [(spam_message(rng, n), "spam") for n in range(30)]
    site += [(ham_message(rng, 100 + n), "ham") for n in range(30)]
    learn_all(service, site)
    # For dave, the spammy words are wanted mail: he learns 60 of them as ham.
    for n in range(60):
        service.learn(spam_message(rng, 200 + n), "ham", user="dave")
    for n in range(30):
        service.learn(ham_message(rng, 300 + n), "spam", user="dave")
    probe = spam_message(rng, 999)
    assert service.classify(probe).verdict is Verdict.SPAM
    assert service.classify(probe, user="dave").log_odds < 0
    assert service.classify(probe, user="erin").verdict is Verdict.SPAM


def test_separate_models_when_the_fallback_has_no_weight(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    service = make_service(make_settings(users={"fallback_strength": 0}))
    learn_all(service, corpus(seed=27, size=40))
    result = service.classify(probes(28)[1], user="frank")
    assert result.verdict is Verdict.UNSURE and result.log_odds == 0.0


@pytest.mark.parametrize("name", ["a b", "x/y", "nul\x00", "z" * 151])
def test_names_that_cannot_name_a_model_are_refused(service: SpamFilter, name: str) -> None:
    raw = probes(29, 1)[0]
    for call in (
        lambda: service.classify(raw, user=name),
        lambda: service.learn(raw, "ham", user=name),
        lambda: service.forget(raw, user=name),
        lambda: service.stats(user=name),
    ):
        with pytest.raises(InvalidUser):
            call()


@pytest.mark.parametrize("blank", [None, "", "  ", "<>"])
def test_no_user_is_the_site_wide_model(service: SpamFilter, blank: str | None) -> None:
    raw, label = corpus(seed=30, size=1)[0]
    assert service.learn(raw, label, user=blank).outcome is Outcome.LEARNED
    assert service.stats().labels[label].messages == 1
    assert service.stats(user=blank).scope == "global"


def test_thick_training_judges_a_user_with_the_blend(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    """Under thick training, a user's learn is skipped when the blend already gets it right
    by the margin, while the site-wide model judges its own copy on its own."""
    service = make_service(make_settings(training_mode="thick", training_margin=5.0))
    learn_all(service, corpus(seed=31, size=60))
    raw, label = corpus(seed=32, size=1, first_serial=777)[0]
    site_before = service.stats().labels[label].messages
    outcome = service.learn(raw, label, user="gina").outcome
    site_after = service.stats().labels[label].messages
    assert outcome is Outcome.SKIPPED
    assert site_after == site_before  # the site-wide model is as sure, so it skips too


def test_clues_carry_their_learned_counts_over_the_models_that_judged(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    service = make_service(make_settings(users={"train_site": False}))
    rng = random.Random(33)
    learn_all(service, [(spam_message(rng, n), "spam") for n in range(6)])
    learn_all(service, [(ham_message(rng, 50 + n), "ham") for n in range(6)])
    mine = spam_message(rng, 99)
    service.learn(mine, "spam", user="hal")
    site, user = service.classify(mine), service.classify(mine, user="hal")
    assert set(site.clue_counts) == {clue.token for clue in site.clues}
    assert set(user.clue_counts) == {clue.token for clue in user.clues}
    shared = set(site.clue_counts) & set(user.clue_counts)
    assert shared
    for token in shared:  # every token of the message is in hal's model once, as spam
        per = site.clue_counts[token]
        assert user.clue_counts[token] == {"ham": per["ham"], "spam": per["spam"] + 1}


def test_a_trained_users_own_model_overrules_the_blend_towards_ham(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    """Once the user's own model gives verdicts, the served log-odds are the lower of the
    blend's and the own model's: the site cannot condemn what the user's mail calls ham."""
    blended = make_service(make_settings(users={"train_site": False, "fallback_strength": 1e6}))
    rng = random.Random(34)
    learn_all(blended, [(spam_message(rng, n), "spam") for n in range(30)])
    learn_all(blended, [(ham_message(rng, 100 + n), "ham") for n in range(30)])
    for n in range(12):  # ivy receives these words as ham; her spam is the usual ham words
        blended.learn(spam_message(rng, 200 + n), "ham", user="ivy")
        blended.learn(ham_message(rng, 300 + n), "spam", user="ivy")
    alone = make_service(make_settings(users={"train_site": False, "fallback_strength": 0}))
    probe = spam_message(rng, 999)
    site = blended.classify(probe)
    own = alone.classify(probe, user="ivy")
    served = blended.classify(probe, user="ivy")
    assert site.log_odds > 0 > own.log_odds
    assert served.log_odds == pytest.approx(own.log_odds)
    # before her model gives verdicts of its own, the blend (here: the site) decides
    newcomer = blended.classify(probe, user="jay")
    assert newcomer.log_odds == pytest.approx(site.log_odds, rel=1e-6)


def test_a_users_classify_reads_both_models_in_as_many_statements_as_the_sites(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    """A user's judgement reads its own model and the site-wide one together: one query for
    both models' totals, one for the counts of the tokens either cache lacks. Counted cold
    (nothing held) and warm; before the two were read together a user's classify ran two
    statements more than the site's cold (the totals, and the counts) and one more warm."""
    service = make_service(make_settings(users={"train_site": False}))
    learn_all(service, corpus(seed=31, size=30))
    rng = random.Random(32)
    for n in range(6):
        service.learn(spam_message(rng, 700 + n), "ham", user="kim")
        service.learn(ham_message(rng, 710 + n), "spam", user="kim")
    engine = service._store._engine
    seen: list[str] = []

    @sa.event.listens_for(engine, "before_cursor_execute")
    def _note(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        seen.append(statement)

    def ran(raw: bytes, user: str | None) -> list[str]:
        seen.clear()
        service.classify(raw, user=user)
        return list(seen)

    messages = probes(33, 9)
    ran(messages.pop(), "kim")  # both models' ham score histograms held from now on
    for raw, other in zip(messages[::2], messages[1::2], strict=True):
        kim_cold, site_cold = ran(raw, "kim"), ran(other, None)  # tokens neither cache holds
        assert len(kim_cold) == len(site_cold)
        assert sum("label_total" in s for s in kim_cold) == 1
        (counted,) = [s for s in kim_cold if "token_count" in s]
        assert "UNION ALL" in counted  # both models' counts in one query
        site_warm, kim_warm = ran(raw, None), ran(raw, "kim")
        assert len(kim_warm) == len(site_warm)
        assert not any("token_count" in s for s in kim_warm)  # every token held, both models
