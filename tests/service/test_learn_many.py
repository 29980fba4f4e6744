"""Bulk learning (``learn_many``): several messages per transaction, with exactly the counts,
records, ham scores and outcomes of learning them one at a time in the same order."""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from app.errors import InvalidLabel, InvalidMessage
from app.service import Analysed, SpamFilter, learning
from app.service.events import Event
from app.settings.schema import Settings
from app.storage import calibration, count_writes, dialect, repository
from app.storage.engine import make_engine
from app.storage.repository import Transaction
from app.storage.store import Store
from tests.builders import HAM_SENDERS, HAMMY_WORDS, SPAM_SENDERS, SPAMMY_WORDS, word_message
from tests.service import test_classes
from tests.storage.snapshot import snapshot

MakeService = Callable[..., SpamFilter]
MakeSettings = Callable[..., Settings]
DatabaseFactory = Callable[[], str]


def stream(size: int = 90, seed: int = 3) -> list[tuple[bytes, str]]:
    """New messages of both labels with repeats (one twice in a row) and corrections to the
    other label (one undone again) among them, each followed by new messages to judge."""
    rng = random.Random(seed)
    new = []
    for serial in range(size):
        label = "spam" if rng.random() < 0.4 else "ham"
        words, senders = (
            (SPAMMY_WORDS, SPAM_SENDERS) if label == "spam" else (HAMMY_WORDS, HAM_SENDERS)
        )
        new.append((word_message(rng, words, serial, senders=senders), label))
    flip = {"spam": "ham", "ham": "spam"}
    repeats = [new[k] for k in (3, 3, 17, 35)]
    corrections = [(new[k][0], flip[new[k][1]]) for k in (0, 1, 5, 38, 39)]
    return [
        *new[:40],
        *repeats,
        *corrections[:3],
        *new[40:60],
        *corrections[3:],
        new[5],
        *new[60:],
    ]


def settings_for(make_settings: MakeSettings, url: str, mode: str, **overrides: object) -> Settings:
    """``mode`` training on ``url``: thick judges every new message before learning it;
    everything learns them all, judging ham only (for the calibrated cut-off)."""
    return make_settings(
        database_url=url, training_mode=mode, decision={"min_messages": 2}, **overrides
    )


def one_at_a_time(
    service: SpamFilter, messages: list[tuple[bytes, str]], user: str | None = None
) -> list[str]:
    return [service.learn(raw, label, user).outcome.value for raw, label in messages]


def in_batches(
    service: SpamFilter, messages: list[tuple[bytes, str]], size: int, user: str | None = None
) -> list[str]:
    """The first two messages one at a time (so the model exists, and its cache is checked
    from the first batch on), the rest ``size`` at a time."""
    outcomes = one_at_a_time(service, messages[:2], user)
    analysed = [(service.analyse(raw, legacy=True), label) for raw, label in messages[2:]]
    for start in range(0, len(analysed), size):
        outcomes += learn_all(service, analysed[start : start + size], user)
    return outcomes


def learn_all(
    service: SpamFilter, batch: list[tuple[Analysed, str]], user: str | None = None
) -> list[str]:
    """The outcomes of ``learn_many`` over every transaction it takes."""
    return [r.outcome.value for done in service.learn_many(batch, user) for r in done]


def record_reads(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, list[int]]]:
    """Every count read that asks the database (ids missing from a scope's cache), as it
    is asked, from now on."""
    asked: list[dict[str, list[int]]] = []
    real = Transaction._read_counts

    def counting(tx: Transaction, wanted: dict[str, list[int]]) -> Any:
        if any(wanted.values()):  # nothing missing asks nothing
            asked.append(wanted)
        return real(tx, wanted)

    monkeypatch.setattr(Transaction, "_read_counts", counting)
    return asked


