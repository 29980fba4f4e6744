"""A SQLite file deleted, replaced or made read-only under a running service.

Every test runs the real service (``build_service``) on a real file in tmp_path and causes
the fault for real (``rm``, ``mv``, ``chattr +i``: see tests/storage/faults.py). What must
hold: a write is either refused with StorageUnavailable (503, spamd 75, milter tempfail) or
is in the file at the path afterwards; readiness is false while the fault lasts; the service
recovers without a restart once the file is back, migrated and writable.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.api.app import create_app
from app.bootstrap import build_service, migrate_database
from app.errors import StorageUnavailable
from app.service import Outcome, SpamFilter
from app.settings.schema import Settings
from tests.adapters.peers import require_root
from tests.builders import ham_message, spam_message
from tests.environment import drop_settings
from tests.storage.faults import (
    UNPRIVILEGED,
    as_unprivileged,
    immutable,
    remove_database,
    unprivileged_folder,
)

Message = Callable[[int], bytes]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    return folder / "spamfilter.db"


@pytest.fixture
def settings(path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    drop_settings(monkeypatch)
    return Settings(_env_file=None, database_url=f"sqlite:///{path}", training_mode="everything")


@pytest.fixture
def service(settings: Settings) -> Iterator[SpamFilter]:
    service = build_service(settings)
    yield service
    service.close()


def message(serial: int) -> bytes:
    """A distinct message per serial (spam for odd serials)."""
    rng = random.Random(serial)
    return (spam_message if serial % 2 else ham_message)(rng, serial)


def label(serial: int) -> str:
    return "spam" if serial % 2 else "ham"


def kept(settings: Settings, serials: list[int]) -> list[int]:
    """The serials whose learning is in the file at the path (a new service reads it)."""
    fresh = build_service(settings, migrate=False)
    try:
        return [
            s for s in serials if fresh.learn(message(s), label(s)).outcome is Outcome.UNCHANGED
        ]
    finally:
        fresh.close()


def test_a_deleted_database_refuses_writes_and_is_not_recreated(
    service: SpamFilter, settings: Settings, path: Path
) -> None:
    assert service.learn(message(1), "spam").outcome is Outcome.LEARNED
    remove_database(path)

    with pytest.raises(StorageUnavailable, match="missing"):
        service.learn(message(2), "ham")
    assert not service.is_ready()
    with pytest.raises(StorageUnavailable):
        service.classify(message(1))
    assert not path.exists(), "a write or read must not start an empty database"

    migrate_database(settings)  # `spamfilter db upgrade`: the operator's decision
    assert service.is_ready()
    assert service.learn(message(2), "ham").outcome is Outcome.LEARNED
    assert kept(settings, [2]) == [2]


def test_a_replaced_database_is_refused_once_then_used_when_migrated(
    service: SpamFilter, settings: Settings, path: Path
) -> None:
    assert service.learn(message(1), "spam").outcome is Outcome.LEARNED
    restored = path.with_name("restored.db")
    migrate_database(settings.model_copy(update={"database_url": f"sqlite:///{restored}"}))
    os.replace(restored, path)  # `mv restored.db spamfilter.db` under the running service

    with pytest.raises(StorageUnavailable, match="replaced"):
        service.learn(message(2), "ham")
    assert service.is_ready()  # the new file is at the newest revision: adopted
    assert service.learn(message(3), "spam").outcome is Outcome.LEARNED
    assert service.stats().labels["spam"].messages == 1  # only what the new file holds
    service.close()
    assert kept(settings, [1, 2, 3]) == [3]


def test_a_database_replaced_by_an_unmigrated_file_waits_for_db_upgrade(
    service: SpamFilter, settings: Settings, path: Path
) -> None:
    service.learn(message(1), "spam")
    empty = path.with_name("empty.db")
    empty.touch()
    os.replace(empty, path)

    with pytest.raises(StorageUnavailable, match="replaced"):
        service.learn(message(2), "ham")
    with pytest.raises(StorageUnavailable, match="db upgrade"):
        service.learn(message(2), "ham")
    assert not service.is_ready()

    migrate_database(settings)
    assert service.is_ready()
    assert service.learn(message(2), "ham").outcome is Outcome.LEARNED


def test_what_is_acknowledged_is_in_the_file_at_the_path(
    service: SpamFilter, settings: Settings, path: Path
) -> None:
    """Through a restore and a delete, a learn either fails or is in the current file."""
    acknowledged: list[int] = []

    def learn(serials: range) -> None:
        for serial in serials:
            try:
                service.learn(message(serial), label(serial))
            except StorageUnavailable:
                continue
            acknowledged.append(serial)

    learn(range(1, 4))
    backup = path.with_name("backup.db")
    migrate_database(settings.model_copy(update={"database_url": f"sqlite:///{backup}"}))
    os.replace(backup, path)  # a restore: what 1-3 added is gone, by the operator's choice
    acknowledged.clear()
    learn(range(4, 8))
    assert acknowledged == [5, 6, 7]
    assert kept(settings, list(range(1, 8))) == [5, 6, 7]

    remove_database(path)
    acknowledged.clear()
    learn(range(8, 10))
    assert acknowledged == []
    migrate_database(settings)
    learn(range(10, 13))
    service.close()
    assert kept(settings, list(range(1, 13))) == acknowledged == [10, 11, 12]


def test_a_read_only_file_refuses_writes_until_it_is_writable_again(
    service: SpamFilter, path: Path
) -> None:
    """chattr +i stands for ``chmod a-w`` (root ignores the mode bits; see faults.py)."""
    service.learn(message(1), "spam")
    with immutable(path):
        with pytest.raises(StorageUnavailable, match="read-only"):
            service.learn(message(2), "ham")
        assert not service.is_ready()
        assert service.classify(message(1)).tokens > 0  # reading still works
    assert service.learn(message(2), "ham").outcome is Outcome.LEARNED
    assert service.is_ready()


def test_a_read_only_folder_without_a_wal_refuses_writes_until_fixed(
    service: SpamFilter, path: Path
) -> None:
    service.learn(message(1), "spam")
    service.close()  # the last connection removes -wal and -shm: SQLite must create them
    assert not path.with_name(path.name + "-wal").exists()
    with immutable(path.parent):
        with pytest.raises(StorageUnavailable, match="read-only"):
            service.learn(message(2), "ham")
        assert not service.is_ready()
    assert service.learn(message(2), "ham").outcome is Outcome.LEARNED
    assert service.is_ready()


def test_a_connection_opened_read_only_is_replaced_after_its_write_fails(
    service: SpamFilter, path: Path
) -> None:
    """The path no check sees: a read opens a connection while the file is read-only (SQLite
    falls back to O_RDONLY), the file is fixed before any write or readiness probe. That
    connection's write fails with SQLite's own "attempt to write a readonly database"; the
    pool is renewed, and the next write works without a restart."""
    service.learn(message(1), "spam")
    service.close()
    with immutable(path):
        service.classify(message(1))  # the pool now holds a read-only connection
    with pytest.raises(StorageUnavailable, match="readonly database"):
        service.learn(message(2), "ham")
    assert service.learn(message(2), "ham").outcome is Outcome.LEARNED


def test_http_answers_503_while_the_file_is_gone_and_recovers(
    service: SpamFilter, settings: Settings, path: Path
) -> None:
    with TestClient(create_app(settings, service)) as client:
        learned = client.post("/v1/feedback", params={"label": "spam"}, content=message(1))
        assert learned.status_code == 200
        remove_database(path)

        refused = client.post("/v1/feedback", params={"label": "ham"}, content=message(2))
        assert refused.status_code == 503
        assert refused.json()["error"] == "storage_unavailable"
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["error"] == "storage_unavailable"
        assert not path.exists()

        migrate_database(settings)
        assert client.get("/readyz").status_code == 200
        again = client.post("/v1/feedback", params={"label": "ham"}, content=message(2))
        assert again.status_code == 200
        assert again.json()["outcome"] == "learned"


def _modes(path: Path) -> dict[str, str]:
    """The mode of the database file and of its -wal and -shm that exist."""
    found = {}
    for suffix in ("", "-wal", "-shm"):
        name = path.with_name(path.name + suffix)
        if name.exists():
            found[suffix or "db"] = f"{name.stat().st_mode & 0o777:04o}"
    return found


def _chmod_444_for_a_moment(path: Path) -> dict[str, object]:
    """Issue 30, row 1, as the service user: the file read-only for a moment, a classify
    meanwhile (SQLite makes -wal and -shm 0444), then writable again."""
    settings = Settings(_env_file=None, database_url=f"sqlite:///{path}")
    seen: dict[str, object] = {}
    service = build_service(settings, migrate=False)
    try:
        service.learn(message(1), "spam")
        os.chmod(path, 0o444)
        try:
            service.learn(message(2), "ham")
        except StorageUnavailable as error:
            seen["refused"] = str(error)
        seen["unready"] = service.readiness()
        service.classify(message(1))  # a reader, on a fresh connection
        seen["while"] = _modes(path)
        os.chmod(path, 0o644)
        seen["healed"] = service.learn(message(2), "ham").outcome.value
        seen["ready"] = service.readiness()
        seen["after"] = _modes(path)
        os.chmod(path, 0o444)
        with contextlib.suppress(StorageUnavailable):
            service.learn(message(3), "ham")
        service.classify(message(1))  # leaves 0444 -shm and -wal again, held open
        os.chmod(path, 0o644)
        restarted = build_service(settings, migrate=False, adapter="spamd")  # a restart
        seen["restarted"] = restarted.learn(message(3), "ham").outcome.value
        restarted.close()
    finally:
        service.close()
    return seen


def test_a_shm_left_read_only_by_a_reader_heals_without_a_restart(
    service: SpamFilter, settings: Settings, path: Path
) -> None:
    """Runs as an unprivileged user (mode bits bind it): a 0444 -shm and -wal left by a
    reader while the file was read-only are given the file's mode again once it is writable,
    so writes resume, in the running service and after a restart."""
    require_root("dropping to another user")
    service.learn(message(9), "spam")  # every module the scenario needs, imported now
    service.classify(message(9))
    build_service(settings, migrate=False, adapter="spamd").close()
    with unprivileged_folder() as folder:
        copy = folder / "spamfilter.db"
        migrate_database(settings.model_copy(update={"database_url": f"sqlite:///{copy}"}))
        os.chown(copy, UNPRIVILEGED, UNPRIVILEGED)
        seen = as_unprivileged(lambda: _chmod_444_for_a_moment(copy))
    assert isinstance(seen, dict)
    assert seen["refused"] == seen["unready"]
    assert str(seen["refused"]).startswith("read-only: spamfilter.db cannot be written (mode 0444")
    assert seen["while"] == {"db": "0444", "-wal": "0444", "-shm": "0444"}
    assert seen["healed"] == "learned"
    assert seen["ready"] is None
    assert seen["after"] == {"db": "0644", "-wal": "0644", "-shm": "0644"}
    assert seen["restarted"] == "learned"


def test_a_start_that_cannot_write_names_the_file_and_the_fix(settings: Settings) -> None:
    """A -shm another user left read-only (it cannot be given back its mode): start-up ends
    with one line naming that file and the fix, not SQLite's "readonly database"."""
    require_root("files of another user")
    build_service(settings, migrate=False, adapter="spamd").close()  # imports, before forking
    with unprivileged_folder() as folder:
        copy = folder / "spamfilter.db"
        moved = settings.model_copy(update={"database_url": f"sqlite:///{copy}"})
        migrate_database(moved)
        os.chown(copy, UNPRIVILEGED, UNPRIVILEGED)
        shm = copy.with_name("spamfilter.db-shm")
        shm.write_bytes(b"")
        shm.chmod(0o444)  # owned by root

        def start() -> str:
            try:
                migrate_database(moved)
            except StorageUnavailable as error:
                return str(error)
            return "started"

        said = as_unprivileged(start)
    assert said == (
        f"cannot write {shm} (mode 0444, owner uid 0): make it writable by the service's "
        "user (chown, or chmod u+w), or remove it while no process has the database open"
    )
