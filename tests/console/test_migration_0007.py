"""Revision 0007 marks anonymous history entries: the entries recorded before are not
anonymous, and stepping back keeps every entry."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from app.storage.engine import make_engine
from app.storage.migrate import downgrade, upgrade


@pytest.fixture
def engine(database_url: str) -> Iterator[sa.Engine]:
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def columns(engine: sa.Engine) -> set[str]:
    return {column["name"] for column in sa.inspect(engine).get_columns("activity_entry")}


def test_entries_recorded_before_0007_are_not_anonymous_and_survive_both_ways(
    engine: sa.Engine,
) -> None:
    upgrade(engine, "0006")
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO activity_entry (at, adapter, digest, verdict, log_odds, ms, form, "
                "clues) VALUES (CURRENT_TIMESTAMP, 'http', 'd1', 'ham', -3.0, 1.5, 'rfc822', '[]')"
            )
        )
    upgrade(engine, "0007")
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT digest, anonymous FROM activity_entry")).all()
    assert [(digest, bool(anonymous)) for digest, anonymous in rows] == [("d1", False)]

    downgrade(engine, "0006")
    assert "anonymous" not in columns(engine)
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT digest FROM activity_entry")).scalars().all() == ["d1"]
