"""Expiry through the service: on demand, per user or all, after learning, and the counts
staying the sums over the rows through any mix of learn, expire, relabel and forget."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

import pytest
import sqlalchemy as sa

from app.service import Outcome, SpamFilter
from app.service import upkeep as upkeep_module
from app.settings.schema import Settings
from app.storage.engine import make_engine
from app.storage.tables import token_count
from tests.builders import ham_message, spam_message
from tests.storage.test_expiry import assert_sums

MakeService = Callable[..., SpamFilter]
MakeSettings = Callable[..., Settings]


def message(rng: random.Random, serial: int) -> tuple[bytes, str]:
    if rng.random() < 0.5:
        return spam_message(rng, serial), "spam"
    return ham_message(rng, serial), "ham"


def age_rows(url: str, rng: random.Random, today: int) -> None:
    """Spread the rows' seen days over the last 60 days."""
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            ids = list(conn.execute(sa.select(token_count.c.token_id)).scalars())
            for token_id in rng.sample(ids, len(ids) // 3):
                conn.execute(
                    sa.update(token_count)
                    .where(token_count.c.token_id == token_id)
                    .values(seen_day=today - rng.randrange(60))
                )
    finally:
        engine.dispose()


@pytest.mark.parametrize("seed", [1, 2])
def test_random_learn_expire_relabel_forget_keep_the_sums(
    make_service: MakeService, make_settings: MakeSettings, database_url: str, seed: int
) -> None:
    rng = random.Random(seed)
    service = make_service(make_settings())
    learned: dict[bytes, str] = {}
    today = upkeep_module.today()
    for step in range(90):
        action = rng.choice(("learn", "learn", "learn", "relabel", "forget", "expire", "age"))
        user = rng.choice((None, "alice"))
        if action == "learn" or not learned:
            raw, label = message(rng, step)
            assert service.learn(raw, label, user=user).outcome is Outcome.LEARNED
            learned[raw] = label
        elif action == "relabel":
            raw = rng.choice(sorted(learned))
            learned[raw] = "ham" if learned[raw] == "spam" else "spam"
            service.learn(raw, learned[raw], user=user)  # relabels where it was learned
        elif action == "forget":
            raw = rng.choice(sorted(learned))
            service.forget(raw, user=user)
        elif action == "age":
            age_rows(database_url, rng, today)
        else:
            cap = rng.randrange(5, 60)
            reports = service.expire(every=True, max_tokens=cap, max_age_days=rng.randrange(40))
            assert all(report.after <= cap for report in reports)
        assert_sums(database_url)


def test_expire_for_a_user_or_all_and_the_dry_run(
    make_service: MakeService, make_settings: MakeSettings
) -> None:
    rng = random.Random(3)
    service = make_service(make_settings(users={"train_site": False}))
    for serial in range(6):
        raw, label = message(rng, serial)
        service.learn(raw, label)
        service.learn(raw, label, user="Bob")
    site, bob = service.stats().vocabulary, service.stats("bob").vocabulary

    [planned] = service.expire(user="bob", dry_run=True, max_tokens=10)
    assert (planned.scope, planned.vocabulary, planned.by_size) == (
        "global/user:bob",
        bob,
        bob - 10,
    )
    assert service.stats("bob").vocabulary == bob

    reports = service.expire(every=True, max_tokens=10)
    assert [(r.scope, r.vocabulary, r.after) for r in reports] == [
        ("global", site, 10),
        ("global/user:bob", bob, 10),
    ]
    assert service.stats().vocabulary == service.stats("bob").vocabulary == 10


def test_a_learn_past_the_cap_and_its_slack_expires_the_scope(
    make_service: MakeService, make_settings: MakeSettings, database_url: str
) -> None:
    rng = random.Random(4)
    service = make_service(make_settings(max_tokens=40))
    vocabularies = []
    for serial in range(15):
        raw, label = message(rng, serial)
        service.learn(raw, label)
        vocabularies.append(service.stats().vocabulary)
    assert max(vocabularies) <= 40 * (1 + upkeep_module.CAP_SLACK)
    assert 40 in vocabularies  # expired back down to the cap at least once
    assert_sums(database_url)


def test_without_a_cap_or_age_a_learn_never_expires(
    make_service: MakeService, make_settings: MakeSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("expiry ran")

    monkeypatch.setattr(upkeep_module.Upkeep, "_expire", refuse)
    rng = random.Random(5)
    service = make_service(make_settings(max_tokens=0, max_token_age_days=0))
    for serial in range(5):
        service.learn(*message(rng, serial))


def test_the_age_rule_runs_once_a_day_per_scope_after_learns(
    make_service: MakeService, make_settings: MakeSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[str] = []
    real = upkeep_module.Upkeep._expire

    def counted(self: upkeep_module.Upkeep, scope: str, *args: object, **kwargs: object) -> object:
        runs.append(scope)
        return real(self, scope, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(upkeep_module.Upkeep, "_expire", counted)
    day = [1000]
    monkeypatch.setattr(upkeep_module, "today", lambda: day[0])
    rng = random.Random(6)
    service = make_service(make_settings(max_token_age_days=30))
    for serial in range(3):
        service.learn(*message(rng, serial), user="carol")
    assert sorted(runs) == ["global", "global/user:carol"]
    day[0] += 1
    service.learn(*message(rng, 10))
    assert runs[2:] == ["global"]


def test_a_failing_expiry_is_logged_and_the_learn_still_succeeds(
    make_service: MakeService,
    make_settings: MakeSettings,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(upkeep_module.Upkeep, "_expire", broken)
    service = make_service(make_settings(max_token_age_days=30))
    raw, label = message(random.Random(7), 0)
    with caplog.at_level(logging.ERROR, logger="app.service.upkeep"):
        assert service.learn(raw, label).outcome is Outcome.LEARNED
    assert "expiry of scope 'global' failed" in caplog.text
    assert service.stats().labels[label].messages == 1


def test_the_cap_and_age_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPAMFILTER_MAX_TOKENS", "123")
    monkeypatch.setenv("SPAMFILTER_MAX_TOKEN_AGE_DAYS", "45")
    settings = Settings(_env_file=None)
    assert (settings.max_tokens, settings.max_token_age_days) == (123, 45)


def test_statistics_are_gathered_each_time_a_scope_doubles_from_the_threshold_on(
    make_service: MakeService, make_settings: MakeSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule on its own: first sight is the baseline, then every doubling of a scope's
    vocabulary (from STATISTICS_FROM tokens) gathers statistics once, whichever scope."""
    service = make_service(make_settings())
    upkeep = service._trainer._upkeep  # the service's own
    gathered: list[int] = []
    monkeypatch.setattr(upkeep._store, "refresh_statistics", lambda: gathered.append(1))
    start = upkeep_module.STATISTICS_FROM
    steps = [
        ({"a": 300}, 0),  # first sight: the baseline
        ({"a": 900}, 0),  # tripled, but still below the threshold
        ({"a": start}, 1),
        ({"a": 2 * start - 1}, 0),
        ({"b": 50 * start}, 0),  # another scope's first sight
        ({"a": 2 * start, "b": 50 * start + 5}, 1),
        ({"b": 100 * start}, 1),
        ({}, 0),
    ]
    for grown, expected in steps:
        before = len(gathered)
        upkeep.after_learn(grown)
        assert len(gathered) - before == expected, grown


def test_a_growing_model_gets_its_statistics_without_waiting_for_autovacuum(
    make_service: MakeService, make_settings: MakeSettings, database_url: str
) -> None:
    """On PostgreSQL the planner has statistics of the count table once a new model passes
    STATISTICS_FROM tokens (reltuples is -1 until a table is first analysed); on SQLite
    gathering them is nothing at all."""
    service = make_service(make_settings(training_mode="everything"))
    rng = random.Random(8)
    serial = 0
    while service.stats().vocabulary < upkeep_module.STATISTICS_FROM:
        service.learn(*message(rng, serial))
        serial += 1
    if not database_url.startswith("postgresql"):
        return
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            tuples = conn.exec_driver_sql(
                "SELECT reltuples FROM pg_class WHERE oid = 'token_count'::regclass"
            ).scalar_one()
    finally:
        engine.dispose()
    assert tuples >= upkeep_module.STATISTICS_FROM


def test_failing_to_gather_statistics_is_logged_and_the_learn_still_succeeds(
    make_service: MakeService,
    make_settings: MakeSettings,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(upkeep_module, "STATISTICS_FROM", 1)
    service = make_service(make_settings())

    def broken() -> None:
        raise RuntimeError("lock timeout")

    monkeypatch.setattr(service._trainer._upkeep._store, "refresh_statistics", broken)
    rng = random.Random(9)
    with caplog.at_level(logging.ERROR, logger="app.service.upkeep"):
        for serial in range(3):
            assert service.learn(*message(rng, serial)).outcome is Outcome.LEARNED
    assert "gathering table statistics failed" in caplog.text
