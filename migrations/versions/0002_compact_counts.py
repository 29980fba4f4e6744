"""One compact row per token: scope ids, both labels' counts side by side, a last-seen day.

Scopes get an integer id (``model_scope.id``) that every other table uses instead of the
name; ``token_count`` holds one row per (scope, token) with each label's messages and
occurrences and the day it was last learned (``seen_day``), and the ``token`` table goes:
a row exists exactly while some label has occurrences, so the vocabulary is the row count.
``model_scope.generation`` counts the transactions that changed a scope's counts.

Every count is copied; the vocabulary is recounted from the rows (equal to the stored one
on a consistent database). The downgrade rebuilds the 0001 rows exactly.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# The labels whose counts get columns, as this revision knows them (migrations are static:
# a later label needs a revision of its own).
LABELS = ("ham", "spam")
# The tables of both layouts that are renamed aside while their rows are copied.
MOVED = ("model_scope", "token_count", "label_total", "learned_message")


def upgrade() -> None:
    _refuse_unknown_labels()
    for table in MOVED:
        _move_aside(table, "0001")
    _create_compact_tables()
    now = datetime.now(UTC)
    _execute(
        """
        INSERT INTO model_scope (name, vocabulary, generation, created_at)
        SELECT scope, 0, 0, MIN(created_at) FROM (
            SELECT scope, created_at FROM model_scope_0001
            UNION ALL SELECT scope, :now FROM label_total_0001
            UNION ALL SELECT scope, :now FROM learned_message_0001
            UNION ALL SELECT DISTINCT scope, :now FROM token_count_0001
        ) AS found
        GROUP BY scope
        ORDER BY scope
        """,
        now=now,
    )
    sums = ", ".join(
        f"SUM(CASE WHEN t.label = '{label}' THEN t.{column} ELSE 0 END)"
        for label in LABELS
        for column in ("messages", "occurrences")
    )
    _execute(
        f"""
        INSERT INTO token_count (scope_id, token_id, {_count_columns()}, seen_day)
        SELECT s.id, t.token_id, {sums}, :day
        FROM token_count_0001 AS t JOIN model_scope AS s ON s.name = t.scope
        GROUP BY s.id, t.token_id
        """,
        day=int(time.time() // 86_400),
    )
    _execute(
        """
        UPDATE model_scope SET vocabulary = (
            SELECT COUNT(*) FROM token_count WHERE token_count.scope_id = model_scope.id
        )
        """
    )
    _execute(
        """
        INSERT INTO label_total (scope_id, label, messages, occurrences, token_messages)
        SELECT s.id, t.label, t.messages, t.occurrences, t.token_messages
        FROM label_total_0001 AS t JOIN model_scope AS s ON s.name = t.scope
        """
    )
    _execute(
        """
        INSERT INTO learned_message (scope_id, digest, label, token_count, tokens, learned_at)
        SELECT s.id, m.digest, m.label, m.token_count, m.tokens, m.learned_at
        FROM learned_message_0001 AS m JOIN model_scope AS s ON s.name = m.scope
        """
    )
    for table in MOVED:
        op.drop_table(f"{table}_0001")
    op.drop_table("token")


def downgrade() -> None:
    for table in MOVED:
        _move_aside(table, "0002")
    _create_per_label_tables()
    for label in LABELS:
        _execute(
            f"""
            INSERT INTO token_count (scope, token_id, label, occurrences, messages)
            SELECT s.name, t.token_id, '{label}', t.{label}_occurrences, t.{label}_messages
            FROM token_count_0002 AS t JOIN model_scope_0002 AS s ON s.id = t.scope_id
            WHERE t.{label}_occurrences > 0
            """
        )
    total = " + ".join(f"t.{label}_occurrences" for label in LABELS)
    _execute(
        f"""
        INSERT INTO token (scope, token_id, occurrences)
        SELECT s.name, t.token_id, {total}
        FROM token_count_0002 AS t JOIN model_scope_0002 AS s ON s.id = t.scope_id
        WHERE {total} > 0
        """
    )
    _execute(
        """
        INSERT INTO model_scope (scope, vocabulary, created_at)
        SELECT name, vocabulary, created_at FROM model_scope_0002
        """
    )
    _execute(
        """
        INSERT INTO label_total (scope, label, messages, occurrences, token_messages)
        SELECT s.name, t.label, t.messages, t.occurrences, t.token_messages
        FROM label_total_0002 AS t JOIN model_scope_0002 AS s ON s.id = t.scope_id
        """
    )
    _execute(
        """
        INSERT INTO learned_message (scope, digest, label, token_count, tokens, learned_at)
        SELECT s.name, m.digest, m.label, m.token_count, m.tokens, m.learned_at
        FROM learned_message_0002 AS m JOIN model_scope_0002 AS s ON s.id = m.scope_id
        """
    )
    for table in MOVED:
        op.drop_table(f"{table}_0002")


def _execute(sql: str, **params: object) -> None:
    """Run ``sql``; a datetime parameter is bound as the timestamp type (on SQLite that is
    the text format SQLAlchemy writes and reads back)."""
    statement = sa.text(sql).bindparams(
        *(
            sa.bindparam(name, type_=sa.DateTime(timezone=True))
            for name, value in params.items()
            if isinstance(value, datetime)
        )
    )
    op.get_bind().execute(statement, params)


def _count_columns() -> str:
    return ", ".join(
        f"{label}_{column}" for label in LABELS for column in ("messages", "occurrences")
    )


def _refuse_unknown_labels() -> None:
    """Stop before changing anything when a count has a label this layout has no column for."""
    found = op.get_bind().execute(sa.text("SELECT DISTINCT label FROM token_count")).scalars()
    unknown = sorted(set(found) - set(LABELS))
    if unknown:
        raise RuntimeError(f"token_count has labels without columns in revision 0002: {unknown}")


def _move_aside(table: str, suffix: str) -> None:
    """Rename ``table`` to ``table_<suffix>`` so the other layout can take its name.

    PostgreSQL names the index behind a primary key or unique constraint after the
    constraint, and index names are unique per schema, so those constraints are renamed
    too; SQLite keeps constraint names inside the table's definition.
    """
    moved = f"{table}_{suffix}"
    op.rename_table(table, moved)
    if op.get_bind().dialect.name != "postgresql":
        return
    keys = [f"pk_{table}"]
    if table == "model_scope" and suffix == "0002":
        keys.append("uq_model_scope_name")
    for key in keys:
        op.execute(f"ALTER TABLE {moved} RENAME CONSTRAINT {key} TO {key}_{suffix}")


def _create_compact_tables() -> None:
    counts = [
        sa.Column(f"{label}_{column}", sa.BigInteger, nullable=False)
        for label in LABELS
        for column in ("messages", "occurrences")
    ]
    op.create_table(
        "model_scope",
        sa.Column("id", sa.Integer, nullable=False, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("vocabulary", sa.BigInteger, nullable=False),
        sa.Column("generation", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_model_scope"),
        sa.UniqueConstraint("name", name="uq_model_scope_name"),
        sa.CheckConstraint(
            "vocabulary >= 0 AND generation >= 0", name=op.f("ck_model_scope_non_negative")
        ),
    )
    op.create_table(
        "token_count",
        sa.Column("scope_id", sa.Integer, nullable=False, autoincrement=False),
        sa.Column("token_id", sa.BigInteger, nullable=False, autoincrement=False),
        *counts,
        sa.Column("seen_day", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("scope_id", "token_id", name="pk_token_count"),
        sa.CheckConstraint(
            " AND ".join(f"{c.name} >= 0" for c in counts), name=op.f("ck_token_count_non_negative")
        ),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "label_total",
        sa.Column("scope_id", sa.Integer, nullable=False, autoincrement=False),
        sa.Column("label", sa.String(32), nullable=False),
        sa.Column("messages", sa.BigInteger, nullable=False),
        sa.Column("occurrences", sa.BigInteger, nullable=False),
        sa.Column("token_messages", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("scope_id", "label", name="pk_label_total"),
        sa.CheckConstraint(
            "messages >= 0 AND occurrences >= 0 AND token_messages >= 0",
            name=op.f("ck_label_total_non_negative"),
        ),
    )
    op.create_table(
        "learned_message",
        sa.Column("scope_id", sa.Integer, nullable=False, autoincrement=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("label", sa.String(32), nullable=False),
        sa.Column("token_count", sa.Integer, nullable=False),
        sa.Column("tokens", sa.LargeBinary, nullable=False),
        sa.Column("learned_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("scope_id", "digest", name="pk_learned_message"),
    )


def _create_per_label_tables() -> None:
    """The tables of revision 0001, as it created them."""
    op.create_table(
        "token_count",
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("token_id", sa.BigInteger, nullable=False),
        sa.Column("label", sa.String(32), nullable=False),
        sa.Column("occurrences", sa.BigInteger, nullable=False),
        sa.Column("messages", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("scope", "token_id", "label", name="pk_token_count"),
        sa.CheckConstraint(
            "occurrences >= 0 AND messages >= 0", name=op.f("ck_token_count_non_negative")
        ),
    )
    op.create_table(
        "token",
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("token_id", sa.BigInteger, nullable=False),
        sa.Column("occurrences", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("scope", "token_id", name="pk_token"),
        sa.CheckConstraint("occurrences >= 0", name=op.f("ck_token_non_negative")),
    )
    op.create_table(
        "label_total",
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("label", sa.String(32), nullable=False),
        sa.Column("messages", sa.BigInteger, nullable=False),
        sa.Column("occurrences", sa.BigInteger, nullable=False),
        sa.Column("token_messages", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("scope", "label", name="pk_label_total"),
        sa.CheckConstraint(
            "messages >= 0 AND occurrences >= 0 AND token_messages >= 0",
            name=op.f("ck_label_total_non_negative"),
        ),
    )
    op.create_table(
        "model_scope",
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("vocabulary", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("scope", name="pk_model_scope"),
        sa.CheckConstraint("vocabulary >= 0", name=op.f("ck_model_scope_non_negative")),
    )
    op.create_table(
        "learned_message",
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("label", sa.String(32), nullable=False),
        sa.Column("token_count", sa.Integer, nullable=False),
        sa.Column("tokens", sa.LargeBinary, nullable=False),
        sa.Column("learned_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("scope", "digest", name="pk_learned_message"),
    )
