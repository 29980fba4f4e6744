"""Small hot statements on SQLite, run on the driver's own cursor.

A classification runs two or three tiny statements (a read transaction's BEGIN, the model's
totals, the counts of the tokens the cache lacks). Through ``exec_driver_sql`` each one cost
~35 µs of SQLAlchemy's work here (an execution context, result metadata, event dispatch)
against ~3 µs in sqlite3 itself: about a fifth of an in-process classification, with the
transaction's own begin and end (docs/benchmarks.md, "Measurements behind the design").

What ``exec_driver_sql`` gives and these keep:

* listeners of the engine's ``before_cursor_execute`` and ``after_cursor_execute`` events
  see every statement (tracing, the tests that count statements);
* a driver error comes wrapped as SQLAlchemy's (``DBAPIError.instance``), so the store maps
  it as it maps every other, and a connection the driver reports closed is invalidated.

PostgreSQL keeps ``exec_driver_sql``: there each statement is a round trip to the server,
which dwarfs the saving, and SQLAlchemy's disconnect handling recycles the whole pool.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError


def runs_on_driver(conn: Connection) -> bool:
    """Whether ``conn``'s small statements go to the driver's cursor (SQLite)."""
    return conn.dialect.name == "sqlite"


def rows(conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> list[Sequence[Any]]:
    """Every row of ``sql`` (the driver's placeholders) as the driver's tuples, fetched at
    once, on a cursor of ``conn``'s driver connection."""
    dispatch = conn.dispatch
    errors = conn.dialect.loaded_dbapi.Error
    cursor = None
    try:
        cursor = conn.connection.cursor()
        for announce in dispatch.before_cursor_execute:
            sql, params = announce(conn, cursor, sql, params, None, False)
        cursor.execute(sql, params)
        found = list(cursor.fetchall())
        dispatch.after_cursor_execute(conn, cursor, sql, params, None, False)
        return found
    except errors as error:
        raise _wrapped(conn, error, sql, params, cursor) from error
    finally:
        if cursor is not None:
            # As SQLAlchemy closes a cursor: a connection lost meanwhile fails it too.
            with contextlib.suppress(errors):
                cursor.close()


def _wrapped(
    conn: Connection, error: Exception, sql: str, params: tuple[Any, ...], cursor: Any
) -> DBAPIError:
    """``error`` as ``exec_driver_sql`` would have raised it; ``conn`` invalidated when the
    driver says its connection is closed."""
    dialect = conn.dialect
    lost = dialect.is_disconnect(error, conn.connection.dbapi_connection, cursor)  # type: ignore[arg-type]
    if lost:
        conn.invalidate(error)
    wrapped = DBAPIError.instance(
        sql, params, error, dialect.loaded_dbapi.Error, connection_invalidated=lost, dialect=dialect
    )
    if not isinstance(wrapped, DBAPIError):  # pragma: no cover - a driver error is wrapped
        raise error
    return wrapped
