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

# Rows per statement: well under SQLite's 32,766 bound parameters at 6 columns a row.
CHUNK = 2000


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


def _chunks(rows: Sequence[Mapping[str, Any]]) -> Iterable[Sequence[Mapping[str, Any]]]:
    for start in range(0, len(rows), CHUNK):
        yield rows[start : start + CHUNK]


def increment(
    conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]], exclude: Iterable[str] = ()
) -> None:
    """Insert ``rows``, or add their non-key values to the existing rows (values >= 0)."""
    for chunk in _chunks(rows):
        stmt = _insert(conn, table).values(list(chunk))
        keys = _key_names(table)
        added = [c for c in chunk[0] if c not in keys and c not in exclude]
        stmt = stmt.on_conflict_do_update(
            index_elements=keys, set_={c: table.c[c] + stmt.excluded[c] for c in added}
        )
        conn.execute(stmt)


def increment_returning_new(
    conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]]
) -> int:
    """Like ``increment`` on a table with one ``occurrences`` column; how many rows were new.

    A row is new when its value after the upsert equals the amount added: the row lock taken
    by the upsert makes this exact even when several transactions add the same key.
    """
    new = 0
    for chunk in _chunks(rows):
        stmt = _insert(conn, table).values(list(chunk))
        stmt = stmt.on_conflict_do_update(
            index_elements=_key_names(table),
            set_={"occurrences": table.c.occurrences + stmt.excluded.occurrences},
        ).returning(table.c.token_id, table.c.occurrences)
        added = {row["token_id"]: row["occurrences"] for row in chunk}
        new += sum(1 for token_id, total in conn.execute(stmt) if total == added[token_id])
    return new


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
    """Insert one row unless its key exists; True when it was inserted."""
    stmt = (
        _insert(conn, table)
        .values(dict(values))
        .on_conflict_do_nothing(index_elements=_key_names(table))
    )
    return bool(conn.execute(stmt).rowcount == 1)
