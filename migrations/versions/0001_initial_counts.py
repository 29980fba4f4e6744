"""Token counts, label totals, vocabulary size and learned messages, per scope.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
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


def downgrade() -> None:
    for table in ("learned_message", "model_scope", "label_total", "token", "token_count"):
        op.drop_table(table)
