"""The store's watch on its SQLite file, at the level of one unit of work."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.errors import StorageUnavailable
from app.storage.engine import make_engine
from app.storage.migrate import upgrade
from app.storage.store import Store
from app.storage.tables import learned_message


def migrated(path: Path) -> None:
    engine = make_engine(f"sqlite:///{path}")
    try:
        upgrade(engine)
    finally:
        engine.dispose()


def learned(path: Path) -> int:
    engine = make_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            query = sa.select(sa.func.count()).select_from(learned_message)
            return int(conn.execute(query).scalar_one())
    finally:
        engine.dispose()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "spamfilter.db"


@pytest.fixture
def store(path: Path) -> Iterator[Store]:
    migrated(path)
    engine = make_engine(f"sqlite:///{path}")
    store = Store(engine)
    yield store
    store.dispose()


def test_a_file_replaced_during_a_write_fails_the_write_after_its_commit(
    store: Store, path: Path
) -> None:
    """The check before BEGIN passed; the file moved before COMMIT. The commit went to the old
    file, so the caller must hear StorageUnavailable, not success."""
    other = path.with_name("other.db")
    migrated(other)
    with (
        pytest.raises(StorageUnavailable, match="during this write"),
        store.transaction(write=True) as tx,
    ):
        tx.claim("global", "d" * 64, "spam", {1: 1})
        os.replace(other, path)
    assert learned(path) == 0
    with store.transaction(write=True) as tx:  # the file at the path is migrated: adopted
        tx.claim("global", "e" * 64, "spam", {1: 1})
    assert learned(path) == 1


def test_the_old_files_wal_is_emptied_so_the_new_file_never_reads_it(
    store: Store, path: Path
) -> None:
    with store.transaction(write=True) as tx:
        tx.claim("global", "d" * 64, "spam", {1: 1})
    wal = path.with_name(path.name + "-wal")
    assert wal.stat().st_size > 0  # the claim is in the WAL, not yet in the file
    other = path.with_name("other.db")
    migrated(other)
    os.replace(other, path)
    with pytest.raises(StorageUnavailable, match="replaced"), store.transaction(write=True):
        pass
    assert wal.stat().st_size == 0
    assert learned(path) == 0


def test_a_store_built_before_its_file_exists_adopts_it_once_migrated(path: Path) -> None:
    engine = make_engine(f"sqlite:///{path}")
    store = Store(engine)
    try:
        with pytest.raises(StorageUnavailable, match="missing"), store.transaction(write=True):
            pass
        upgrade(engine)
        assert store.readiness() is None
        with store.transaction(write=True) as tx:
            tx.claim("global", "d" * 64, "spam", {1: 1})
    finally:
        store.dispose()
    assert learned(path) == 1
