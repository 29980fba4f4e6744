"""learn / forget on a real database: exact restoration, idempotence, relabelling."""

from __future__ import annotations

import random
from collections.abc import Callable

import sqlalchemy as sa

from app.service import Outcome, SpamFilter
from app.settings.schema import Settings
from app.storage.codec import decode_bag, encode_wide
from app.storage.engine import make_engine
from app.storage.tables import learned_message, token_count
from tests.builders import ham_message, make_message, spam_message
from tests.storage.snapshot import as_dicts, assert_consistent, snapshot

MakeService = Callable[..., SpamFilter]
MakeSettings = Callable[..., Settings]
Corpus = list[tuple[bytes, str]]
COUNT_COLUMNS = {
    "occurrences",
    "messages",
    "token_messages",
    "vocabulary",
    "ham_occurrences",
    "ham_messages",
    "spam_occurrences",
    "spam_messages",
}


def corpus(seed: int, size: int, first_serial: int = 0) -> Corpus:
    """``size`` distinct messages, about half spam, sharing most of their words."""
    rng = random.Random(seed)
    messages = []
    for serial in range(first_serial, first_serial + size):
        if rng.random() < 0.5:
            messages.append((spam_message(rng, serial), "spam"))
        else:
            messages.append((ham_message(rng, serial), "ham"))
    return messages


def learn_all(service: SpamFilter, messages: Corpus) -> list[Outcome]:
    return [service.learn(raw, label).outcome for raw, label in messages]


def other(label: str) -> str:
    return "ham" if label == "spam" else "spam"


def test_learn_then_forget_restores_every_count(service: SpamFilter, database_url: str) -> None:
    rng = random.Random(7)
    learn_all(service, corpus(seed=1, size=20))
    before = snapshot(database_url)

    extra = corpus(seed=2, size=80, first_serial=1000)
    rng.shuffle(extra)
    assert set(learn_all(service, extra)) == {Outcome.LEARNED}
    for raw, label in rng.sample(extra, 20):
        assert service.learn(raw, other(label)).outcome == Outcome.RELABELLED
    assert_consistent(database_url)
    assert snapshot(database_url) != before

    rng.shuffle(extra)
    assert {service.forget(raw).outcome for raw, _ in extra} == {Outcome.FORGOTTEN}
    assert snapshot(database_url) == before
    assert {service.forget(raw).outcome for raw, _ in extra} == {Outcome.UNKNOWN}
    assert snapshot(database_url) == before


def test_forgetting_everything_leaves_no_counts(service: SpamFilter, database_url: str) -> None:
    messages = corpus(seed=3, size=40)
    learn_all(service, messages)
    for raw, _ in reversed(messages):
        service.forget(raw)

    stats = service.stats()
    assert stats.vocabulary == 0
    assert {label: (s.messages, s.tokens) for label, s in stats.labels.items()} == {
        "ham": (0, 0),
        "spam": (0, 0),
    }
    snap = assert_consistent(database_url)
    assert snap["token_count"] == snap["learned_message"] == []
    assert all(row[2:] == (0, 0, 0) for row in snap["label_total"])


def test_learning_twice_equals_learning_once(
    make_settings: MakeSettings,
    make_service: MakeService,
    database_factory: Callable[[], str],
) -> None:
    once_url, twice_url = database_factory(), database_factory()
    once = make_service(make_settings(database_url=once_url))
    twice = make_service(make_settings(database_url=twice_url))
    messages = corpus(seed=4, size=50)

    assert set(learn_all(once, messages)) == {Outcome.LEARNED}
    doubled = messages + messages
    random.Random(5).shuffle(doubled)
    outcomes = learn_all(twice, doubled)
    assert outcomes.count(Outcome.LEARNED) == len(messages)
    assert outcomes.count(Outcome.UNCHANGED) == len(messages)

    # Scored in another order, the ham scores differ; the counts may not.
    assert snapshot(twice_url, timestamps=False, scores=False) == snapshot(
        once_url, timestamps=False, scores=False
    )


def test_a_relabel_equals_learning_the_other_label_alone(
    make_settings: MakeSettings,
    make_service: MakeService,
    database_factory: Callable[[], str],
) -> None:
    relabelled_url, direct_url = database_factory(), database_factory()
    relabelled = make_service(make_settings(database_url=relabelled_url))
    direct = make_service(make_settings(database_url=direct_url))
    baseline = corpus(seed=6, size=20)
    moved = corpus(seed=7, size=30, first_serial=500)
    for service in (relabelled, direct):
        learn_all(service, baseline)

    learn_all(relabelled, moved)
    for raw, label in moved:
        assert relabelled.learn(raw, other(label)).outcome == Outcome.RELABELLED
    for raw, label in moved[::3]:  # there and back again ends where it started
        assert relabelled.learn(raw, label).outcome == Outcome.RELABELLED
        assert relabelled.learn(raw, other(label)).outcome == Outcome.RELABELLED
    learn_all(direct, [(raw, other(label)) for raw, label in moved])

    assert_consistent(relabelled_url)
    assert snapshot(relabelled_url, timestamps=False, scores=False) == snapshot(
        direct_url, timestamps=False, scores=False
    )


