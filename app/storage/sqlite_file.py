"""The SQLite file under a running service: deleted, replaced, or turned read-only.

Pooled SQLite connections hold the database open by descriptor, not by name. When the file is
deleted (``rm``) or replaced (``mv other.db spamfilter.db``, a restore) they go on reading and
writing the old inode: every write is acknowledged and lost. So the store remembers the
file's identity (``st_dev``, ``st_ino``) and compares it with the path before and after every
write transaction; this module holds that identity and the file-system questions around it.

A file that has existed is never created again by a connection: connections open it with
``mode=rw``, so a write to a deleted database fails instead of silently starting an empty one
that would look like lost training (``spamfilter db upgrade`` or a restore puts it back).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, event

log = logging.getLogger(__name__)

FileId = tuple[int, int]
"""``(st_dev, st_ino)``: which file a path names."""

# Checked with faccessat(AT_EACCESS) where the platform has it, so a service whose real and
# effective users differ is judged by the user it writes as.
_EFFECTIVE = os.access in os.supports_effective_ids
_OPENED = "spamfilter_file_opened"  # connection record info: the file identity at connect


class DatabaseFile:
    """The path of a SQLite database and the identity of the file the pool has open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # As strings once: Path arithmetic made a check ~15 µs instead of ~9 µs.
        self._folder = str(path.parent)
        self._companions = [f"{path}-wal", f"{path}-shm"]
        self.known: FileId | None = identity(path)
        # Once the file has existed, connections must never create it again.
        self._existed = self.known is not None

    def found(self) -> FileId | None:
        """The identity of the file at the path now (None when there is none)."""
        found = identity(self.path)
        if found is not None:
            self._existed = True
        return found

    def writable(self) -> bool:
        """True when SQLite can write here: the file, and its -wal and -shm or the folder.

        WAL mode writes to ``<db>-wal`` and maps ``<db>-shm``; when they do not exist yet
        (the last connection removes them) the folder must let SQLite create them.
        """
        if not _access(self.path):
            return False
        return _access(self._folder) or all(_access(name) for name in self._companions)

    def attach(self, engine: Engine) -> None:
        """Watch ``engine``'s connections: once the file existed they open it with
        ``mode=rw``, and one whose file left the path empties its WAL as it closes."""

        # Connections made before (the migrations') opened the file known now.
        known_now = self.known

        @event.listens_for(engine, "do_connect")
        def _open_existing(
            _dialect: Any, _record: Any, cargs: list[Any], cparams: dict[str, Any]
        ) -> None:
            if self._existed:
                cargs[:] = [f"file:{quote(str(self.path))}?mode=rw"]
                cparams["uri"] = True

        @event.listens_for(engine, "connect")
        def _remember(_dbapi_connection: Any, record: Any) -> None:
            record.info[_OPENED] = identity(self.path)

        @event.listens_for(engine, "close")
        def _release(dbapi_connection: Any, record: Any) -> None:
            opened = record.info.get(_OPENED, known_now)
            if opened is not None and identity(self.path) != opened:
                _empty_wal(dbapi_connection)


def identity(path: Path) -> FileId | None:
    """``(st_dev, st_ino)`` of the file ``path`` names (following links), or None."""
    try:
        stat = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return stat.st_dev, stat.st_ino


def database_file(engine: Engine) -> DatabaseFile | None:
    """The file of a SQLite engine (None for PostgreSQL and in-memory databases)."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return None
    if database.startswith("file:"):  # a URI the operator wrote: left alone
        return None
    return DatabaseFile(Path(database))


def _empty_wal(dbapi_connection: Any) -> None:
    """Checkpoint a connection's WAL into its (moved or deleted) file and truncate it.

    SQLite leaves the WAL behind when it closes a database that was renamed or unlinked, and
    that ``<db>-wal`` is still at the path: the next database put there would read its frames
    as its own (a replaced file showed the old file's last learn). Emptied, it holds nothing.
    Waiting is pointless (the connection is closing), so the busy timeout is dropped first.
    """
    try:
        dbapi_connection.execute("PRAGMA busy_timeout=0")
        busy = dbapi_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    except sqlite3.Error as error:
        log.warning("could not empty the WAL of a replaced database file: %s", error)
        return
    if busy:
        log.warning("could not empty the WAL of a replaced database file: it is in use")


def _access(path: Path | str) -> bool:
    return os.access(path, os.W_OK, effective_ids=_EFFECTIVE)
