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
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, event

from app.errors import StorageUnavailable

log = logging.getLogger(__name__)

FileId = tuple[int, int]
"""``(st_dev, st_ino)``: which file a path names."""

# Checked with faccessat(AT_EACCESS) where the platform has it, so a service whose real and
# effective users differ is judged by the user it writes as.
_EFFECTIVE = os.access in os.supports_effective_ids
_OPENED = "spamfilter_file_opened"  # connection record info: the file identity at connect
_CHMOD = "make it writable by the service's user (chown, or chmod u+w)"
_CHMOD_COMPANION = (
    "make it writable by the service's user (chown, or chmod u+w), or remove it while no "
    "process has the database open"
)
_READ_ONLY_FOLDER = "a folder read-only to this user"
_FOLDER = "make the folder writable by the service's user: SQLite creates the -wal and -shm there"


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
        self._healed = False

    def healed(self) -> bool:
        """True once after ``write_problem`` put a -wal or -shm right: connections opened
        before map it read-only and must be replaced."""
        healed, self._healed = self._healed, False
        return healed

    def found(self) -> FileId | None:
        """The identity of the file at the path now (None when there is none)."""
        found = identity(self.path)
        if found is not None:
            self._existed = True
        return found

    def write_problem(self) -> WriteProblem | None:
        """None when SQLite can write here; else the file (or folder) that stops it.

        WAL mode writes ``<db>-wal`` and maps ``<db>-shm``: each that exists must be
        writable, and when one does not (the last connection removes them) the folder must
        let SQLite create it. A companion left read-only beside a writable file is put right
        first (``heal_companion``), so a fault heals once its cause is gone.
        """
        if not _access(self.path):
            return WriteProblem(self.path, _owner_and_mode(self.path), _CHMOD)
        missing = False
        for name in self._companions:
            try:
                state = os.stat(name)
            except FileNotFoundError:
                missing = True
                continue
            if not state.st_mode & stat.S_IWUSR and heal_companion(self.path, name):
                self._healed = True
                continue
            if not _access(name):
                return WriteProblem(Path(name), _owner_and_mode(name), _CHMOD_COMPANION)
        if missing and not _access(self._folder):
            return WriteProblem(self.path.parent, _READ_ONLY_FOLDER, _FOLDER)
        return None

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


@dataclass(frozen=True, slots=True)
class WriteProblem:
    """What stops SQLite writing: ``path`` (the file, its -wal or -shm, or the folder),
    ``state`` (owner and mode) and the operator's ``fix``."""

    path: Path
    state: str
    fix: str

    def reason(self) -> str:
        """One line safe for any client: the file's name, not where it is."""
        return f"read-only: {self.path.name} cannot be written ({self.state})"

    def advice(self) -> str:
        """One line for the operator: the full path and the fix."""
        return f"cannot write {self.path} ({self.state}): {self.fix}"


def heal_companion(database: Path, name: str) -> bool:
    """Give a read-only ``-wal`` or ``-shm`` the database file's mode again; True if done.

    SQLite creates both with the mode of the database file. A reader that opens a database
    made read-only for a moment (``chmod 444``) therefore leaves a 0444 ``-shm`` behind, and
    once the file is writable again every connection maps that ``-shm`` read-only: each write
    fails with "attempt to write a readonly database", after a restart too. Done only while
    the database file is writable, and only to a file this user owns (root: any).
    """
    try:
        file_state = os.stat(database)
        companion = os.stat(name)
        euid = os.geteuid()
        if not file_state.st_mode & stat.S_IWUSR or euid not in (0, companion.st_uid):
            return False
        os.chmod(name, stat.S_IMODE(file_state.st_mode))
    except OSError:
        return False
    log.warning(
        "%s was read-only (left so by a reader while the database was read-only): "
        "given the database file's mode %04o again",
        name,
        stat.S_IMODE(file_state.st_mode),
    )
    return True


def identity(path: Path) -> FileId | None:
    """``(st_dev, st_ino)`` of the file ``path`` names (following links), or None."""
    try:
        stat = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return stat.st_dev, stat.st_ino


def require_writable(engine: Engine) -> None:
    """At start-up: StorageUnavailable naming the file (the database, its -wal or -shm, or
    the folder) that this user cannot write, and the fix; a -wal or -shm left read-only
    beside a writable file is put right instead (``heal_companion``). Nothing for PostgreSQL.
    """
    file = database_file(engine)
    if file is None:
        return
    if file.found() is None:  # SQLite will create it: the folder must let it
        folder = file.path.parent
        problem = None if _access(folder) else WriteProblem(folder, _READ_ONLY_FOLDER, _FOLDER)
    else:
        problem = file.write_problem()
    if problem is not None:
        raise StorageUnavailable(problem.advice())


def exposure(engine: Engine) -> str | None:
    """A warning when the SQLite file exists and its group or others may read it (None when
    only its owner may, and for PostgreSQL). Not a refusal: a site may mean it (a backup
    user in the group), as it may not (a file made under umask 022 by an older release)."""
    file = database_file(engine)
    try:
        mode = stat.S_IMODE(os.stat(file.path).st_mode) if file is not None else 0
    except OSError:
        return None
    if file is None or not mode & (stat.S_IRGRP | stat.S_IROTH):
        return None
    return (
        f"the database file {file.path} is readable by others than its owner (mode "
        f"{mode:04o}), though it holds every sender, subject and user name learned or judged: "
        f"'chmod 600 {file.path}' unless that is meant (its -wal and -shm follow its mode)"
    )


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


def _owner_and_mode(path: Path | str) -> str:
    try:
        state = os.stat(path)
    except OSError as error:
        return error.strerror or str(error)
    return f"mode {stat.S_IMODE(state.st_mode):04o}, owner uid {state.st_uid}"
