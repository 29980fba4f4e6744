"""Storage fixtures: an engine on a database built by the migrations."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from app.storage.engine import make_engine
from app.storage.migrate import upgrade


@pytest.fixture
def engine(database_url: str) -> Iterator[sa.Engine]:
    """An engine on this test's database, migrated to head."""
    engine = make_engine(database_url)
    upgrade(engine)
    yield engine
    engine.dispose()
