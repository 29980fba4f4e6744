"""The migrations: reversible, and the schema they build is exactly ``app.storage.tables``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from app.bootstrap import build_service
from app.errors import ConfigurationError, StorageUnavailable
from app.settings.schema import Settings
from app.storage.engine import make_engine
from app.storage.migrate import alembic_config, downgrade, head_revision, upgrade
from app.storage.store import Store, current_revision, is_current
from app.storage.tables import SCHEMA_REVISION, metadata

VERSION_TABLE = "alembic_version"


@pytest.fixture
def engine(database_url: str) -> Iterator[sa.Engine]:
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def table_names(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


def schema_differences(engine: sa.Engine) -> list[Any]:
    """What alembic autogenerate would change to make the database match the metadata."""
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return list(compare_metadata(context, metadata))


def revisions_oldest_first(engine: sa.Engine) -> list[str]:
    scripts = ScriptDirectory.from_config(alembic_config(engine))
    return [script.revision for script in reversed(list(scripts.walk_revisions()))]


def test_upgrade_downgrade_upgrade_round_trip(engine: sa.Engine) -> None:
    store = Store(engine)
    assert store.schema_revision() is None
    assert not store.is_migrated()
    # What start-up reads, without Alembic, to tell whether to migrate: the same answers.
    assert (current_revision(engine), is_current(engine)) == (None, False)

    upgrade(engine)
    assert table_names(engine) == set(metadata.tables) | {VERSION_TABLE}
    assert store.schema_revision() == head_revision()
    assert store.is_migrated()
    assert (current_revision(engine), is_current(engine)) == (head_revision(), True)

    downgrade(engine, "base")
    assert table_names(engine) <= {VERSION_TABLE}
    assert store.schema_revision() is None
    assert not store.is_migrated()
    assert (current_revision(engine), is_current(engine)) == (None, False)

    upgrade(engine)
    assert table_names(engine) == set(metadata.tables) | {VERSION_TABLE}
    assert store.is_migrated()
    assert schema_differences(engine) == []


def test_upgrade_is_idempotent(engine: sa.Engine) -> None:
    upgrade(engine)
    upgrade(engine)
    assert Store(engine).is_migrated()
    assert schema_differences(engine) == []


def test_every_revision_steps_down_and_up_again(engine: sa.Engine) -> None:
    revisions = revisions_oldest_first(engine)
    assert revisions, "no migration revisions"
    assert revisions[-1] == head_revision()
    for revision in revisions:
        upgrade(engine, revision)
        before = table_names(engine)
        downgrade(engine, "-1")
        upgrade(engine, revision)
        assert table_names(engine) == before
        assert Store(engine).schema_revision() == revision


def test_schema_after_upgrade_matches_the_metadata(engine: sa.Engine) -> None:
    upgrade(engine)
    assert schema_differences(engine) == []


def test_primary_key_names_match_the_metadata(engine: sa.Engine) -> None:
    """compare_metadata ignores constraint names; the house rule wants them explicit."""
    upgrade(engine)
    inspector = sa.inspect(engine)
    for table in metadata.sorted_tables:
        reflected = inspector.get_pk_constraint(table.name)
        assert reflected["name"] == table.primary_key.name, table.name
        assert reflected["constrained_columns"] == [c.name for c in table.primary_key.columns]


def test_unique_constraint_names_match_the_metadata(engine: sa.Engine) -> None:
    upgrade(engine)
    inspector = sa.inspect(engine)
    for table in metadata.sorted_tables:
        uniques = {
            (c.name, tuple(col.name for col in c.columns))
            for c in table.constraints
            if isinstance(c, sa.UniqueConstraint)
        }
        reflected = {
            (c["name"], tuple(c["column_names"]))
            for c in inspector.get_unique_constraints(table.name)
        }
        assert reflected == uniques, table.name


def test_token_counts_have_no_rowid_on_sqlite(engine: sa.Engine) -> None:
    """The key is the table: one b-tree per row instead of a table and a key index."""
    if engine.dialect.name != "sqlite":
        pytest.skip("WITHOUT ROWID is SQLite's")
    upgrade(engine)
    with engine.connect() as conn:
        sql = conn.execute(
            sa.text("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'token_count'")
        ).scalar_one()
    assert "WITHOUT ROWID" in sql


def test_check_constraint_names_match_the_metadata(engine: sa.Engine) -> None:
    upgrade(engine)
    inspector = sa.inspect(engine)
    for table in metadata.sorted_tables:
        checks = {c.name for c in table.constraints if isinstance(c, sa.CheckConstraint)}
        reflected = {c["name"] for c in inspector.get_check_constraints(table.name)}
        assert reflected == checks, table.name


def test_downgrade_to_base_drops_every_table_with_its_rows(engine: sa.Engine) -> None:
    upgrade(engine)
    row = {"scope_id": 1, "token_id": 1, "seen_day": 0}
    row.update(dict.fromkeys(("ham_messages", "ham_occurrences"), 1))
    row.update(dict.fromkeys(("spam_messages", "spam_occurrences"), 0))
    with engine.begin() as conn:
        conn.execute(sa.insert(metadata.tables["token_count"]), row)
    downgrade(engine, "base")
    upgrade(engine)
    with engine.connect() as conn:
        assert (
            conn.execute(
                sa.select(sa.func.count()).select_from(metadata.tables["token_count"])
            ).scalar()
            == 0
        )


def test_a_database_migrated_by_a_newer_release_is_refused_by_name(engine: sa.Engine) -> None:
    """A revision this release does not know (a newer release migrated the database) is a
    ConfigurationError naming it, not Alembic's traceback; the database is left as it is."""
    upgrade(engine)
    with engine.begin() as conn:
        conn.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = '9999'"))
    with pytest.raises(ConfigurationError, match="schema revision 9999, which this release"):
        upgrade(engine)
    assert Store(engine).schema_revision() == "9999"
    assert not Store(engine).is_migrated()
    assert (current_revision(engine), is_current(engine)) == ("9999", False)
    # A service's start-up meets the same refusal: not current, so it goes to the upgrade.
    url = engine.url.render_as_string(hide_password=False)
    with pytest.raises(ConfigurationError, match="schema revision 9999, which this release"):
        build_service(Settings(_env_file=None, database_url=url), migrate=True)


