"""The dialect-specific SQL, in one place: upserts, clamped decrements, id lists.

PostgreSQL and SQLite both support ``INSERT ... ON CONFLICT DO UPDATE`` and RETURNING; they
differ in the name of the two-argument maximum (``greatest`` / ``max``) and in how a long
id list is best passed (``= ANY(:array)`` beats an expanding IN on PostgreSQL).
A multi-row upsert must not repeat a key (PostgreSQL refuses it), so callers pass unique,
sorted keys: sorted keys also make concurrent writers lock rows in the same order.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    CursorResult,
    Table,
    and_,
    bindparam,
    func,
    update,
)
from sqlalchemy.sql.elements import ColumnClause

from app.storage import driver


def _insert_function(dialect_name: str) -> Any:
    """The dialect's ``insert`` (with ON CONFLICT). Each dialect module is imported on first
    use: PostgreSQL's costs ~22 ms, which a pipe filter on SQLite never needs."""
    if dialect_name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert
    from sqlalchemy.dialects import sqlite

    return sqlite.insert


def _insert(conn: Connection, table: Table) -> Any:
    return _insert_function(conn.dialect.name)(table)


def _greatest(conn: Connection, a: Any, b: Any) -> Any:
    return func.greatest(a, b) if conn.dialect.name == "postgresql" else func.max(a, b)


def id_filter(
    conn: Connection, column: ColumnClause[Any], ids: Sequence[int]
) -> ColumnElement[bool]:
    """``column`` is one of ``ids``."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import ARRAY

        return column == func.any(bindparam("ids_array", list(ids), type_=ARRAY(BigInteger)))
    return column.in_(list(ids))


def _key_names(table: Table) -> list[str]:
    return [c.name for c in table.primary_key.columns]


def _upsert(
    conn: Connection, table: Table, added: Sequence[str], replaced: Sequence[str] = ()
) -> Any:
    """One-row ``INSERT .. ON CONFLICT DO UPDATE SET c = c + excluded.c`` for ``added``
    (and ``SET c = excluded.c`` for ``replaced``).

    The statement's shape depends only on the table and columns, so SQLAlchemy compiles it
    once and caches it; rows go through executemany (batched "insertmanyvalues" where
    RETURNING is asked). A multi-row VALUES built per call was recompiled every time and
    cost ~80 % of a learn.
    """
    return _upsert_statement(conn.dialect.name, table, tuple(added), tuple(replaced))


@functools.lru_cache(maxsize=64)
def _upsert_statement(
    dialect_name: str, table: Table, added: tuple[str, ...], replaced: tuple[str, ...]
) -> Any:
    """The statement ``_upsert`` describes, built once per shape: building the ON CONFLICT
    clause anew was ~10 % of a learn, even with the compiled form cached by SQLAlchemy."""
    stmt = _insert_function(dialect_name)(table)
    assignments = {c: table.c[c] + stmt.excluded[c] for c in added}
    assignments.update({c: stmt.excluded[c] for c in replaced})
    return stmt.on_conflict_do_update(index_elements=_key_names(table), set_=assignments)


def _changed(
    table: Table, row: Mapping[str, Any], exclude: Iterable[str], replace: Iterable[str] = ()
) -> list[str]:
    """The non-key columns of ``row`` a statement adds to (or subtracts from)."""
    skipped = {*_key_names(table), *exclude, *replace}
    return [c for c in row if c not in skipped]


def increment(
    conn: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    exclude: Iterable[str] = (),
    replace: Sequence[str] = (),
) -> None:
    """Insert ``rows``, or add their non-key values to the existing rows (values >= 0).

    Columns in ``exclude`` are only written by an insert; columns in ``replace`` take the
    row's value on an insert and an update alike.
    """
    if not rows:
        return
    added = _changed(table, rows[0], exclude, replace)
    conn.execute(_upsert(conn, table, added, replace), list(rows))


def increment_returning(
    conn: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    returned: Sequence[str],
    exclude: Iterable[str] = (),
    replace: Sequence[str] = (),
) -> list[Sequence[Any]]:
    """Like ``increment``; each row's key and its ``returned`` columns as they are after it
    (the row lock the upsert takes makes them exact even when several transactions add to
    the same key).

    One statement whose text depends only on the columns, the rows passed as arrays
    (PostgreSQL, ``unnest``) or as one JSON array of arrays (SQLite, ``json_each``: numbers
    and text only). Why: SQLAlchemy's RETURNING executemany is one multi-row VALUES whose
    text changes with the row count, so psycopg parsed every learn's statement anew (a fifth
    of a PostgreSQL learn), and it bound SQLite's parameters row by row (learning a spam
    message that adds a few hundred rows: 3.75 ms, now 3.47)."""
    if not rows:
        return []
    added = _changed(table, rows[0], exclude, replace)
    updates = [f"{c} = {table.name}.{c} + excluded.{c}" for c in added]
    updates += [f"{c} = excluded.{c}" for c in replace]
    keys = _key_names(table)
    suffix = (
        f" ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {', '.join(updates)}"
        f" RETURNING {', '.join([*keys, *returned])}"
    )
    if conn.dialect.name == "postgresql":
        result = _insert_unnest(conn, table, rows, list(rows[0]), suffix)
    else:
        result = _insert_json(conn, table, rows, suffix)
    try:
        return list(result.cursor.fetchall())
    finally:
        result.close()


def _insert_json(
    conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]], suffix: str
) -> CursorResult[Any]:
    """``INSERT .. SELECT`` of ``rows`` from one JSON parameter (SQLite), then ``suffix``
    (``WHERE true`` keeps SQLite from reading an ON CONFLICT as a join's ON)."""
    names = list(rows[0])
    picked = ", ".join(f"value ->> {i}" for i in range(len(names)))
    sql = (
        f"INSERT INTO {table.name} ({', '.join(names)}) SELECT {picked} FROM json_each(?) "
        f"WHERE true{suffix}"
    )
    return conn.exec_driver_sql(sql, (json.dumps([[row[n] for n in names] for row in rows]),))


def decrement(
    conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]], exclude: Iterable[str] = ()
) -> None:
    """Subtract the non-key values of ``rows`` from existing rows, never below zero."""
    if not rows:
        return
    keys = _key_names(table)
    changed = _changed(table, rows[0], exclude)
    stmt = (
        update(table)
        .where(and_(*(table.c[k] == bindparam(f"k_{k}") for k in keys)))
        .values({c: _greatest(conn, table.c[c] - bindparam(f"v_{c}"), 0) for c in changed})
    )
    params = [
        {**{f"k_{k}": row[k] for k in keys}, **{f"v_{c}": row[c] for c in changed}} for row in rows
    ]
    conn.execute(stmt, params)


