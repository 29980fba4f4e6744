"""Revision 0003 adds the console's two tables and touches nothing else, both ways."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from app.storage.engine import make_engine
from app.storage.migrate import downgrade, upgrade

CONSOLE_TABLES = {"activity_entry", "activity_minute"}


@pytest.fixture
def engine(database_url: str) -> Iterator[sa.Engine]:
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


def scopes(engine: sa.Engine) -> list[str]:
    with engine.connect() as conn:
        return [row[0] for row in conn.execute(sa.text("SELECT name FROM model_scope"))]


def test_0003_adds_and_removes_only_the_console_tables(engine: sa.Engine) -> None:
    upgrade(engine, "0002")
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO model_scope (name, vocabulary, generation, created_at) "
                "VALUES ('global', 0, 0, CURRENT_TIMESTAMP)"
            )
        )
    before = tables(engine)
    assert not CONSOLE_TABLES & before

    upgrade(engine, "0003")
    assert tables(engine) == before | CONSOLE_TABLES
    indexes = {ix["name"] for ix in sa.inspect(engine).get_indexes("activity_entry")}
    assert indexes == {"ix_activity_entry_at", "ix_activity_entry_digest"}
    assert scopes(engine) == ["global"]

    downgrade(engine, "0002")
    assert tables(engine) == before
    assert scopes(engine) == ["global"]
