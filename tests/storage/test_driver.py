"""Small statements on SQLite's own cursor keep what ``exec_driver_sql`` gives: the rows,
statement events, and errors wrapped (and a closed connection invalidated) as SQLAlchemy's."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError, OperationalError

from app.errors import StorageUnavailable
from app.storage import driver
from app.storage.engine import make_engine
from app.storage.migrate import upgrade
from app.storage.store import Store


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[sa.Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'driver.db'}")
    upgrade(engine)
    yield engine
    engine.dispose()


def test_rows_are_the_driver_s_tuples_as_exec_driver_sql_gives_them(
    sqlite_engine: sa.Engine,
) -> None:
    sql = "SELECT value, value * 2 FROM json_each(?) ORDER BY value"
    with sqlite_engine.connect() as conn:
        assert driver.runs_on_driver(conn)
        found = driver.rows(conn, sql, ("[3, 1, 2]",))
        expected = list(conn.exec_driver_sql(sql, ("[3, 1, 2]",)).cursor.fetchall())
    assert found == expected == [(1, 2), (2, 4), (3, 6)]
    assert all(type(row) is tuple for row in found)


def test_statement_listeners_see_each_statement_and_may_rewrite_it(
    sqlite_engine: sa.Engine,
) -> None:
    seen: list[tuple[str, str, Any]] = []

    @sa.event.listens_for(sqlite_engine, "before_cursor_execute")
    def _before(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        seen.append(("before", statement, params))

    @sa.event.listens_for(sqlite_engine, "before_cursor_execute", retval=True)
    def _rewrite(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> tuple[str, Any]:
        return statement.replace("41", "42"), params

    @sa.event.listens_for(sqlite_engine, "after_cursor_execute")
    def _after(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        seen.append(("after", statement, params))

    with sqlite_engine.connect() as conn:
        assert driver.rows(conn, "SELECT 41, ?", (7,)) == [(42, 7)]
    assert seen == [("before", "SELECT 41, ?", (7,)), ("after", "SELECT 42, ?", (7,))]


def test_a_read_transaction_begins_on_the_driver_and_is_seen(sqlite_engine: sa.Engine) -> None:
    seen: list[str] = []

    @sa.event.listens_for(sqlite_engine, "before_cursor_execute")
    def _note(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    store = Store(sqlite_engine)
    with store.transaction(write=False) as tx:
        raw = tx._conn.connection.dbapi_connection
        assert isinstance(raw, sqlite3.Connection)
        assert raw.in_transaction  # BEGIN ran, on the driver's connection
        tx.totals("nobody")
    assert seen[0] == "BEGIN"
    assert any("label_total" in statement for statement in seen[1:])


def test_an_error_comes_wrapped_as_exec_driver_sql_wraps_it(sqlite_engine: sa.Engine) -> None:
    sql = "SELECT * FROM no_such_table WHERE x = ?"
    with sqlite_engine.connect() as conn:
        with pytest.raises(DBAPIError) as ours:
            driver.rows(conn, sql, (1,))
        with pytest.raises(DBAPIError) as theirs:
            conn.exec_driver_sql(sql, (1,))
    assert type(ours.value) is type(theirs.value) is OperationalError
    assert isinstance(ours.value.orig, sqlite3.OperationalError)
    assert str(ours.value.orig) == str(theirs.value.orig) == "no such table: no_such_table"
    assert ours.value.statement == sql
    assert ours.value.params == (1,)
    assert not ours.value.connection_invalidated


def test_a_closed_connection_is_invalidated_and_the_store_reads_on(
    sqlite_engine: sa.Engine,
) -> None:
    store = Store(sqlite_engine)
    with store.transaction(write=False) as tx:
        tx.totals("nobody")
    # Checked after the transaction: its rollback on the lost connection fails too, and the
    # store's StorageUnavailable would hide a failed assert inside it.
    invalidated: list[bool] = []
    with pytest.raises(StorageUnavailable), store.transaction(write=False) as tx:
        conn = tx._conn
        conn.connection.dbapi_connection.close()  # as if the driver lost it
        try:
            tx.totals("somebody")
        except DBAPIError as lost:
            invalidated += [lost.connection_invalidated, conn.invalidated]
            raise
    assert invalidated == [True, True]
    with store.transaction(write=False) as tx:  # a fresh connection from the pool
        assert tx.totals("nobody").vocabulary == 0