def insert_if_absent(
    conn: Connection,
    table: Table,
    values: Mapping[str, Any],
    unique: Sequence[str] | None = None,
) -> bool:
    """Insert one row unless its key (or the ``unique`` columns) exists; True when inserted.

    Safe against a concurrent insert of the same key: PostgreSQL waits for the other
    transaction and then does nothing; SQLite writers never overlap (BEGIN IMMEDIATE).
    RETURNING, not rowcount: psycopg 3 reports rowcount -1 for a Core INSERT once
    SQLAlchemy has closed the cursor, which made every insert look like a conflict.
    """
    keys = _key_names(table)
    stmt = (
        _insert(conn, table)
        .values(dict(values))
        .on_conflict_do_nothing(index_elements=list(unique or keys))
        .returning(table.c[keys[0]])
    )
    return conn.execute(stmt).first() is not None


def counts_by_ids(
    conn: Connection, table: Table, columns: Sequence[str], scope_id: int, ids: Sequence[int]
) -> list[Sequence[Any]]:
    """``(token_id, *columns)`` rows of ``table`` for ``scope_id`` and the token ids ``ids``,
    in token id order, through the driver: one statement text per dialect and column list,
    which the driver prepares once, and every row fetched at once.

    Why a driver statement: compiling the expanding ``IN`` list was a third of a
    classification (283 ids a message on the SpamAssassin corpus); SQLite receives the ids
    as one JSON array (``json_each``), PostgreSQL as one binary array (see ``_placeholder``).
    Errors still come wrapped as SQLAlchemy's, so the store maps them as it maps every other.
    """
    names = ", ".join(columns)
    if conn.dialect.name == "postgresql":
        sql = (
            f"SELECT token_id, {names} FROM {table.name} WHERE scope_id = %s "
            "AND token_id = ANY(%b::bigint[]) ORDER BY token_id"
        )
        params: tuple[Any, ...] = (scope_id, list(ids))
    else:
        sql = (
            f"SELECT token_id, {names} FROM {table.name} WHERE scope_id = ? "
            "AND token_id IN (SELECT value FROM json_each(?)) ORDER BY token_id"
        )
        params = (scope_id, json.dumps(list(ids)))
    return _driver_rows(conn, sql, params)


