"""An online copy of a live SQLite database, through SQLite's backup API.

The copy is read through a connection of the running engine inside one read transaction, so
it is the committed state at one moment, WAL contents included, while other connections and
processes go on writing (in WAL mode a reader never blocks a writer). It is written to a
temporary file beside the destination and renamed into place when complete, so the path never
names a half-written database. The copy is readable by its owner only (0600).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from sqlalchemy import Engine

from app.errors import StorageUnavailable, TransferRefused
from app.storage.engine import PRIVATE_FILE

PG_DUMP_HINT = (
    "backup copies SQLite databases only; back up PostgreSQL with "
    "'pg_dump -Fc' (or move the learned data with 'spamfilter export')"
)


def copy_sqlite(engine: Engine, destination: Path, overwrite: bool = False) -> int:
    """Copy the engine's SQLite database to ``destination``; returns its size in bytes.

    TransferRefused on PostgreSQL (see PG_DUMP_HINT) and, unless ``overwrite``, when
    ``destination`` exists. The copy is a rollback-journal database: a single file.
    """
    if engine.dialect.name != "sqlite":
        raise TransferRefused(PG_DUMP_HINT)
    if destination.exists() and not overwrite:
        raise TransferRefused(f"{destination} exists; pass --force to overwrite it")
    partial = destination.with_name(f".{destination.name}.partial")
    partial.unlink(missing_ok=True)
    # Created here, empty, so that it is its owner's only from the start (SQLite would make
    # it 0644 under umask 022); an empty file is an empty database to SQLite.
    try:
        os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    except OSError as error:
        raise StorageUnavailable(f"backup failed: {error.strerror or error}") from error
    raw = engine.raw_connection()
    try:
        source = raw.driver_connection
        if not isinstance(source, sqlite3.Connection):  # pragma: no cover - pysqlite only
            raise TransferRefused("backup needs the sqlite3 driver")
        target = sqlite3.connect(partial)
        try:
            # pages=-1 (the default): one step, under one read transaction, so the copy is
            # one consistent state even while other connections write.
            source.backup(target)
            target.execute("PRAGMA journal_mode=DELETE")
        finally:
            target.close()
    except sqlite3.Error as error:
        partial.unlink(missing_ok=True)
        raise StorageUnavailable(f"backup failed: {error}") from error
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    finally:
        raw.close()
    os.replace(partial, destination)
    return destination.stat().st_size