def record_queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement asked through the driver (``dialect.fetch``: the hot reads of a
    learn), as it is asked, from now on."""
    asked: list[str] = []
    real = dialect.fetch

    def fetch(conn: Any, statement: str, *args: Any) -> Any:
        asked.append(statement)
        return real(conn, statement, *args)

    monkeypatch.setattr(dialect, "fetch", fetch)
    return asked


@pytest.mark.parametrize("mode", ["thick", "everything"])
@pytest.mark.parametrize("size", [7, 1000])
def test_batches_leave_exactly_what_one_at_a_time_leaves(
    make_service: MakeService,
    make_settings: MakeSettings,
    database_factory: DatabaseFactory,
    size: int,
    mode: str,
) -> None:
    messages = stream()
    single_url, batch_url = database_factory(), database_factory()
    expected = one_at_a_time(make_service(settings_for(make_settings, single_url, mode)), messages)
    batched = make_service(settings_for(make_settings, batch_url, mode))
    assert in_batches(batched, messages, size) == expected
    # Every path of a learn was taken, judged from the counts the batch itself had changed.
    kinds = {"learned", "unchanged", "relabelled"} | ({"skipped"} if mode == "thick" else set())
    assert set(expected) == kinds
    assert snapshot(batch_url, timestamps=False) == snapshot(single_url, timestamps=False)
    # What the batches left in their process's cache scores as the database does.
    plain = make_service(settings_for(make_settings, batch_url, mode, cache_tokens=0))
    for raw, _label in messages:
        assert batched.classify(raw).log_odds == plain.classify(raw).log_odds


def test_a_users_batches_train_their_model_and_the_site_wide_one_alike(
    make_service: MakeService,
    make_settings: MakeSettings,
    database_factory: DatabaseFactory,
) -> None:
    """Feedback for a user trains the user's model and the site-wide one in one transaction:
    in a batch, both models change message after message, each judged from its own counts."""
    messages, user = stream(), "alice@example.org"
    single_url, batch_url = database_factory(), database_factory()
    single = make_service(settings_for(make_settings, single_url, "thick"))
    expected = one_at_a_time(single, messages, user)
    batched = make_service(settings_for(make_settings, batch_url, "thick"))
    assert in_batches(batched, messages, 7, user) == expected
    assert snapshot(batch_url, timestamps=False) == snapshot(single_url, timestamps=False)
    assert batched.stats().labels["ham"].messages > 0  # the site-wide model learned too
    plain = make_service(settings_for(make_settings, batch_url, "thick", cache_tokens=0))
    for raw, _label in messages:
        assert batched.classify(raw, user).log_odds == plain.classify(raw, user).log_odds


def test_a_batch_ends_its_transaction_where_expiry_falls_due(
    make_service: MakeService,
    make_settings: MakeSettings,
    database_factory: DatabaseFactory,
) -> None:
    """A small cap makes expiry follow some learns; a batch stops there and goes on in a new
    transaction after it, so expiry meets the same model as after single learns."""
    messages = stream()
    single_url, batch_url = database_factory(), database_factory()
    capped = {"max_tokens": 80}
    single = make_service(settings_for(make_settings, single_url, "everything", **capped))
    expected = one_at_a_time(single, messages)
    batched = make_service(settings_for(make_settings, batch_url, "everything", **capped))
    calls: list[tuple[int, int]] = []
    learn_many = batched.learn_many

    def counted(batch: list[tuple[Analysed, str]], user: str | None = None) -> Iterator[Any]:
        for results in learn_many(batch, user):
            calls.append((len(batch), len(results)))
            yield results

    batched.learn_many = counted  # type: ignore[method-assign]
    assert in_batches(batched, messages, 1000) == expected
    assert snapshot(batch_url, timestamps=False) == snapshot(single_url, timestamps=False)
    assert batched.stats().vocabulary <= 80 * 1.1
    assert any(learned < given for given, learned in calls)  # expiry ended some early


def test_observers_get_one_event_per_message_of_a_batch(settings: Settings) -> None:
    events: list[Event] = []

    class Keep:
        def observe(self, event: Event) -> None:
            events.append(event)

    engine = make_engine(settings.database_url)
    from app.storage.migrate import upgrade

    upgrade(engine)
    service = SpamFilter(Store(engine), settings, observers=[Keep()])
    try:
        messages = stream()[:5]
        analysed: list[tuple[Analysed, str]] = [
            (service.analyse(raw, legacy=True), label) for raw, label in messages
        ]
        results = [r for done in service.learn_many([*analysed, analysed[0]]) for r in done]
        with pytest.raises(InvalidMessage):
            service.learn_analysis(b"\x00 not a message")
        with pytest.raises(InvalidLabel):
            list(service.learn_many([(analysed[1][0], "junk"), (analysed[2][0], "ham")]))
    finally:
        service.close()
        engine.dispose()
    assert [e.call for e in events] == ["learn"] * 9
    assert [e.digest for e in events[:6]] == [a.digest for a, _ in [*analysed, analysed[0]]]
    assert [e.outcome for e in events[:6]] == [r.outcome.value for r in results]
    assert Counter(e.outcome for e in events[:6]) == {"learned": 5, "unchanged": 1}
    assert [e.label for e in events[:6]] == [label for _, label in messages] + [messages[0][1]]
    # A message that cannot be read, and a batch refused for a label: errors, as learn's.
    assert [(e.outcome, e.error) for e in events[6:]] == [
        ("error", "invalid_message"),
        ("error", "invalid_label"),
        ("error", "invalid_label"),
    ]
    assert [e.digest for e in events[7:]] == [analysed[1][0].digest, analysed[2][0].digest]


def test_a_label_that_names_none_refuses_the_whole_batch(service: SpamFilter) -> None:
    good = service.analyse(stream()[0][0], legacy=True)
    with pytest.raises(InvalidLabel):
        list(service.learn_many([(good, "spam"), (good, "junk")]))
    assert service.stats().labels["spam"].messages == 0


def test_an_empty_batch_does_nothing(service: SpamFilter) -> None:
    assert list(service.learn_many([])) == []


def test_a_users_batch_locks_the_users_model_first(
    make_service: MakeService,
    make_settings: MakeSettings,
    database_factory: DatabaseFactory,
    database_backend: str,
) -> None:
    """A single learn for a user locks the user's model before the site-wide one whenever it
    changes both; a batch could change the site-wide one first (a message the user's model
    already holds), so it locks the user's model before anything else: one order, no
    deadlock with a single learn for the same user on PostgreSQL."""
    if database_backend == "sqlite":
        pytest.skip("a SQLite writer holds the whole database")
    user = "alice@example.org"
    service = make_service(settings_for(make_settings, database_factory(), "everything"))
    messages = stream()[:6]
    one_at_a_time(service, messages[:1], user)
    locks: list[tuple[str, Any]] = []
    engine = service._store._engine

    @sa.event.listens_for(engine, "before_cursor_execute")
    def note(_conn: Any, _cursor: Any, statement: str, params: Any, *_args: Any) -> None:
        if "model_scope" in statement and ("FOR UPDATE" in statement or "UPDATE" in statement):
            locks.append((statement, params))

    analysed = [(service.analyse(raw, legacy=True), label) for raw, label in messages]
    assert learn_all(service, analysed, user)[0] == "unchanged"
    statement, params = locks[0]
    assert statement.startswith("SELECT id FROM model_scope") and "FOR UPDATE" in statement
    assert list(params) == [service.models(user).own]


def test_a_batch_that_starts_with_a_relabel_still_judges_from_the_cache(
    make_service: MakeService,
    make_settings: MakeSettings,
    database_factory: DatabaseFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The models are checked before the batch's first message changes them: after a
    relabel, the next messages are judged from what the cache holds, and only the tokens the
    relabel moved are read again."""
    service = make_service(settings_for(make_settings, database_factory(), "thick"))
    messages = stream()
    one_at_a_time(service, messages[:10])
    first, (b, c) = messages[0], messages[50:52]  # b and c: new to the model
    for raw, _ in (b, c):
        service.classify(raw)  # every token of b and c now held, learned or absent
    flip = "ham" if first[1] == "spam" else "spam"
    batch = [(service.learn_analysis(raw), label) for raw, label in ((first[0], flip), b, c)]
    asked = record_reads(monkeypatch)
    outcomes = learn_all(service, batch)
    read = [tid for wanted in asked for token_ids in wanted.values() for tid in token_ids]
    assert outcomes[0] == "relabelled" and outcomes[1] in ("learned", "skipped")
    assert set(read) <= set(batch[0][0].bag())  # only what the relabel moved


@pytest.mark.parametrize("user", [None, "bob@example.org"])
def test_a_batch_reads_its_counts_and_records_at_once_and_totals_after_changes(
    make_service: MakeService,
    make_settings: MakeSettings,
    database_factory: DatabaseFactory,
    monkeypatch: pytest.MonkeyPatch,
    user: str | None,
) -> None:
    """Up front, a batch reads the counts every message is judged on (each message's own
    read is then answered by the cache) and every message's learned-message record, one
    query a model; and it keeps a model's totals once it has changed the model (no other
    writer can then, and its own adds move them exactly), so a message judged asks nothing
    (docs/benchmarks.md). The outcomes are those of one at a time."""
    settings = settings_for(make_settings, database_factory(), "thick")
    service = make_service(settings)
    messages = stream()
    one_at_a_time(service, messages[:30], user)
    chosen = [*messages[50:80], messages[3], (messages[5][0], flip(messages[5][1]))]
    batch = [(service.learn_analysis(raw), label) for raw, label in chosen]
    calls = record_reads(monkeypatch)
    asked = record_queries(monkeypatch)
    outcomes = learn_all(service, batch, user)
    monkeypatch.undo()
    # One read for the batch (a user's model and the site-wide one together, which the
    # site-wide model's own learning then finds held); none for any one message.
    assert len(calls) == 1
    models = 1 if user is None else 2  # a user's feedback trains the site-wide model too
    records = [q for q in asked if q.startswith(repository._LEARNED.split("{")[0])]
    totals = [q for q in asked if q.startswith(repository._TOTALS_OF.split("{")[0])]
    assert len(records) == models
    assert outcomes.count("learned") >= 5 and outcomes.count("skipped") >= 5
    assert "relabelled" in outcomes
    # A few reads for the batch (its check, its first message's before the model changed,
    # one after the relabel's subtract, one before the commit), whatever it learned: none
    # per message (31 here, one a message, before totals were kept).
    assert len(totals) <= 3 * models + 3
    again = make_service(settings_for(make_settings, database_factory(), "thick"))
    one_at_a_time(again, messages[:30], user)
    assert outcomes == one_at_a_time(again, chosen, user)