def counts_by_scopes(
    conn: Connection,
    table: Table,
    columns: Sequence[str],
    wanted: Sequence[tuple[int, Sequence[int]]],
) -> list[Sequence[Any]]:
    """``(scope_id, token_id, *columns)`` rows of ``table`` for each ``(scope_id, ids)`` of
    ``wanted``, in one statement: by scope id, then token id (see ``counts_by_ids``, which
    this is for several scopes at once: one ``UNION ALL`` arm a scope, its text fixed by the
    number of scopes and the column list).

    Why one statement: a user's judgement read its own model's counts and the site-wide
    model's in two, each a round trip and a driver call (docs/benchmarks.md, "A user's
    classify")."""
    names = ", ".join(columns)
    if conn.dialect.name == "postgresql":
        arm = (
            f"SELECT scope_id, token_id, {names} FROM {table.name} WHERE scope_id = %s "
            "AND token_id = ANY(%b::bigint[])"
        )
        params: list[Any] = [p for scope_id, ids in wanted for p in (scope_id, list(ids))]
    else:
        arm = (
            f"SELECT scope_id, token_id, {names} FROM {table.name} WHERE scope_id = ? "
            "AND token_id IN (SELECT value FROM json_each(?))"
        )
        params = [p for scope_id, ids in wanted for p in (scope_id, json.dumps(list(ids)))]
    sql = " UNION ALL ".join([arm] * len(wanted)) + " ORDER BY scope_id, token_id"
    return _driver_rows(conn, sql, tuple(params))


def _driver_rows(conn: Connection, sql: str, params: tuple[Any, ...]) -> list[Sequence[Any]]:
    """Every row of ``sql`` as the driver's own tuples, fetched at once: SQLAlchemy's Row
    objects cost as much again as a small query. On SQLite, on the driver's cursor
    (``driver.rows``)."""
    if driver.runs_on_driver(conn):
        return driver.rows(conn, sql, params)
    result = conn.exec_driver_sql(sql, params)
    try:
        return list(result.cursor.fetchall())
    finally:
        result.close()


def fetch(
    conn: Connection, sql: str, params: Sequence[Any], lock: bool = False
) -> list[Sequence[Any]]:
    """Every row of ``sql`` (``?`` placeholders, plain SQL both dialects read alike) through
    the driver, which prepares the statement once; the driver's own tuples, fetched at once.
    For small hot queries, where SQLAlchemy's compiling and Row objects cost more than the
    query (see ``counts_by_ids``). With ``lock`` the rows are locked for update where the
    database locks rows (PostgreSQL; a SQLite writer holds the whole database already)."""
    if conn.dialect.name == "postgresql":
        sql = sql.replace("?", "%s") + (" FOR UPDATE" if lock else "")
    return _driver_rows(conn, sql, tuple(params))


