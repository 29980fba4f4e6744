"""Engine construction for SQLite (embedded default) and PostgreSQL (psycopg 3).

A URL that cannot work ends here as one ConfigurationError whose text never repeats the URL
(it may hold a password): a malformed URL, a database other than SQLite or PostgreSQL, or a
driver that is not installed.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from app.errors import ConfigurationError, StorageUnavailable
from app.storage import driver

EXPECTED = "sqlite:///PATH or postgresql://USER:PASSWORD@HOST[:PORT]/DATABASE"
# The drivers the storage layer is written and tested for (dialect.py knows these two).
_SUPPORTED = {"sqlite": ("", "pysqlite"), "postgresql": ("psycopg",)}
# A writer waiting for SQLite's lock tries again after 0.1 ms, then twice as long each time,
# never more than 2 ms apart.
_FIRST_PAUSE = 0.0001
_LONGEST_PAUSE = 0.002
_SQLITE_BUSY = 5  # sqlite3.SQLITE_BUSY; extended codes (BUSY_SNAPSHOT, ...) share its low byte
# Files and folders this project creates hold every sender, subject and user name learned or
# judged: their owner's only, whatever the umask (SQLite alone would make 0644 under 022).
PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700
_NEW_FILE = "spamfilter_new_file"  # connection record info: SQLite creates the file now


def normalise_url(url: str) -> str:
    """Pick our drivers: ``postgresql://`` means psycopg 3, ``sqlite://`` the stdlib module."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def make_engine(url: str, pool_size: int = 5, busy_timeout_ms: int = 30_000) -> Engine:
    """An engine for ``url``; a SQLite file's folder is created when missing.

    SQLite runs in WAL mode with synchronous=NORMAL (readers never block the writer; a crash
    can lose the last commits but never corrupts) and a busy timeout, and pysqlite's own
    transaction handling is replaced by explicit BEGIN, or BEGIN IMMEDIATE for a write, which
    waits for another writer in short steps (``begin_immediate``).
    """
    parsed = parse_url(url)
    try:
        if parsed.get_backend_name() == "sqlite":
            return _sqlite_engine(parsed, busy_timeout_ms)
        return create_engine(
            parsed, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True
        )
    except (ArgumentError, NoSuchModuleError, ValueError) as error:
        raise ConfigurationError(f"unusable database URL; expected {EXPECTED}") from error
    except ImportError as error:
        raise ConfigurationError(
            f"the driver of {parsed.drivername!r} databases is not installed"
        ) from error


def parse_url(url: str) -> URL:
    """``url`` parsed and checked to name a database we support (ConfigurationError if not)."""
    try:
        parsed = make_url(normalise_url(url))
    except (ArgumentError, ValueError) as error:
        # The parser's message may quote a piece of the URL, password included.
        raise ConfigurationError(f"unusable database URL; expected {EXPECTED}") from error
    backend, _, driver = parsed.drivername.partition("+")
    if driver not in _SUPPORTED.get(backend, ()):
        raise ConfigurationError(f"unsupported database {parsed.drivername!r}; expected {EXPECTED}")
    return parsed


def _sqlite_engine(parsed: URL, busy_timeout_ms: int) -> Engine:
    database = parsed.database
    created: str | None = None  # the file, made private when a connection creates it
    if database and database != ":memory:" and not database.startswith("file:"):
        # One absolute path, fixed now: the folder created, the file checked (sqlite_file.py)
        # and the file SQLite opens are the same whatever the working folder becomes later.
        path = Path(os.path.abspath(Path(database).expanduser()))
        try:
            make_private_folder(path.parent)
        except OSError as error:
            raise StorageUnavailable(
                f"cannot create the database folder {path.parent}: {error.strerror or error}"
            ) from error
        parsed = parsed.set(database=str(path))
        created = str(path)
    engine = create_engine(parsed, connect_args={"timeout": busy_timeout_ms / 1000})

    @event.listens_for(engine, "do_connect")
    def _note_new_file(_dialect: Any, record: Any, _cargs: Any, _cparams: Any) -> None:
        if created is not None and not os.path.exists(created):
            record.info[_NEW_FILE] = True

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, record: Any) -> None:
        if created is not None and record.info.pop(_NEW_FILE, False):
            make_private(created)  # before WAL mode: SQLite gives -wal and -shm its mode
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        use_wal(cursor, busy_timeout_ms / 1000)
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        if conn.get_execution_options().get("spamfilter_write", True):
            begin_immediate(conn, busy_timeout_ms / 1000)
        else:
            driver.rows(conn, "BEGIN")

    return engine


def make_private_folder(folder: Path) -> None:
    """Create ``folder`` and each missing parent readable by their owner only (0700)."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for new in reversed(missing):
        new.mkdir(mode=PRIVATE_FOLDER, exist_ok=True)


def make_private(path: str | Path) -> None:
    """Make the file at ``path``, just created by this process, its owner's only (0600)."""
    with contextlib.suppress(FileNotFoundError):
        os.chmod(path, PRIVATE_FILE)


def begin_immediate(
    conn: Connection,
    timeout: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """BEGIN IMMEDIATE on SQLite, trying again every fraction of a millisecond while another
    writer holds the database, for up to ``timeout`` seconds; then its "database is locked".

    SQLite's own busy handler sleeps 1, 2, 5, 10, 15, 20, 25 ... ms between tries, so a writer
    that found the lock taken slept on well after a learn of a few milliseconds had let it go:
    two processes learning at once managed fewer learns a second than one. The busy timeout
    is off while this waits (``PRAGMA busy_timeout=0``), and ``timeout`` again for the rest
    of the transaction.
    """
    driver = conn.connection.dbapi_connection
    assert driver is not None
    driver.execute("PRAGMA busy_timeout=0")
    try:
        _while_busy(lambda: conn.exec_driver_sql("BEGIN IMMEDIATE"), timeout, clock, sleep)
    finally:
        driver.execute(f"PRAGMA busy_timeout={round(timeout * 1000)}")


def use_wal(
    cursor: Any,
    timeout: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """``PRAGMA journal_mode=WAL`` on a new connection's DBAPI ``cursor``, tried again while
    another connection holds the lock, for up to ``timeout`` seconds.

    Switching a new file to WAL takes its exclusive lock. When two connections switch at once
    (several processes starting on a new database), SQLite sees a deadlock and fails one of
    them at once with SQLITE_BUSY, without its busy handler: a process started beside another
    stopped with "database is locked" (11 of 160 connections, four processes at a time on new
    files, before this retried).
    """
    _while_busy(lambda: cursor.execute("PRAGMA journal_mode=WAL"), timeout, clock, sleep)


def _while_busy(
    run: Callable[[], object],
    timeout: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> None:
    """``run()``, tried again after 0.1 ms, then twice as long each time (at most 2 ms), while
    it fails with SQLITE_BUSY, for up to ``timeout`` seconds; then its error."""
    deadline = clock() + timeout
    pause = _FIRST_PAUSE
    while True:
        try:
            run()
            return
        except Exception as error:  # SQLAlchemy's or the driver's; re-raised unless busy
            if not _is_busy(getattr(error, "orig", error)) or clock() >= deadline:
                raise
        sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE)


def _is_busy(error: BaseException | None) -> bool:
    """True when the driver's ``error`` is SQLITE_BUSY or one of its extended codes."""
    code = getattr(error, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF == _SQLITE_BUSY
