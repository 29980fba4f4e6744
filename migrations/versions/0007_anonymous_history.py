"""History entries of anonymous callers, kept within a cap of their own.

``activity_entry.anonymous`` marks a classify by a caller that proved nothing (HTTP without
a valid token while tokens are configured); entries recorded before are not anonymous. The
index finds the newest entries of each kind for pruning.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("activity_entry") as batch:
        batch.add_column(
            sa.Column("anonymous", sa.Boolean, nullable=False, server_default=sa.false())
        )
    op.create_index("ix_activity_entry_anonymous_id", "activity_entry", ["anonymous", "id"])


def downgrade() -> None:
    op.drop_index("ix_activity_entry_anonymous_id", table_name="activity_entry")
    with op.batch_alter_table("activity_entry") as batch:
        batch.drop_column("anonymous")
