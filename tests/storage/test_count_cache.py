"""The cache of learned counts: what a cached read answers is what the database holds,
whichever process wrote it; it spares the queries it should; it stays bounded.

Two ``Store`` objects on two engines stand for two processes on one database: one (the
reader) reads and caches, the other writes, and after every kind of write the reader's next
read must equal a read with no cache at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from app.storage import calibration, count_cache
from app.storage.count_cache import CountCache
from app.storage.engine import make_engine
from app.storage.store import LabelStats, ModelTotals, Store, TokenStats

IDS = list(range(1, 13))
Read = tuple[ModelTotals, dict[int, Any], list[int]]


@pytest.fixture
def url(engine: sa.Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


@pytest.fixture
def writer(engine: sa.Engine) -> Store:
    return Store(engine, cache_tokens=0)


@pytest.fixture
def reader_engine(url: str) -> Iterator[sa.Engine]:
    other = make_engine(url)
    yield other
    other.dispose()


@pytest.fixture
def reader(reader_engine: sa.Engine) -> Store:
    return Store(reader_engine)


def read(store: Store, scope: str = "s", ids: list[int] = IDS) -> Read:
    with store.transaction(write=False) as tx:
        totals = tx.totals(scope)
        counts = tx.counts(scope, ids)
        histogram = tx.ham_scores().histogram(scope)
    return totals, {tid: dict(per) for tid, per in counts.items()}, histogram


def learn(store: Store, label: str, bag: dict[int, int], scope: str = "s") -> None:
    with store.transaction(write=True) as tx:
        tx.add(scope, label, bag, vocabulary=True)


def count_queries(engine: sa.Engine) -> list[str]:
    """Every statement that reads ``token_count`` on ``engine`` from now on."""
    seen: list[str] = []

    @sa.event.listens_for(engine, "before_cursor_execute")
    def _note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if "FROM token_count" in statement:
            seen.append(statement)

    return seen


def test_every_kind_of_write_by_another_process_is_read_next_time(
    writer: Store, reader: Store
) -> None:
    def check() -> None:
        assert read(reader) == read(writer)  # the writer's store caches nothing

    learn(writer, "spam", {1: 2, 2: 1, 3: 1})
    learn(writer, "ham", {3: 1, 4: 5})
    check()
    read(reader)  # cached now
    learn(writer, "spam", {1: 1, 5: 1})  # counts of a cached token, and a new token
    check()
    with writer.transaction(write=True) as tx:  # a forget
        tx.subtract("s", "spam", {1: 1, 5: 1}, vocabulary=True)
    check()
    with writer.transaction(write=True) as tx:  # a relabel
        tx.subtract("s", "ham", {3: 1, 4: 5}, vocabulary=False)
        tx.add("s", "spam", {3: 1, 4: 5}, vocabulary=False)
    check()
    with writer.transaction(write=True) as tx:  # a ham score alone (thick training's skip)
        tx.ham_scores().add("s", 3)
    check()
    with writer.transaction(write=True) as tx:  # expiry down to two tokens
        tx.expiry().expire("s", 20_000, 0, 2, dry_run=False)
    check()
    with writer.transaction(write=True) as tx:  # the model deleted ...
        tx.drop_scope("s")
    check()
    learn(writer, "ham", {1: 7, 2: 7})  # ... and made again under the same name
    check()
    assert read(reader)[1] == {
        1: {"ham": TokenStats(7, 1)},
        2: {"ham": TokenStats(7, 1)},
    }


def test_a_cached_read_queries_no_token_it_has_seen(writer: Store, reader: Store) -> None:
    learn(writer, "spam", {1: 1, 2: 1})
    learn(writer, "ham", {3: 1})
    engine = reader._engine  # the reader's own engine: its statements only
    queries = count_queries(engine)
    first = read(reader)
    assert len(queries) == 1
    assert read(reader) == first
    assert len(queries) == 1  # every id held, learned or absent
    read(reader, ids=[*IDS, 99])
    assert len(queries) == 2  # only the new id is asked for
    assert "json_each" in queries[-1] or "ANY" in queries[-1]
    learn(writer, "spam", {99: 1})
    assert read(reader, ids=[*IDS, 99])[1][99] == {"spam": TokenStats(1, 1)}
    assert len(queries) == 3  # another generation: read again


def test_a_transaction_reads_its_own_changes(reader: Store) -> None:
    learn(reader, "spam", {1: 1})
    learn(reader, "ham", {2: 1})
    read(reader)  # cached
    with reader.transaction(write=True) as tx:
        tx.totals("s")
        assert tx.counts("s", [1]) == {1: {"spam": TokenStats(1, 1)}}
        tx.add("s", "spam", {1: 2}, vocabulary=True)
        assert tx.counts("s", [1]) == {1: {"spam": TokenStats(3, 2)}}
    assert read(reader)[1][1] == {"spam": TokenStats(3, 2)}


def test_a_transactions_later_adds_are_read_before_they_are_written(
    writer: Store, reader: Store, reader_engine: sa.Engine
) -> None:
    """Once a transaction keeps a model's totals, a new message's add waits for the next
    flush (``CountWrites.defer``): until then it reads as written, and what is written
    at the commit is what adding each at once writes."""
    learn(reader, "spam", {1: 1})
    learn(reader, "ham", {2: 1})
    read(reader)  # cached
    written = count_writes(reader_engine)
    with reader.transaction(write=True) as tx:
        tx.totals("s")
        tx.add("s", "spam", {1: 2}, vocabulary=True)  # at once: the totals were not kept
        tx.totals("s")
        tx.add("s", "spam", {1: 1, 3: 4}, vocabulary=True)
        tx.add("s", "ham", {3: 1, 4: 1}, vocabulary=True)
        assert len(written) == 1
        assert tx.counts("s", [1, 3, 4]) == {
            1: {"spam": TokenStats(4, 3)},
            3: {"ham": TokenStats(1, 1), "spam": TokenStats(4, 1)},
            4: {"ham": TokenStats(1, 1)},
        }
        totals = tx.totals("s")
        assert totals.vocabulary == 4 and tx.grown() == {"s": 4}
        assert totals.of("spam") == LabelStats(messages=3, occurrences=8, token_messages=4)
    assert len(written) == 2  # the two pending adds, together
    assert read(reader) == read(writer)
    assert read(writer)[0] == totals


def test_pending_adds_that_find_their_rows_moved_keep_what_the_database_holds(
    writer: Store, reader: Store
) -> None:
    """No other writer can move a model's rows while a transaction that changed it is
    open (it holds the model's row lock); should one come back otherwise all the same, the
    cache takes what the database returned, not what the adds foresaw."""
    learn(reader, "spam", {1: 1})
    learn(reader, "ham", {2: 1})
    read(reader)
    with reader.transaction(write=True) as tx:
        tx.totals("s")
        tx.add("s", "spam", {2: 1}, vocabulary=True)
        tx.totals("s")
        tx.add("s", "spam", {1: 1}, vocabulary=True)  # pending
        tx._conn.exec_driver_sql(  # behind the pending add's back
            "UPDATE token_count SET spam_occurrences = spam_occurrences + 7 WHERE token_id = 1"
        )
    assert read(reader) == read(writer)
    assert read(writer)[1][1] == {"spam": TokenStats(9, 2)}


def count_writes(engine: sa.Engine) -> list[str]:
    """Every statement that writes ``token_count`` rows on ``engine`` from now on."""
    seen: list[str] = []

    @sa.event.listens_for(engine, "before_cursor_execute")
    def _note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.startswith("INSERT INTO token_count"):
            seen.append(statement)

    return seen


def test_a_rolled_back_write_leaves_what_is_cached_true(writer: Store, reader: Store) -> None:
    learn(writer, "spam", {1: 1})
    learn(writer, "ham", {2: 1})
    before = read(reader)

    class Abandon(Exception):
        pass

    with pytest.raises(Abandon), reader.transaction(write=True) as tx:
        tx.totals("s")
        tx.add("s", "spam", {1: 5}, vocabulary=True)
        tx.counts("s", [1])
        raise Abandon
    assert read(reader) == before == read(writer)


def test_held_tokens_stay_within_the_bound() -> None:
    cache = CountCache(max_tokens=10)
    first = cache.model("a", key=1)
    assert first is not None
    cache.fill(first, 1, {i: None for i in range(8)})
    second = cache.model("b", key=1)
    assert second is not None
    cache.fill(second, 1, {i: None for i in range(5)})  # 13 > 10: all dropped first
    assert len(second.tokens) == 5
    assert cache.model("a", key=1) is not first  # "a" was dropped with the rest
    cache.fill(second, 1, {i: None for i in range(11, 30)})  # more than the whole bound
    assert len(second.tokens) == 5  # not held at all


def test_a_changed_key_drops_what_was_held() -> None:
    cache = CountCache(max_tokens=100)
    held = cache.model("a", key=("row", 1))
    assert held is not None
    cache.fill(held, ("row", 1), {1: None})
    assert cache.model("a", key=("row", 1)) is held
    fresh = cache.model("a", key=("row", 2))
    assert fresh is not held and fresh is not None and not fresh.tokens
    cache.fill(held, ("row", 1), {2: None})  # a late fill of the old key is not kept
    cache.fill(fresh, ("row", 1), {3: None})  # nor one read under a key it no longer has
    assert not fresh.tokens


def test_no_cache_reads_the_database_every_time(writer: Store, engine: sa.Engine) -> None:
    learn(writer, "spam", {1: 1})
    queries = count_queries(engine)
    read(writer)
    read(writer)
    assert len(queries) == 2


def learn_as_the_service_does(store: Store, label: str, bag: dict[int, int]) -> None:
    """Check the model and read its counts (thick training's judging), then add."""
    with store.transaction(write=True) as tx:
        learn_as_the_service_does_in(tx, label, bag)


def test_a_learn_keeps_its_own_process_warm_and_exact(
    writer: Store, reader: Store, engine: sa.Engine
) -> None:
    learn(writer, "spam", {1: 2, 2: 1})
    learn(writer, "ham", {3: 1})
    read(reader)  # every id held
    queries = count_queries(reader._engine)
    learn_as_the_service_does(reader, "spam", {1: 1, 4: 2})  # 4 was held as absent
    learn_as_the_service_does(reader, "ham", {2: 3, 3: 1})
    assert len(queries) == 0  # judged from what was held, then updated in place
    assert read(reader) == read(writer)
    assert len(queries) == 0
    assert read(reader)[1][4] == {"spam": TokenStats(2, 1)}
    assert read(reader)[2][4] == 1  # the ham score went into its bin


def test_what_a_writer_cannot_follow_is_read_again(writer: Store, reader: Store) -> None:
    learn(writer, "spam", {1: 2, 2: 1})
    learn(writer, "ham", {2: 1, 3: 1})
    read(reader)
    with reader.transaction(write=True) as tx:  # a relabel, judged first
        tx.totals("s")
        tx.counts("s", [2, 3])
        tx.subtract("s", "ham", {2: 1, 3: 1}, vocabulary=False)
        tx.add("s", "spam", {2: 1, 3: 1}, vocabulary=False)
    assert read(reader) == read(writer)
    with reader.transaction(write=True) as tx:  # a forget
        tx.totals("s")
        tx.subtract("s", "spam", {1: 2, 2: 1}, vocabulary=True)
    assert read(reader) == read(writer)
    with reader.transaction(write=True) as tx:  # expiry: nothing to follow
        tx.totals("s")
        tx.expiry().expire("s", 20_000, 0, 1, dry_run=False)
    assert read(reader) == read(writer)


def test_another_writer_between_the_check_and_the_commit_is_not_overlooked(
    writer: Store, reader: Store
) -> None:
    learn(writer, "spam", {1: 1})
    learn(writer, "ham", {2: 1})
    read(reader)
    learn(writer, "spam", {1: 5})  # commits before the reader's learn checks the model
    learn_as_the_service_does(reader, "ham", {1: 1})
    assert read(reader) == read(writer)
    assert read(reader)[1][1] == {"spam": TokenStats(6, 2), "ham": TokenStats(1, 1)}


def test_a_commit_between_a_learns_check_and_its_lock_leaves_nothing_stale(
    writer: Store, reader: Store, database_backend: str
) -> None:
    if database_backend == "sqlite":
        pytest.skip("SQLite writers never overlap: a write transaction holds the lock from BEGIN")
    learn(writer, "spam", {1: 1, 2: 1})
    learn(writer, "ham", {3: 1})
    read(reader)  # 1, 2 and 3 held
    with reader.transaction(write=True) as tx:
        tx.totals("s")  # checked at this generation
        tx.counts("s", [1])
        learn(writer, "spam", {2: 4})  # another process commits meanwhile
        tx.add("s", "ham", {1: 1}, vocabulary=True)  # locks the model two generations on
        # The next message of a batch: nothing held may answer for the model now.
        tx.totals("s")
        assert tx.counts("s", [2]) == {2: {"spam": TokenStats(5, 2)}}
    assert read(reader) == read(writer)
    assert read(reader)[1][2] == {"spam": TokenStats(5, 2)}


def test_a_batch_of_learns_judges_from_what_is_held_and_its_own_changes(
    writer: Store, reader: Store
) -> None:
    """In one transaction that has changed the model: tokens held and untouched, and tokens
    the transaction's own adds returned, are answered without a query; tokens a forget or
    relabel changed are read again; all of it as the database holds it."""
    learn(writer, "spam", {1: 2, 2: 1})
    learn(writer, "ham", {3: 1})
    read(reader)  # ids 1..12 held (4..12 as absent)
    queries = count_queries(reader._engine)

    with reader.transaction(write=True) as tx:
        learn_as_the_service_does_in(tx, "spam", {1: 1, 4: 2})
        learn_as_the_service_does_in(tx, "ham", {2: 1, 5: 1})
        assert tx.ham_scores().histogram("s")[4] == 1
        assert queries == []
        tx.subtract("s", "spam", {1: 1, 4: 2}, vocabulary=True)  # a forget: not followed
        queries.clear()  # the forget's own statements
        assert tx.counts("s", [1, 2, 4]) == {
            1: {"spam": TokenStats(2, 1)},
            2: {"spam": TokenStats(1, 1), "ham": TokenStats(1, 1)},
        }
        assert len(queries) == 1  # 1 and 4 read again; 2 is the ham add's
        tx.add("s", "ham", {1: 1}, vocabulary=True)
        assert tx.counts("s", IDS)[1] == {"spam": TokenStats(2, 1), "ham": TokenStats(1, 1)}
        assert len(queries) == 1
    queries.clear()
    assert read(reader) == read(writer)
    assert queries == []  # the commit left the process's cache exact and warm


def learn_as_the_service_does_in(tx: Any, label: str, bag: dict[int, int]) -> None:
    """``learn_as_the_service_does`` within a transaction the caller holds."""
    tx.totals("s")
    tx.counts("s", list(bag))
    tx.ham_scores().histogram("s")
    tx.add("s", label, bag, vocabulary=True)
    if label == "ham":
        tx.ham_scores().add("s", 4)


def test_a_histogram_read_between_a_commit_and_its_install_is_not_counted_twice(
    writer: Store, reader: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that checked the model before another thread's learn committed reads the
    ham score histogram after that commit (PostgreSQL reads what is committed) and holds it
    under the old key; the learn's update, arriving after, must not add its score again."""
    learn_as_the_service_does(writer, "ham", {1: 1})
    learn(writer, "spam", {2: 1})
    real_install = count_cache.CountCache.install
    with reader.transaction(write=False) as other:
        other.totals("s")  # checked before the learn below commits

        def install(cache: count_cache.CountCache, update: count_cache.Update) -> None:
            other.ham_scores().histogram("s")  # read after the commit, held under the old key
            real_install(cache, update)

        monkeypatch.setattr(count_cache.CountCache, "install", install)
        with reader.transaction(write=True) as tx:
            tx.totals("s")
            tx.ham_scores().add("s", 4)
        monkeypatch.setattr(count_cache.CountCache, "install", real_install)
    assert read(reader)[2] == read(writer)[2]
    assert read(reader)[2][4] == 2


@pytest.mark.parametrize("cached", [True, False])
def test_the_ham_scores_are_halved_at_their_bound(
    writer: Store, reader: Store, monkeypatch: pytest.MonkeyPatch, cached: bool
) -> None:
    """Every bin is halved once the histogram holds ``HALVE_AT`` scores, in a process that
    caches counts or not, whether the scores come one learn at a time or several in one
    transaction; what the cache holds after follows (the halving is not followed: read
    again)."""
    monkeypatch.setattr(calibration, "HALVE_AT", 6)
    store = reader if cached else writer
    learn(writer, "spam", {1: 1})
    for k in range(2):
        learn_as_the_service_does(store, "ham", {10 + k: 1})  # bin 4
    with store.transaction(write=True) as tx:  # bins 4, 4, 4, 4: the sixth score halves
        for k in range(4):
            learn_as_the_service_does_in(tx, "ham", {20 + k: 1})
    assert read(writer)[2][4] == 3
    learn_as_the_service_does(store, "ham", {30: 1})
    assert read(writer)[2][4] == 4
    assert read(reader) == read(writer)


def test_the_models_held_stay_within_their_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.storage import count_cache

    monkeypatch.setattr(count_cache, "MAX_MODELS", 3)
    cache = CountCache(max_tokens=100)
    first = cache.model("user:0", key=1)
    for user in range(1, 3):
        cache.model(f"user:{user}", key=1)
    assert cache.model("user:0", key=1) is first  # three held
    cache.model("user:3", key=1)  # a fourth: all dropped first
    assert cache.model("user:0", key=1) is not first
