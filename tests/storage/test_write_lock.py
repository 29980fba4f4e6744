"""A SQLite writer that finds the database locked tries again in short pauses, not SQLite's
own growing sleeps, and still gives up with "database is locked" after its timeout."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import OperationalError

from app.errors import StorageUnavailable
from app.storage import engine as engine_module
from app.storage.engine import begin_immediate, make_engine
from app.storage.store import Store


@pytest.fixture
def path(tmp_path: Path) -> Path:
    file = tmp_path / "lock.db"
    with sqlite3.connect(file) as setup:
        setup.execute("PRAGMA journal_mode=WAL")
        setup.execute("CREATE TABLE t (x INTEGER)")
    return file


@pytest.fixture
def holder(path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection, holding the write lock until the test lets it go."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    yield other
    if other.in_transaction:
        other.execute("ROLLBACK")
    other.close()


@pytest.fixture
def plain(path: Path) -> Iterator[Engine]:
    """An engine that issues no BEGIN of its own, so the test calls ``begin_immediate``."""
    engine = create_engine(f"sqlite:///{path}")

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None

    yield engine
    engine.dispose()


def busy_timeout(conn: Connection) -> int:
    return int(conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one())


def test_a_waiting_writer_tries_again_in_short_growing_pauses(
    plain: Engine, holder: sqlite3.Connection
) -> None:
    pauses: list[float] = []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 7:
            holder.execute("COMMIT")  # the other writer is done

    with plain.connect() as conn:
        conn.exec_driver_sql("PRAGMA busy_timeout=0")
        begin_immediate(conn, 60.0, clock=lambda: 0.0, sleep=sleep)
        driver = conn.connection.dbapi_connection
        assert driver is not None and driver.in_transaction
        conn.exec_driver_sql("INSERT INTO t VALUES (1)")  # it holds the write lock
        assert busy_timeout(conn) == 60_000  # SQLite's own wait is on for the rest
        conn.exec_driver_sql("COMMIT")
    assert pauses == pytest.approx([0.0001, 0.0002, 0.0004, 0.0008, 0.0016, 0.002, 0.002])


def test_a_writer_gives_up_as_locked_after_its_timeout(
    plain: Engine, holder: sqlite3.Connection
) -> None:
    now = [0.0]
    pauses: list[float] = []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        now[0] += 1.0

    with plain.connect() as conn:
        conn.exec_driver_sql("PRAGMA busy_timeout=0")
        with pytest.raises(OperationalError, match="database is locked"):
            begin_immediate(conn, 3.0, clock=lambda: now[0], sleep=sleep)
        assert len(pauses) == 3  # tried at 0, 1, 2 and 3 s
        assert busy_timeout(conn) == 3_000


def test_a_write_reports_a_lock_held_too_long_and_waits_for_one_let_go(
    path: Path, holder: sqlite3.Connection
) -> None:
    impatient = make_engine(f"sqlite:///{path}", busy_timeout_ms=200)
    try:
        with pytest.raises(StorageUnavailable), Store(impatient).transaction(write=True):
            pass
    finally:
        impatient.dispose()
    engine = make_engine(f"sqlite:///{path}")
    release = threading.Timer(0.05, lambda: holder.execute("COMMIT"))
    try:
        release.start()
        with Store(engine).transaction(write=True) as tx:  # waits until the holder commits
            assert tx is not None
    finally:
        release.join()
        engine.dispose()


@pytest.mark.parametrize("write", [True, False])
def test_only_write_transactions_take_the_lock_this_way(
    path: Path, write: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[float] = []

    def spy(conn: Connection, timeout: float) -> None:
        calls.append(timeout)
        begin_immediate(conn, timeout)

    monkeypatch.setattr(engine_module, "begin_immediate", spy)
    engine = make_engine(f"sqlite:///{path}", busy_timeout_ms=1500)
    try:
        with Store(engine).transaction(write=write):
            pass
    finally:
        engine.dispose()
    assert calls == ([1.5] if write else [])


class _Cursor:
    """A DBAPI cursor whose first ``busy`` executes fail as SQLite's deadlocked lock does."""

    def __init__(self, busy: int, code: int = sqlite3.SQLITE_BUSY) -> None:
        self.busy, self.code, self.statements = busy, code, list[str]()

    def execute(self, statement: str) -> None:
        self.statements.append(statement)
        if self.busy:
            self.busy -= 1
            error = sqlite3.OperationalError("database is locked")
            error.sqlite_errorcode = self.code  # type: ignore[attr-defined]
            raise error


def test_switching_to_wal_tries_again_while_another_connection_switches() -> None:
    cursor, pauses = _Cursor(busy=3), list[float]()
    engine_module.use_wal(cursor, 5.0, clock=lambda: 0.0, sleep=pauses.append)
    assert cursor.statements == ["PRAGMA journal_mode=WAL"] * 4
    assert pauses == [0.0001, 0.0002, 0.0004]


def test_switching_to_wal_gives_up_after_the_timeout_and_on_other_errors() -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        engine_module.use_wal(_Cursor(busy=10**6), 0.5, clock=lambda: now[0], sleep=sleep)
    assert 0.5 <= now[0] < 0.51
    cursor = _Cursor(busy=1, code=sqlite3.SQLITE_IOERR)
    with pytest.raises(sqlite3.OperationalError):
        engine_module.use_wal(cursor, 5.0, clock=lambda: 0.0, sleep=lambda _s: None)
    assert len(cursor.statements) == 1


def _connect_at(url: str, start: float, results: Any) -> None:
    import time

    while time.time() < start:
        pass
    try:
        engine = make_engine(url)
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
        engine.dispose()
        results.put("ok")
    except Exception as error:  # the test counts every failure, whatever it is
        results.put(repr(error))


@pytest.mark.skipif(
    "fork" not in __import__("multiprocessing").get_all_start_methods(), reason="needs fork"
)
def test_processes_opening_a_new_file_at_once_all_connect(tmp_path: Path) -> None:
    """Four processes open a new SQLite file in the same instant, twenty times over: every
    connection is made. Without ``use_wal``'s retry some failed with "database is locked"
    (their switches to WAL deadlocked): this test failed in 8 of 10 runs."""
    import multiprocessing
    import time

    context = multiprocessing.get_context("fork")
    results = context.Queue()
    outcomes: list[str] = []
    for run in range(20):
        url = f"sqlite:///{tmp_path / f'new{run}.db'}"
        start = time.time() + 0.05
        workers = [
            context.Process(target=_connect_at, args=(url, start, results)) for _ in range(4)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        outcomes += [results.get(timeout=10) for _ in workers]
    assert outcomes == ["ok"] * 80
