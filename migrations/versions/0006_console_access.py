"""The console's access, shared by every worker and replica: the session-cookie signing key
made once (when ``console.session_key`` is not set), the sessions ended by logging out, and
failed logins per client address.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "console_secret",
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("value", sa.String(128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_console_secret"),
    )
    op.create_table(
        "console_revoked",
        sa.Column("nonce", sa.String(64), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("nonce", name="pk_console_revoked"),
    )
    op.create_index("ix_console_revoked_expires_at", "console_revoked", ["expires_at"])
    op.create_table(
        "console_login",
        sa.Column("client", sa.String(64), nullable=False),
        sa.Column("window_started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("client", name="pk_console_login"),
    )
    op.create_index("ix_console_login_window_started_at", "console_login", ["window_started_at"])


def downgrade() -> None:
    op.drop_index("ix_console_login_window_started_at", table_name="console_login")
    op.drop_table("console_login")
    op.drop_index("ix_console_revoked_expires_at", table_name="console_revoked")
    op.drop_table("console_revoked")
    op.drop_table("console_secret")