def test_the_schema_revision_constant_is_alembics_head_and_revisions_sort_in_order(
    engine: sa.Engine,
) -> None:
    """``tables.SCHEMA_REVISION`` is what a process that never migrates compares the
    database's revision with (by string order, so every revision is four digits, in order)."""
    revisions = revisions_oldest_first(engine)
    assert SCHEMA_REVISION == head_revision() == revisions[-1]
    assert revisions == [f"{n:04d}" for n in range(1, len(revisions) + 1)]
    upgrade(engine)
    Store(engine).refuse_newer_schema()  # at the head: nothing to refuse


def test_start_up_reads_the_revision_beside_a_writer_without_waiting(
    engine: sa.Engine, tmp_path: Path
) -> None:
    """The revision is read in a read transaction: on SQLite it does not queue behind a
    writer that holds the database (with a 0.2 s busy timeout, a write would give up)."""
    upgrade(engine)
    if engine.dialect.name != "sqlite":
        assert current_revision(engine) == SCHEMA_REVISION
        return
    impatient = make_engine(engine.url.render_as_string(hide_password=False), busy_timeout_ms=200)
    writer = sqlite3.connect(engine.url.database or "", isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE alembic_version SET version_num = version_num")
        assert current_revision(impatient) == SCHEMA_REVISION
        assert is_current(impatient)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        impatient.dispose()


def test_a_file_that_is_no_database_fails_start_up_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not an SQLite database, just text" * 100)
    url = f"sqlite:///{path}"
    engine = make_engine(url)
    try:
        with pytest.raises(StorageUnavailable, match="not a database"):
            current_revision(engine)
    finally:
        engine.dispose()
    with pytest.raises(StorageUnavailable, match="not a database"):
        build_service(Settings(_env_file=None, database_url=url), migrate=True)


def test_processes_starting_at_once_on_a_new_database_all_start(
    engine: sa.Engine, tmp_path: Path
) -> None:
    """serve, spamd and milter started together at boot, each migrating a new database: the
    later ones wait for the first's migration instead of failing on the tables it created.
    The processes import first, then start together. A race, so not every run shows it:
    without the lock, one of them failed in about half of such runs on PostgreSQL; on a new
    SQLite file, about one run in forty failed with "database is locked" until a
    connection's switch to WAL was tried again while another switched
    (``tests/storage/test_write_lock.py`` shows that race on its own)."""
    import subprocess
    import sys
    import time

    url = engine.url.render_as_string(hide_password=False)
    go = tmp_path / "go"
    start = (
        "import os, sys, time; from app.bootstrap import build_service; "
        "from app.settings.schema import Settings; open(sys.argv[2], 'w').close()\n"
        "while not os.path.exists(sys.argv[3]): time.sleep(0.001)\n"
        "build_service(Settings(_env_file=None, database_url=sys.argv[1]), migrate=True).close()"
    )
    ready = [tmp_path / f"ready{n}" for n in range(4)]
    argv = [sys.executable, "-c", start, url]
    starts = [subprocess.Popen([*argv, str(r), str(go)], stderr=subprocess.PIPE) for r in ready]
    deadline = time.monotonic() + 60
    while not all(r.exists() for r in ready) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    errors = [(p.communicate(timeout=120)[1], p.returncode) for p in starts]
    assert [err.decode() for err, code in errors if code] == []
    assert current_revision(engine) == SCHEMA_REVISION