def test_without_a_cache_a_batch_reads_nothing_ahead(
    make_service: MakeService,
    make_settings: MakeSettings,
    database_factory: DatabaseFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``cache_tokens`` 0 nothing would hold the counts read ahead: each message reads
    its own, as before, and none is read twice."""
    service = make_service(settings_for(make_settings, database_factory(), "thick", cache_tokens=0))
    messages = stream()
    one_at_a_time(service, messages[:12])
    batch = [(service.learn_analysis(raw), label) for raw, label in messages[50:60]]
    asked = record_reads(monkeypatch)
    learn_all(service, batch)
    reads = [tid for wanted in asked for ids in wanted.values() for tid in ids]
    judged = sum(len(analysed.names()) for analysed, _ in batch)
    assert 0 < len(reads) <= judged  # no batch-wide read on top of the messages' own


@pytest.mark.parametrize("cache_tokens", [None, 0])
def test_a_batch_writes_its_ham_scores_at_once_and_asks_their_total_only_if_needed(
    make_service: MakeService,
    make_settings: MakeSettings,
    database_factory: DatabaseFactory,
    monkeypatch: pytest.MonkeyPatch,
    cache_tokens: int | None,
) -> None:
    """Each ham score a batch adds is checked against the histogram's bound: from the
    histogram the cache holds when it holds one (a query a message saved), else asked,
    with the scores pending written first. With the histogram held, the batch writes its
    scores in one statement before the commit."""
    extra = {} if cache_tokens is None else {"cache_tokens": cache_tokens}
    url = database_factory()
    service = make_service(settings_for(make_settings, url, "thick", **extra))
    messages = stream()
    one_at_a_time(service, messages[:12])
    batch = [(service.learn_analysis(raw), label) for raw, label in messages[50:70]]
    asked = record_queries(monkeypatch)
    writes: list[int] = []
    increment = dialect.increment

    def counting(conn: Any, table: sa.Table, rows: Any, *args: Any, **kwargs: Any) -> None:
        if table.name == "ham_score":
            writes.append(sum(row["ham"] for row in rows))
        increment(conn, table, rows, *args, **kwargs)

    monkeypatch.setattr(dialect, "increment", counting)
    added = ham_scores(url)
    learn_all(service, batch)
    added = ham_scores(url) - added
    totals = asked.count(calibration._TOTAL)
    assert added > 0 and sum(writes) == added
    assert totals == (0 if cache_tokens is None else added)
    assert len(writes) == (1 if cache_tokens is None else added)


def ham_scores(url: str) -> int:
    """The scores every ham score histogram of the database holds."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(sa.text("SELECT COALESCE(SUM(ham), 0) FROM ham_score")).scalar()
            )
    finally:
        engine.dispose()


