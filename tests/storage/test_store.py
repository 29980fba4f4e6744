"""The store's units of work: one transaction each, never committed by a repository call."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import sqlalchemy as sa

from app.errors import StorageConflict, StorageUnavailable
from app.storage.engine import make_engine
from app.storage.failures import translate
from app.storage.store import Store, TokenStats
from app.storage.tables import learned_message, token_count
from tests.storage.snapshot import reader


class Boom(Exception):
    pass


def rows(engine: sa.Engine, table: sa.Table) -> int:
    """Rows of ``table`` as another connection sees them (without taking a write lock)."""
    other = reader(engine.url.render_as_string(hide_password=False))
    try:
        with other.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())
    finally:
        other.dispose()


def test_a_failed_unit_of_work_leaves_nothing_behind(engine: sa.Engine) -> None:
    store = Store(engine)
    with pytest.raises(Boom), store.transaction(write=True) as tx:
        assert tx.claim("s", "d" * 64, "spam", {1: 1})
        tx.add("s", "spam", {1: 1, 2: 3}, vocabulary=True)
        raise Boom
    assert rows(engine, token_count) == rows(engine, learned_message) == 0
    with store.transaction(write=False) as tx:
        assert tx.totals("s").labels == {}
        assert tx.learned("s", "d" * 64) is None


def test_repository_calls_do_not_commit_on_their_own(engine: sa.Engine) -> None:
    store = Store(engine)
    with store.transaction(write=True) as tx:
        tx.add("s", "ham", {7: 2}, vocabulary=True)
        tx.claim("s", "e" * 64, "ham", {7: 2})
        assert rows(engine, token_count) == 0  # another connection sees nothing yet
        assert rows(engine, learned_message) == 0
    assert rows(engine, token_count) == rows(engine, learned_message) == 1


def test_counts_totals_and_records_read_back(engine: sa.Engine) -> None:
    store = Store(engine)
    bag = {-(2**63): 1, 5: 2, 2**63 - 1: 3}
    with store.transaction(write=True) as tx:
        assert tx.claim("s", "f" * 64, "spam", bag)
        assert not tx.claim("s", "f" * 64, "ham", {1: 1})
        tx.add("s", "spam", bag, vocabulary=True)
    with store.transaction(write=False) as tx:
        assert tx.counts("s", [*bag, 99]) == {i: {"spam": TokenStats(n, 1)} for i, n in bag.items()}
        assert tx.counts("other", list(bag)) == {}
        assert tx.counts("s", []) == {}
        totals = tx.totals("s")
        record = tx.learned("s", "f" * 64)
    assert totals.vocabulary == 3
    spam = totals.labels["spam"]
    assert (spam.messages, spam.occurrences, spam.token_messages) == (1, 6, 3)
    assert record is not None
    assert (record.label, record.bag) == ("spam", bag)


def test_a_record_is_found_under_the_first_digest_that_has_one(engine: sa.Engine) -> None:
    store = Store(engine)
    first, second, none = "a" * 64, "b" * 64, "c" * 64
    with store.transaction(write=True) as tx:
        assert tx.claim("s", second, "ham", {1: 1})
    with store.transaction(write=False) as tx:
        assert tx.learned("s", none) is None
        found = tx.learned("s", none, second)
        assert found is not None and (found.digest, found.label) == (second, "ham")
    with store.transaction(write=True) as tx:
        assert tx.claim("s", first, "spam", {2: 1})
    with store.transaction(write=False) as tx:
        for order in ((first, second), (first, none, second)):
            found = tx.learned("s", *order)
            assert found is not None and (found.digest, found.label) == (first, "spam")
        found = tx.learned("s", second, first)
        assert found is not None and found.digest == second


def test_schema_revision_of_an_empty_database(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        assert Store(engine).schema_revision() is None
        assert not Store(engine).is_migrated()
    finally:
        engine.dispose()


def test_an_unreachable_postgresql_server_is_storage_unavailable() -> None:
    engine = make_engine("postgresql://nobody:secret@127.0.0.1:1/none")
    try:
        with pytest.raises(StorageUnavailable):
            Store(engine).schema_revision()
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("sqlstate", "expected"),
    [
        ("40001", StorageConflict),
        ("40P01", StorageConflict),
        ("23505", StorageUnavailable),
        (None, StorageUnavailable),
    ],
)
def test_driver_errors_map_to_the_hierarchy(
    sqlstate: str | None, expected: type[Exception]
) -> None:
    orig = SimpleNamespace(sqlstate=sqlstate)
    error = sa.exc.DBAPIError("SELECT 1", {}, orig, connection_invalidated=False)  # type: ignore[arg-type]
    assert type(translate(error)) is expected