def test_forget_after_the_tokenizer_changed_still_restores_counts(
    service: SpamFilter,
    make_settings: MakeSettings,
    make_service: MakeService,
    database_url: str,
) -> None:
    learn_all(service, corpus(seed=8, size=20))
    before = snapshot(database_url)
    extra = corpus(seed=9, size=30, first_serial=300)
    learn_all(service, extra)

    retuned = make_service(make_settings(tokenizer={"max_tokens": 12}))
    raw, label = extra[0]
    assert retuned.analyse(raw).tokens != service.analyse(raw).tokens  # the change matters

    assert retuned.learn(raw, other(label)).outcome == Outcome.RELABELLED
    assert retuned.learn(raw, label).outcome == Outcome.RELABELLED
    assert_consistent(database_url)
    assert {retuned.forget(raw).outcome for raw, _ in extra} == {Outcome.FORGOTTEN}
    assert snapshot(database_url) == before


def test_a_message_with_thousands_of_distinct_tokens(
    make_service: Callable[..., SpamFilter],
    make_settings: Callable[..., Settings],
    database_url: str,
) -> None:
    """Thousands of rows in one learn: every upsert, decrement and id list must cover them.

    Every token scores here (top_tokens=0): the classify check below reads all 4,500 counts
    back, which the default 50-token selection would not need.
    """
    service = make_service(make_settings(model={"top_tokens": 0}))
    learn_all(service, corpus(seed=10, size=10))
    before = snapshot(database_url)
    words = " ".join(f"word{i:04d}" for i in range(4500))
    raw = make_message("A very long newsletter", words + "\n")
    distinct = len(service.analyse(raw).tokens)
    assert distinct > 4500

    assert service.learn(raw, "spam").outcome == Outcome.LEARNED
    assert service.stats().vocabulary >= distinct
    snap = assert_consistent(database_url)
    assert len(snap["token_count"]) >= distinct
    assert service.classify(raw).log_odds > 0

    assert service.learn(raw, "ham").outcome == Outcome.RELABELLED
    assert_consistent(database_url)
    assert service.forget(raw).outcome == Outcome.FORGOTTEN
    assert snapshot(database_url) == before


def test_forget_never_drives_a_count_below_zero(service: SpamFilter, database_url: str) -> None:
    """Counts that drifted below what a record says (e.g. an old bug) clamp at zero."""
    rng = random.Random(11)
    raw = spam_message(rng, 1)
    learn_all(service, [(raw, "spam"), (ham_message(rng, 2), "ham")])
    engine = make_engine(database_url)
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.update(token_count)
                .where(token_count.c.spam_occurrences > 0)
                .values(spam_occurrences=token_count.c.spam_occurrences - 1)
            )
    finally:
        engine.dispose()

    assert service.forget(raw).outcome == Outcome.FORGOTTEN
    snap = snapshot(database_url)
    for name in ("token_count", "label_total", "model_scope"):
        for row in as_dicts(snap, name):
            assert all(row[c] >= 0 for c in COUNT_COLUMNS & row.keys()), (name, row)
    for row in as_dicts(snap, "token_count"):
        assert (row["spam_occurrences"], row["spam_messages"]) == (0, 0), row
    assert service.stats().labels["spam"].messages == 0


def _stored_bags(database_url: str) -> list[tuple[int, bytes]]:
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.select(learned_message.c.token_count, learned_message.c.tokens))
            return [(count, bytes(blob)) for count, blob in rows]
    finally:
        engine.dispose()


def test_records_are_stored_narrow_and_wide_ones_are_still_forgotten_exactly(
    service: SpamFilter, database_url: str
) -> None:
    """A learned message's bag is stored with one-byte counts (``codec.encode_bag``); a
    record stored before, in the wide layout, still relabels and forgets to the count."""
    learn_all(service, corpus(seed=4, size=10))
    before = snapshot(database_url)
    extra = corpus(seed=5, size=30, first_serial=2000)
    assert set(learn_all(service, extra)) == {Outcome.LEARNED}
    stored = _stored_bags(database_url)
    assert stored and all(len(blob) == 9 * n + 1 and blob[-1] == 1 for n, blob in stored)

    learned = snapshot(database_url)
    engine = make_engine(database_url)
    try:
        with engine.begin() as conn:
            for digest, blob in conn.execute(
                sa.select(learned_message.c.digest, learned_message.c.tokens)
            ).all():
                conn.execute(
                    sa.update(learned_message)
                    .where(learned_message.c.digest == digest)
                    .values(tokens=encode_wide(decode_bag(bytes(blob))))
                )
    finally:
        engine.dispose()
    assert all(len(blob) == 12 * n for n, blob in _stored_bags(database_url))
    assert snapshot(database_url) == learned  # the same bags, in the other layout

    for raw, label in extra[:10]:
        assert service.learn(raw, other(label)).outcome == Outcome.RELABELLED
    assert_consistent(database_url)
    assert {service.forget(raw).outcome for raw, _ in extra} == {Outcome.FORGOTTEN}
    assert snapshot(database_url) == before
