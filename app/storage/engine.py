"""Engine construction for SQLite (embedded default) and PostgreSQL (psycopg 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from app.errors import ConfigurationError, StorageUnavailable


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
    transaction handling is replaced by explicit BEGIN [IMMEDIATE] (see ``_begin``).
    """
    try:
        parsed = make_url(normalise_url(url))
        if parsed.get_backend_name() == "sqlite":
            return _sqlite_engine(parsed.render_as_string(hide_password=False), busy_timeout_ms)
        return create_engine(
            parsed, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True
        )
    except (ArgumentError, NoSuchModuleError, ValueError) as error:
        raise ConfigurationError(f"unusable database URL: {error}") from error


def _sqlite_engine(url: str, busy_timeout_ms: int) -> Engine:
    parsed = make_url(url)
    if parsed.database and parsed.database != ":memory:":
        folder = Path(parsed.database).expanduser().parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StorageUnavailable(
                f"cannot create the database folder {folder}: {error}"
            ) from error
    engine = create_engine(url, connect_args={"timeout": busy_timeout_ms / 1000})

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        write = conn.get_execution_options().get("spamfilter_write", True)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine
