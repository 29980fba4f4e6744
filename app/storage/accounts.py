"""The scopes under a name prefix (a base scope's users) and deleting one scope whole.

Rows refer to ``model_scope.id`` without foreign keys (see ``tables.py``), so deleting a
scope deletes its rows from every table explicitly, its ``model_scope`` row last. Both
functions run inside the caller's transaction and never commit.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, delete, select, update

from app.storage.tables import (
    SCOPED_TABLES,
    label_total,
    learned_message,
    model_scope,
    token_count,
)


@dataclass(frozen=True, slots=True)
class ScopeSummary:
    """One scope: its name, learned messages per label, and its vocabulary size."""

    name: str
    messages: dict[str, int]
    vocabulary: int


@dataclass(frozen=True, slots=True)
class DroppedScope:
    """What deleting a scope removed: learned-message records and token rows."""

    messages: int
    tokens: int


def scopes_under(conn: Connection, prefix: str) -> list[ScopeSummary]:
    """Every scope whose name starts with ``prefix``, by name (code point order), with its
    learned messages per label and vocabulary: one query for all of them."""
    query = (
        select(
            model_scope.c.name,
            model_scope.c.vocabulary,
            label_total.c.label,
            label_total.c.messages,
        )
        .select_from(model_scope.outerjoin(label_total, label_total.c.scope_id == model_scope.c.id))
        # autoescape: a user name may hold % or _, which LIKE would read as wildcards.
        .where(model_scope.c.name.startswith(prefix, autoescape=True))
    )
    found: dict[str, ScopeSummary] = {}
    for row in conn.execute(query):
        summary = found.get(row.name)
        if summary is None:
            summary = ScopeSummary(row.name, {}, int(row.vocabulary))
            found[row.name] = summary
        if row.label is not None:
            summary.messages[row.label] = int(row.messages)
    # Sorted here, by code point: an ORDER BY would follow the database's collation, and
    # PostgreSQL's locale orders "bX" and "b_" the other way round from SQLite.
    return sorted(found.values(), key=lambda summary: summary.name)


def drop_scope(conn: Connection, scope_id: int) -> DroppedScope:
    """Delete scope ``scope_id``: its token counts, label totals, learned-message records,
    ham score histogram and its ``model_scope`` row.

    The scope row is locked first (a generation bump, as every writer does first: see
    ``ScopeIds.changing``), so on PostgreSQL a learn for the same scope that is under way
    finishes before the rows go, and one that starts later waits for the delete.
    """
    scope = model_scope.c.id == scope_id
    conn.execute(update(model_scope).where(scope).values(generation=model_scope.c.generation + 1))
    deleted = {
        table.name: conn.execute(delete(table).where(table.c.scope_id == scope_id)).rowcount
        for table in SCOPED_TABLES
    }
    conn.execute(delete(model_scope).where(scope))
    return DroppedScope(
        messages=int(deleted[learned_message.name]), tokens=int(deleted[token_count.name])
    )