def flip(label: str) -> str:
    return "ham" if label == "spam" else "spam"


def test_a_batch_holds_off_other_writers_of_the_records_it_read_ahead(
    make_service: MakeService,
    make_settings: MakeSettings,
    database_factory: DatabaseFactory,
    database_backend: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A record another writer commits after the batch read its records ahead would be
    missed (the batch would skip a message already learned, and score its ham twice): so
    the batch locks each model before reading, and another learn of one of its messages
    waits for its commit, then finds what the batch did, as if one ran after the other."""
    if database_backend == "sqlite":
        pytest.skip("a SQLite writer holds the whole database")
    url = database_factory()
    service = make_service(settings_for(make_settings, url, "thick"))
    other = make_service(settings_for(make_settings, url, "everything"))
    messages = stream()
    one_at_a_time(service, messages[:40])
    spam = next(m for m in messages[70:] if m[1] == "spam")
    ham = next(m for m in messages[70:] if m[1] == "ham")
    batch = [(service.learn_analysis(raw), label) for raw, label in (spam, ham)]
    finished: list[str] = []
    waited: list[bool] = []
    judge = learning.Trainer._judge_new

    def judging(self: Any, *args: Any) -> Any:
        if not threads:  # the batch's first message: the other writer tries meanwhile
            writer = threading.Thread(
                target=lambda: finished.append(other.learn(ham[0], "ham").outcome.value)
            )
            threads.append(writer)
            writer.start()
            writer.join(1.0)
            waited.append(writer.is_alive())
        return judge(self, *args)

    threads: list[threading.Thread] = []
    monkeypatch.setattr(learning.Trainer, "_judge_new", judging)
    outcomes = learn_all(service, batch)
    monkeypatch.undo()
    threads[0].join(30)
    assert waited == [True]  # it waited for the batch
    assert finished == ["unchanged" if outcomes[1] == "learned" else "learned"]


@pytest.mark.parametrize("spam_only", [False, True])
@pytest.mark.parametrize("user", [None, "bob@example.org"])
def test_a_batch_writes_each_models_token_rows_together(
    make_service: MakeService,
    make_settings: MakeSettings,
    database_factory: DatabaseFactory,
    monkeypatch: pytest.MonkeyPatch,
    user: str | None,
    spam_only: bool,
) -> None:
    """Once a batch has changed a model, the messages it learns next are added to what is
    pending and written together before the commit: one statement for the token rows, one
    for the totals and one for the vocabulary a model, where each message wrote its own.
    So too for a folder learned as spam, which "everything" learns without judging. What
    it leaves is what learning them one at a time leaves."""
    messages = stream()
    chosen = [(raw, "spam" if spam_only else label) for raw, label in messages[50:80]]
    single_url, batch_url = database_factory(), database_factory()
    single = make_service(settings_for(make_settings, single_url, "everything"))
    one_at_a_time(single, messages[:30], user)
    expected = one_at_a_time(single, chosen, user)
    service = make_service(settings_for(make_settings, batch_url, "everything"))
    one_at_a_time(service, messages[:30], user)
    batch = [(service.learn_analysis(raw), label) for raw, label in chosen]
    upserts: list[int] = []
    real = dialect.increment_returning

    def counted(conn: Any, table: Any, rows: Any, *args: Any, **kwargs: Any) -> Any:
        upserts.append(len(rows))
        return real(conn, table, rows, *args, **kwargs)

    monkeypatch.setattr(dialect, "increment_returning", counted)
    outcomes = learn_all(service, batch, user)
    monkeypatch.undo()
    assert outcomes == expected and outcomes.count("learned") == len(chosen) - 1  # one repeat
    models = 1 if user is None else 2
    # A model's first message is written at once (the model changes there), the other 28
    # learned together before the commit: two statements a model.
    assert len(upserts) == 2 * models
    learned = [a for (a, _), outcome in zip(batch, outcomes, strict=True) if outcome == "learned"]
    assert sum(upserts) < sum(len(a.bag()) for a in learned) * models  # rows shared, once
    assert snapshot(batch_url, timestamps=False) == snapshot(single_url, timestamps=False)
    plain = make_service(settings_for(make_settings, batch_url, "everything", cache_tokens=0))
    for raw, _label in messages:
        assert service.classify(raw, user).log_odds == plain.classify(raw, user).log_odds


def count_defers(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each add ``CountWrites.defer`` is asked to hold back waits, from now on."""
    held: list[bool] = []
    real = count_writes.CountWrites.defer

    def spy(writes: count_writes.CountWrites, *args: Any) -> Any:
        result = real(writes, *args)
        held.append(result is not None)
        return result

    monkeypatch.setattr(count_writes.CountWrites, "defer", spy)
    return held


@pytest.mark.parametrize("mode", ["thick", "everything"])
def test_a_batch_that_corrects_what_it_learned_leaves_what_one_at_a_time_leaves(
    make_service: MakeService,
    make_settings: MakeSettings,
    database_factory: DatabaseFactory,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    """A message learned in a batch, its add still pending, then corrected to the other
    label in the same batch: the correction's subtract finds the pending rows written."""
    messages = stream()
    ham = [m for m in messages[:40] if m[1] == "ham"][8]
    spam = [m for m in messages[:40] if m[1] == "spam"][8]
    chosen = [*messages[:4], ham, spam, (ham[0], "spam"), (spam[0], "ham"), *messages[60:70]]
    single_url, batch_url = database_factory(), database_factory()
    expected = one_at_a_time(make_service(settings_for(make_settings, single_url, mode)), chosen)
    batched = make_service(settings_for(make_settings, batch_url, mode))
    held = count_defers(monkeypatch)
    assert in_batches(batched, chosen, 1000) == expected
    monkeypatch.undo()
    assert expected[6:8] == ["relabelled", "relabelled"] and any(held)
    assert snapshot(batch_url, timestamps=False) == snapshot(single_url, timestamps=False)


@pytest.mark.parametrize(
    "model", [{"model": {"kind": "bernoulli"}}, test_classes.DECLARED], ids=["bernoulli", "classes"]
)
@pytest.mark.parametrize("user", [None, "carol@example.org"])
def test_batches_of_other_models_leave_what_one_at_a_time_leaves(
    make_service: MakeService,
    make_settings: MakeSettings,
    database_factory: DatabaseFactory,
    monkeypatch: pytest.MonkeyPatch,
    model: dict[str, Any],
    user: str | None,
) -> None:
    """The Bernoulli model reads every token's counts from the database (what is pending is
    written first); a site of four classes adds to the columns of each."""
    if "classes" in model["model"]:
        found = test_classes.corpus(12)
        messages = [*found, found[0], (found[1][0], "newsletter"), *test_classes.corpus(6, seed=9)]
    else:
        messages = stream()
    single_url, batch_url = database_factory(), database_factory()
    settings = {"training_mode": "thick", "decision": {"min_messages": 2}, **model}
    single = make_service(make_settings(database_url=single_url, **settings))
    expected = one_at_a_time(single, messages, user)
    batched = make_service(make_settings(database_url=batch_url, **settings))
    held = count_defers(monkeypatch)
    assert in_batches(batched, messages, 13, user) == expected
    monkeypatch.undo()
    assert any(held)
    assert snapshot(batch_url, timestamps=False) == snapshot(single_url, timestamps=False)
