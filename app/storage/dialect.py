"""The dialect-specific SQL, in one place: upserts, clamped decrements, id lists.

PostgreSQL and SQLite both support ``INSERT ... ON CONFLICT DO UPDATE`` and RETURNING; they
differ in the name of the two-argument maximum (``greatest`` / ``max``) and in how a long
id list is best passed (``= ANY(:array)`` beats an expanding IN on PostgreSQL).
A multi-row upsert must not repeat a key (PostgreSQL refuses it), so callers pass unique,
sorted keys: sorted keys also make concurrent writers lock rows in the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, Connection, Table, and_, bindparam, func, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import ColumnClause


def _insert(conn: Connection, table: Table) -> Any:
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def _greatest(conn: Connection, a: Any, b: Any) -> Any:
    return func.greatest(a, b) if conn.dialect.name == "postgresql" else func.max(a, b)


def id_filter(
    conn: Connection, column: ColumnClause[Any], ids: Sequence[int]
) -> ColumnElement[bool]:
    """``column`` is one of ``ids``."""
    if conn.dialect.name == "postgresql":
        return column == func.any(
            bindparam("ids_array", list(ids), type_=postgresql.ARRAY(BigInteger))
        )
    return column.in_(list(ids))


def _key_names(table: Table) -> list[str]:
    return [c.name for c in table.primary_key.columns]


def _upsert(conn: Connection, table: Table, added: Sequence[str]) -> Any:
    """One-row ``INSERT .. ON CONFLICT DO UPDATE SET c = c + excluded.c`` for ``added``.

    The statement's shape depends only on the table and columns, so SQLAlchemy compiles it
    once and caches it; rows go through executemany (batched "insertmanyvalues" where
    RETURNING is asked). A multi-row VALUES built per call was recompiled every time and
    cost ~80 % of a learn.
    """
    stmt = _insert(conn, table)
    return stmt.on_conflict_do_update(
        index_elements=_key_names(table), set_={c: table.c[c] + stmt.excluded[c] for c in added}
    )


def increment(
    conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]], exclude: Iterable[str] = ()
) -> None:
    """Insert ``rows``, or add their non-key values to the existing rows (values >= 0)."""
    if not rows:
        return
    keys = _key_names(table)
    added = [c for c in rows[0] if c not in keys and c not in exclude]
    conn.execute(_upsert(conn, table, added), list(rows))


def increment_returning_new(
    conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]]
) -> int:
    """Like ``increment`` on a table with one ``occurrences`` column; how many rows were new.

    A row is new when its value after the upsert equals the amount added: the row lock taken
    by the upsert makes this exact even when several transactions add the same key.
    """
    if not rows:
        return 0
    stmt = _upsert(conn, table, ["occurrences"]).returning(table.c.token_id, table.c.occurrences)
    added = {row["token_id"]: row["occurrences"] for row in rows}
    result = conn.execute(stmt, list(rows))
    return sum(1 for token_id, total in result if total == added[token_id])


def decrement(
    conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]], exclude: Iterable[str] = ()
) -> None:
    """Subtract the non-key values of ``rows`` from existing rows, never below zero."""
    if not rows:
        return
    keys = _key_names(table)
    changed = [c for c in rows[0] if c not in keys and c not in exclude]
    stmt = (
        update(table)
        .where(and_(*(table.c[k] == bindparam(f"k_{k}") for k in keys)))
        .values({c: _greatest(conn, table.c[c] - bindparam(f"v_{c}"), 0) for c in changed})
    )
    params = [
        {**{f"k_{k}": row[k] for k in keys}, **{f"v_{c}": row[c] for c in changed}} for row in rows
    ]
    conn.execute(stmt, params)


def insert_if_absent(conn: Connection, table: Table, values: Mapping[str, Any]) -> bool:
    """Insert one row unless its key exists; True when it was inserted.

    RETURNING, not rowcount: psycopg 3 reports rowcount -1 for a Core INSERT once
    SQLAlchemy has closed the cursor, which made every insert look like a conflict.
    """
    keys = _key_names(table)
    stmt = (
        _insert(conn, table)
        .values(dict(values))
        .on_conflict_do_nothing(index_elements=keys)
        .returning(table.c[keys[0]])
    )
    return conn.execute(stmt).first() is not None