def merge_counts(
    conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]], latest: Sequence[str]
) -> None:
    """Insert ``rows``, or add their values to the existing rows, keeping the larger of the
    two values for the ``latest`` columns (a seen day). Keys must be unique and sorted.

    On PostgreSQL the rows go as one array a column (``unnest``): psycopg sends an
    executemany as one statement a row, which made importing 125k token rows take ~9 s
    instead of ~1 s.
    """
    if not rows:
        return
    names = list(rows[0])
    added = _changed(table, rows[0], latest)
    if conn.dialect.name == "postgresql":
        _merge_unnest(conn, table, rows, names, added, latest)
        return
    stmt = _insert(conn, table)
    assignments: dict[str, Any] = {c: table.c[c] + stmt.excluded[c] for c in added}
    assignments.update({c: _greatest(conn, table.c[c], stmt.excluded[c]) for c in latest})
    conn.execute(
        stmt.on_conflict_do_update(index_elements=_key_names(table), set_=assignments), list(rows)
    )


def _merge_unnest(
    conn: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    names: Sequence[str],
    added: Sequence[str],
    latest: Sequence[str],
) -> None:
    """``merge_counts`` on PostgreSQL: ``INSERT .. SELECT FROM unnest(arrays) ON CONFLICT``."""
    updates = [f"{c} = {table.name}.{c} + excluded.{c}" for c in added]
    updates += [f"{c} = greatest({table.name}.{c}, excluded.{c})" for c in latest]
    conflict = f" ON CONFLICT ({', '.join(_key_names(table))}) DO UPDATE SET {', '.join(updates)}"
    _insert_unnest(conn, table, rows, names, conflict)


def insert_many(conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert ``rows`` (all with the same columns): on PostgreSQL as one statement of
    arrays (see ``merge_counts``), elsewhere by executemany."""
    if not rows:
        return
    if conn.dialect.name == "postgresql":
        _insert_unnest(conn, table, rows, list(rows[0]), "")
    else:
        conn.execute(table.insert(), list(rows))


# PostgreSQL array element types of the column types the count tables use.
_PG_TYPES = {
    "BigInteger": "bigint",
    "Integer": "integer",
    "String": "text",
    "LargeBinary": "bytea",
    "DateTime": "timestamptz",
}


def _placeholder(pg_type: str) -> str:
    """How an array of ``pg_type`` is sent: integers in psycopg's binary format (``%b``),
    each element packed by ``struct``; its text format quotes element by element in Python
    (300 ids: ~130 µs a statement more), which was a tenth of a learn on PostgreSQL."""
    return "%b" if pg_type in ("bigint", "integer") else "%s"


def _insert_unnest(
    conn: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    names: Sequence[str],
    suffix: str,
) -> CursorResult[Any]:
    types = [_PG_TYPES[type(table.c[n].type).__name__] for n in names]
    arrays = ", ".join(f"{_placeholder(t)}::{t}[]" for t in types)
    sql = f"INSERT INTO {table.name} ({', '.join(names)}) SELECT * FROM unnest({arrays}){suffix}"
    return conn.exec_driver_sql(sql, tuple([row[n] for row in rows] for n in names))


def refresh_statistics(conn: Connection, tables: Sequence[Table]) -> None:
    """Gather the planner's statistics of ``tables`` now (PostgreSQL's ``ANALYZE``), waiting
    at most a second for a lock autovacuum may hold; nothing on SQLite, whose reads by id
    list go by the primary key whatever its statistics."""
    if conn.dialect.name != "postgresql":
        return
    conn.exec_driver_sql("SET LOCAL lock_timeout = '1s'")
    for table in tables:
        conn.exec_driver_sql(f"ANALYZE {table.name}")


def snapshot_reads(conn: Connection) -> None:
    """Make the rest of this transaction read one snapshot (before its first statement).

    PostgreSQL's default READ COMMITTED gives each statement a snapshot of its own, so the
    tables of a model read one after the other could disagree with a write committed in
    between; REPEATABLE READ READ ONLY cannot fail with a serialisation error. A SQLite read
    transaction is a snapshot already.
    """
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")


def bytewise(conn: Connection, column: ColumnClause[Any]) -> ColumnElement[Any]:
    """``column`` compared byte by byte (PostgreSQL's "C" collation; SQLite's default), so
    both databases sort text the same way."""
    if conn.dialect.name == "postgresql":
        return column.collate("C")
    return column
