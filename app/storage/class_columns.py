"""The count columns of a site's further classes: added when a class is declared, renamed
and dropped by ``spamfilter classes``.

The migrations make ``token_count`` with the columns of ham and spam: a site that declares no
other class has exactly that table. Each further class gets two columns,
``<class>_messages`` and ``<class>_occurrences`` (BIGINT, NOT NULL, DEFAULT 0, never below 0),
added by ``prepare`` at start-up and by ``spamfilter db upgrade``: adding one to a table of
any size writes no row (SQLite and PostgreSQL 11+ store the default in the schema), and what
is learned stays. ``label_total`` and ``learned_message`` hold a label per row already.

Why columns and not a row per token and class: a classification reads one row per token
whatever the number of classes, in the query it makes today (``dialect.counts_by_ids``),
and ham and spam, which every site has, stay where they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, Engine, func, inspect, select, text, update
from sqlalchemy.exc import DBAPIError

from app.domain.labels import LABELS
from app.storage.failures import translate
from app.storage.tables import (
    activity_entry,
    label_column_names,
    label_total,
    learned_message,
    model_scope,
    token_count,
)


def stored_columns(conn: Connection) -> set[str]:
    """The names of ``token_count``'s columns in the database."""
    return {str(c["name"]) for c in inspect(conn).get_columns(token_count.name)}


def missing_classes(conn: Connection, classes: tuple[str, ...]) -> list[str]:
    """Those of ``classes`` whose count columns the database lacks."""
    have = stored_columns(conn)
    return [
        label for label in classes if not all(name in have for name in label_column_names(label))
    ]


def prepare(engine: Engine, classes: tuple[str, ...]) -> list[str]:
    """Add the count columns of each of ``classes`` the database lacks; the classes added.

    Nothing is read or written for ham and spam alone. Safe when several processes start at
    once: a column another one added meanwhile is not added twice."""
    if all(label in LABELS for label in classes):
        return []
    try:
        with engine.begin() as conn:
            if not inspect(conn).has_table(token_count.name):
                return []  # not migrated yet: readiness says so
            missing = missing_classes(conn, classes)
            for label in missing:
                _add_columns(conn, label)
        return missing
    except DBAPIError as error:
        with engine.connect() as conn:
            if not missing_classes(conn, classes):
                return []  # another process added them first
        raise translate(error) from error


def _add_columns(conn: Connection, label: str) -> None:
    have = stored_columns(conn)
    for name in label_column_names(label):
        if name not in have:
            conn.execute(
                text(
                    f"ALTER TABLE {token_count.name} ADD COLUMN {name} BIGINT "
                    f"DEFAULT 0 NOT NULL CHECK ({name} >= 0)"
                )
            )


def stored_classes(conn: Connection) -> dict[str, int]:
    """Every class with learned messages in some model, and its messages over all models."""
    query = (
        select(label_total.c.label, func.sum(label_total.c.messages))
        .group_by(label_total.c.label)
        .having(func.sum(label_total.c.messages) > 0)
    )
    return {str(label): int(n) for label, n in conn.execute(query)}


@dataclass(frozen=True, slots=True)
class ClassHoldings:
    """What the database holds of one class: learned messages (records), the messages in
    its totals over every scope, and whether ``token_count`` has its columns."""

    records: int
    messages: int
    columns: bool


def holdings(conn: Connection, label: str) -> ClassHoldings:
    """What the database holds of ``label``, over every scope."""
    records = conn.execute(
        select(func.count()).select_from(learned_message).where(learned_message.c.label == label)
    ).scalar_one()
    messages = conn.execute(
        select(func.coalesce(func.sum(label_total.c.messages), 0)).where(
            label_total.c.label == label
        )
    ).scalar_one()
    columns = not missing_classes(conn, (label,))
    return ClassHoldings(int(records), int(messages), columns)


def rename(conn: Connection, old: str, new: str) -> None:
    """Rename class ``old`` to ``new`` everywhere: its count columns, its totals, its
    learned-message records and the history's feedback, and every model's generation bumped
    (caches of the counts are stale). ``new`` must hold nothing (its columns, if any, are
    dropped first)."""
    if not missing_classes(conn, (new,)):
        _drop_columns(conn, new)
    for before, after in zip(label_column_names(old), label_column_names(new), strict=True):
        conn.execute(text(f"ALTER TABLE {token_count.name} RENAME COLUMN {before} TO {after}"))
    for table in (label_total, learned_message):
        conn.execute(update(table).where(table.c.label == old).values(label=new))
    conn.execute(update(activity_entry).where(activity_entry.c.learned == old).values(learned=new))
    _bump_generations(conn)


def drop(conn: Connection, label: str) -> int:
    """Drop what is left of class ``label`` once its learned messages are gone: its totals
    and its count columns, with every token row that held counts of no other class (each
    model's vocabulary shrinks by its own). Returns the token rows deleted: rows whose
    ``label`` counts came from no learned message (an import of counts alone), as forgetting
    every message leaves none."""
    if missing_classes(conn, (label,)):
        conn.execute(label_total.delete().where(label_total.c.label == label))
        return 0
    have = stored_columns(conn)
    others = [
        f"{lbl}_occurrences"
        for lbl in sorted({n.rsplit("_", 1)[0] for n in have if n.endswith("_occurrences")})
        if lbl != label
    ]
    empty = " AND ".join(f"{name} = 0" for name in others) or "1 = 1"
    per_scope = conn.execute(
        text(f"SELECT scope_id, count(*) FROM {token_count.name} WHERE {empty} GROUP BY scope_id")
    ).all()
    deleted = 0
    for scope_id, rows in per_scope:
        where = f"scope_id = :s AND {empty}"
        conn.execute(text(f"DELETE FROM {token_count.name} WHERE {where}"), {"s": scope_id})
        left = (
            select(func.count()).select_from(token_count).where(token_count.c.scope_id == scope_id)
        )
        conn.execute(
            update(model_scope)
            .where(model_scope.c.id == scope_id)
            .values(vocabulary=left.scalar_subquery())
        )
        deleted += int(rows)
    conn.execute(label_total.delete().where(label_total.c.label == label))
    _drop_columns(conn, label)
    _bump_generations(conn)
    return deleted


def _drop_columns(conn: Connection, label: str) -> None:
    for name in label_column_names(label):
        conn.execute(text(f"ALTER TABLE {token_count.name} DROP COLUMN {name}"))


def _bump_generations(conn: Connection) -> None:
    conn.execute(update(model_scope).values(generation=model_scope.c.generation + 1))
