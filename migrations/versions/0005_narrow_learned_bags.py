"""Learned-message bags stored with narrow counts (``app.storage.codec``).

The schema does not change: from this revision on, a learned message's bag is stored with
its counts in one byte (two past 255) and a byte naming that width, beside the records
stored before in the wide layout (int32 counts), which stay as they are and are read as
they are. The revision marks the layout, so code older than it refuses this database at its
migration check instead of failing on the first narrow record it reads (forget, relabel,
export). Downgrading rewrites every narrow bag in the wide layout, which that code reads.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27
"""

from __future__ import annotations

import sys
from array import array

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# Width byte of a narrow bag -> array type code of its counts (as in app.storage.codec,
# written out here so that this revision keeps its meaning whatever that module becomes).
_NARROW = {1: "B", 2: "H"}
_BATCH = 1_000


def upgrade() -> None:
    """Nothing to rewrite: the records stored so far keep the wide layout."""


def downgrade() -> None:
    conn = op.get_bind()
    table = sa.table(
        "learned_message",
        sa.column("scope_id", sa.Integer),
        sa.column("digest", sa.String),
        sa.column("tokens", sa.LargeBinary),
    )
    after: tuple[int, str] = (-1, "")
    while True:
        rows = conn.execute(
            sa.select(table.c.scope_id, table.c.digest, table.c.tokens)
            .where(sa.tuple_(table.c.scope_id, table.c.digest) > sa.tuple_(*after))
            .order_by(table.c.scope_id, table.c.digest)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        for scope_id, digest, blob in rows:
            blob = bytes(blob)
            if len(blob) % 12:
                conn.execute(
                    sa.update(table)
                    .where(table.c.scope_id == scope_id, table.c.digest == digest)
                    .values(tokens=_widened(blob, digest))
                )
        after = (rows[-1][0], rows[-1][1])


def _widened(blob: bytes, digest: str) -> bytes:
    """A narrow bag in the wide layout: the same ids, then the counts as int32. A bag that is
    neither layout stops the downgrade (which then changes nothing), naming its record."""
    width = blob[-1]
    n, rest = divmod(len(blob) - 1, 8 + width) if width in _NARROW else (0, 1)
    if rest:
        raise ValueError(
            f"learned message {digest}: its token bag ({len(blob)} bytes) is damaged; "
            "delete that record (the counts it added stay), then downgrade again"
        )
    counts = array(_NARROW[width], blob[8 * n : -1])
    if sys.byteorder == "big":  # pragma: no cover - every supported platform is little-endian
        counts.byteswap()
    wide = array("i", counts)
    if sys.byteorder == "big":  # pragma: no cover
        wide.byteswap()
    return blob[: 8 * n] + wide.tobytes()
