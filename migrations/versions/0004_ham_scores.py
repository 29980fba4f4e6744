"""The ham score histogram of each model, from which the spam cut-off is chosen, and the bin
each learned ham message added to (so forgetting it takes its score back out).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ham_score",
        sa.Column("scope_id", sa.Integer, nullable=False, autoincrement=False),
        sa.Column("bin", sa.Integer, nullable=False, autoincrement=False),
        sa.Column("ham", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("scope_id", "bin", name="pk_ham_score"),
        sa.CheckConstraint("ham >= 0", name=op.f("ck_ham_score_non_negative")),
        sqlite_with_rowid=False,
    )
    with op.batch_alter_table("learned_message") as batch:
        batch.add_column(sa.Column("ham_bin", sa.Integer))


def downgrade() -> None:
    with op.batch_alter_table("learned_message") as batch:
        batch.drop_column("ham_bin")
    op.drop_table("ham_score")
