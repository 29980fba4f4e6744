"""Private by default (issue 30, row 8): under umask 022 the database, its -wal and -shm,
the folders made for it, backups and exports are their owner's only; an existing database
that others may read is warned about, not refused, and its mode is left as it is."""

from __future__ import annotations

import logging
import os
import random
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.bootstrap import build_service, migrate_database
from app.cli import cli
from app.settings.schema import Settings
from tests.builders import spam_message
from tests.environment import drop_settings


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def settings_for(path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    drop_settings(monkeypatch)
    return Settings(_env_file=None, database_url=f"sqlite:///{path}")


def test_a_new_database_its_wal_shm_and_folders_are_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    existing = tmp_path / "srv"
    existing.mkdir()  # 0755 under umask 022
    path = existing / "var" / "spamfilter" / "spamfilter.db"
    service = build_service(settings_for(path, monkeypatch))
    try:
        service.learn(spam_message(random.Random(1), 1), "spam")
        companions = [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")]
        assert all(name.exists() for name in companions)  # held open by the pool
        assert [mode(name) for name in (path, *companions)] == [0o600, 0o600, 0o600]
    finally:
        service.close()
    assert mode(path.parent) == mode(path.parent.parent) == 0o700
    assert mode(existing) == 0o755  # a folder that was there is left as it was


def test_backups_and_exports_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "spamfilter.db"
    settings_for(path, monkeypatch)
    monkeypatch.setenv("SPAMFILTER_DATABASE_URL", f"sqlite:///{path}")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for args in (["backup", "copy.db"], ["export", "-o", "export.tsv"]):
        done = runner.invoke(cli, args, catch_exceptions=False)
        assert done.exit_code == 0, done.output
    assert mode(tmp_path / "copy.db") == mode(tmp_path / "export.tsv") == 0o600


def test_a_database_others_may_read_is_warned_about_and_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "spamfilter.db"
    settings = settings_for(path, monkeypatch)
    migrate_database(settings)
    with caplog.at_level(logging.WARNING, "app.bootstrap"):
        migrate_database(settings)
    assert not caplog.records  # 0600: nothing to say
    path.chmod(0o644)  # as an older release made it
    with caplog.at_level(logging.WARNING, "app.bootstrap"):
        migrate_database(settings)
    assert [record.getMessage() for record in caplog.records] == [
        f"the database file {path} is readable by others than its owner (mode 0644), though "
        "it holds every sender, subject and user name learned or judged: "
        f"'chmod 600 {path}' unless that is meant (its -wal and -shm follow its mode)"
    ]
    assert mode(path) == 0o644
