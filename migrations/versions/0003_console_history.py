"""The console's activity: recent verdicts (with their clues and, for a while, their tokens)
and per-minute counts and latency buckets per process, adapter, call and outcome.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# As this revision knows them (migrations are static).
LATENCY_BUCKETS = 13


def upgrade() -> None:
    op.create_table(
        "activity_entry",
        sa.Column("id", sa.Integer, nullable=False, autoincrement=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("adapter", sa.String(16), nullable=False),
        sa.Column("user_name", sa.String(200)),
        sa.Column("sender", sa.String(256)),
        sa.Column("subject", sa.String(256)),
        sa.Column("message_id", sa.String(256)),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("log_odds", sa.Float, nullable=False),
        sa.Column("ms", sa.Float, nullable=False),
        sa.Column("form", sa.String(16), nullable=False),
        sa.Column("clues", sa.Text, nullable=False),
        sa.Column("tokens", sa.LargeBinary),
        sa.Column("learned", sa.String(32)),
        sa.PrimaryKeyConstraint("id", name="pk_activity_entry"),
    )
    op.create_index("ix_activity_entry_at", "activity_entry", ["at"])
    op.create_index("ix_activity_entry_digest", "activity_entry", ["digest"])
    op.create_table(
        "activity_minute",
        sa.Column("minute", sa.Integer, nullable=False, autoincrement=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("adapter", sa.String(16), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("outcome", sa.String(32), nullable=False),
        sa.Column("count", sa.BigInteger, nullable=False),
        sa.Column("ms_total", sa.Float, nullable=False),
        *(sa.Column(f"lat_{i}", sa.BigInteger, nullable=False) for i in range(LATENCY_BUCKETS)),
        sa.PrimaryKeyConstraint(
            "minute", "source", "adapter", "action", "outcome", name="pk_activity_minute"
        ),
    )


def downgrade() -> None:
    op.drop_table("activity_minute")
    op.drop_index("ix_activity_entry_digest", "activity_entry")
    op.drop_index("ix_activity_entry_at", "activity_entry")
    op.drop_table("activity_entry")
