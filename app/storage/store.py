"""The database: engine, units of work, readiness, and the guard on a SQLite file.

Storage functions never commit: ``Store.transaction`` opens one transaction, the service owns
it, and it commits when the ``with`` block ends without an error. Only this package speaks SQL;
the queries are in ``repository.py``, the dialect-specific parts in ``dialect.py``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import DBAPIError

from app.domain.labels import LABELS
from app.errors import ConfigurationError, StorageUnavailable, StorageWritesFailing
from app.storage.count_cache import CountCache
from app.storage.failures import is_file_fault, translate, write_failure
from app.storage.repository import LabelStats, LearnedRecord, ModelTotals, Transaction
from app.storage.rows import TokenStats
from app.storage.sqlite_file import database_file
from app.storage.tables import SCHEMA_REVISION, VERSION_TABLE, count_layout

__all__ = [
    "NOT_MIGRATED",
    "LabelStats",
    "LearnedRecord",
    "ModelTotals",
    "Store",
    "TokenStats",
    "Transaction",
]

log = logging.getLogger(__name__)

# Token entries a process holds by default (see ``count_cache.py``): about 200 bytes each.
CACHE_TOKENS = 200_000
NOT_MIGRATED = "the database schema is not at the newest revision; run 'spamfilter db upgrade'"


class Store:
    """An engine and the units of work over it.

    On SQLite the store also watches the database file (see ``sqlite_file.py``): a write is
    refused, and the pool renewed, when the path no longer names the file the connections
    have open (deleted or replaced) or cannot be written; a file put back at the path is
    used again once it is at the newest schema.

    Learned counts read are kept in a cache of at most ``cache_tokens`` tokens, checked
    against the database on every read (``count_cache.py``); 0 keeps none.

    Counts are kept per class of ``classes`` (``tables.CountLayout``); classes beyond ham and
    spam need their columns in the database (``prepare_classes``).
    """

    def __init__(
        self, engine: Engine, cache_tokens: int = CACHE_TOKENS, classes: tuple[str, ...] = LABELS
    ) -> None:
        self._engine = engine
        self._layout = count_layout(classes)
        self._cache = CountCache(cache_tokens)
        self._file = database_file(engine)
        self._readonly = False
        # Why the last write failed while reads went on (None once a write has worked):
        # readiness says so until a write, or its own probe, succeeds.
        self._write_fault: str | None = None
        self._file_lock = threading.Lock()
        # Bumped whenever the pool is renewed: a connection checked out before that is closed
        # when its transaction ends, never returned for another one.
        self._generation = 0
        if self._file is not None:
            self._file.attach(engine)

    @property
    def dialect_name(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._engine.dialect.name

    @contextmanager
    def transaction(self, write: bool) -> Iterator[Transaction]:
        """One transaction; committed on normal exit, rolled back on an exception.

        On SQLite a writing transaction starts with BEGIN IMMEDIATE, so concurrent writers
        wait for the database lock (``engine.begin_immediate``: tried again every fraction
        of a millisecond, up to the busy timeout) instead of failing at their first write.
        A write raises StorageUnavailable, and is never reported done, unless the database
        file at the path is the one the connection wrote to both before and after it.
        """
        if write:
            self._check_file_recorded()
        generation = self._generation
        try:
            with self._engine.connect() as conn:
                try:
                    conn.execution_options(spamfilter_write=write)
                    with conn.begin():
                        tx = Transaction(conn, self._cache, self._layout)
                        yield tx
                        updates = tx.seal()
                finally:
                    if generation != self._generation:
                        conn.invalidate()
        except DBAPIError as error:
            if is_file_fault(error):
                self._renew_pool()
            failed = write_failure(error) if write else None
            if failed is None:
                raise translate(error) from error
            translate(error)  # logged for the operator
            self._write_fault = str(failed)
            raise failed from error
        if write:
            self._check_committed()
            self._write_fault = None
        tx.install(updates)

    @property
    def classes(self) -> tuple[str, ...]:
        """The classes counts are kept for, in their stored order."""
        return self._layout.classes

    def prepare_classes(self) -> list[str]:
        """Add the count columns of the store's classes the database lacks (see
        ``class_columns.prepare``); the classes added. Nothing to do for ham and spam."""
        from app.storage.class_columns import prepare

        return prepare(self._engine, self._layout.classes)

    def undeclared_classes(self) -> dict[str, int]:
        """Classes the database holds learned messages of that are not the store's, with
        their messages over every model: left behind when a class stopped being declared
        without 'spamfilter classes remove'."""
        with self.transaction(write=False) as tx:
            held = tx.stored_classes()
        return {name: n for name, n in held.items() if name not in self._layout.classes}

    def schema_revision(self) -> str | None:
        """The Alembic revision the database is at (None when never migrated)."""
        with self.transaction(write=False) as tx:
            return tx.schema_revision()

    def refuse_newer_schema(self) -> None:
        """ConfigurationError when a newer release has migrated the database past the schema
        this code knows (``SCHEMA_REVISION``): it may store what this code would misread. For
        processes that never migrate; one query, no Alembic. Revisions are numbered
        ``0001``, ``0002``, ... so the later one sorts last."""
        refuse_newer(self.schema_revision())

    def is_migrated(self) -> bool:
        """True when the database is at the newest revision the code ships."""
        return self.schema_revision() == SCHEMA_REVISION

    def readiness(self) -> str | None:
        """None when ready (see ``unready``), else why not, in one line safe to show."""
        failure = self.unready()
        return None if failure is None else str(failure)

    def unready(self) -> StorageUnavailable | None:
        """None when the database answers, is at the newest revision, (SQLite) its file is in
        place and writable, and writes work; else the error that says why, its text safe to
        show a client (StorageWritesFailing: ``read-only: ...``, ``writes failing: ...``).

        After a write failed as read-only or disk full, each call writes once (the schema
        revision, unchanged) to learn whether the cause is gone: a server taken out of
        rotation gets no other write to tell it."""
        try:
            self._check_file_recorded()
            if not self.is_migrated():
                return StorageUnavailable(NOT_MIGRATED)
            if self._write_fault is not None:
                with self.transaction(write=True) as tx:
                    tx.touch()
        except StorageUnavailable as error:
            return error
        return None

    def backup(self, destination: Path, overwrite: bool = False) -> int:
        """Copy a live SQLite database to ``destination`` (see ``backup.copy_sqlite``);
        TransferRefused on PostgreSQL or over an existing file; returns the copy's size."""
        from app.storage.backup import copy_sqlite

        try:
            return copy_sqlite(self._engine, destination, overwrite)
        except DBAPIError as error:
            raise translate(error) from error

    def refresh_statistics(self) -> None:
        """Gather the query planner's statistics of the count tables now, in a transaction
        of their own (PostgreSQL; nothing to do on SQLite)."""
        if self.dialect_name == "postgresql":
            with self.transaction(write=True) as tx:
                tx.refresh_statistics()

    def dispose(self) -> None:
        """Close every pooled connection."""
        self._engine.dispose()

    def _renew_pool(self) -> None:
        """Close the pooled connections; those in use are closed when their work ends."""
        self._generation += 1
        self._cache.forget()  # the file may be another one now
        self._engine.dispose()

    def _check_file_recorded(self) -> None:
        """``_check_file``, remembering a read-only file as the reason writes fail."""
        try:
            self._check_file()
        except StorageWritesFailing as error:
            self._write_fault = str(error)
            raise

    def _check_file(self) -> None:
        """Raise StorageUnavailable unless the SQLite file is the known one, and writable.

        One stat and two or three access() calls: ~9 µs measured, against ~3 ms for a learn.
        Under a lock, so that no thread adopts a new file while another still closes the
        connections to the old one.
        """
        file = self._file
        if file is None:
            return
        with self._file_lock:
            found = file.found()
            if found is None:
                self._renew_pool()
                file.known = None  # whatever comes back is checked before it is used
                raise StorageUnavailable(
                    "the database file is missing; restore it or run 'spamfilter db upgrade'"
                )
            if file.known is not None and found != file.known:
                self._renew_pool()
                file.known = None  # the next call adopts the file now at the path
                raise StorageUnavailable("the database file was replaced while in use; retry")
            problem = file.write_problem()
            if problem is not None:
                if not self._readonly:
                    self._readonly = True
                    self._renew_pool()
                    log.warning("database writes refused: %s", problem.advice())
                raise StorageWritesFailing(problem.reason())
            if self._readonly or file.healed():
                # Connections opened while the file was read-only stay read-only: start afresh.
                self._readonly = False
                self._renew_pool()
            if file.known is None:
                if not self.is_migrated():
                    raise StorageUnavailable(NOT_MIGRATED)
                file.known = found

    def _check_committed(self) -> None:
        """After a commit: raise StorageUnavailable if the path no longer names the file
        written to (it was replaced or deleted during the transaction: the write is lost)."""
        file = self._file
        if file is None:
            return
        with self._file_lock:
            if file.found() != file.known:
                self._renew_pool()
                file.known = None
                raise StorageUnavailable(
                    "the database file was replaced or deleted during this write; retry"
                )


def current_revision(engine: Engine) -> str | None:
    """The Alembic revision ``engine``'s database is at, read without Alembic (None when it
    was never migrated). A read transaction: on SQLite it takes no write lock, so it does
    not wait behind a writer. A database that cannot be read raises what any read would
    (``failures.translate``: StorageUnavailable, ...)."""
    try:
        with engine.connect() as conn:
            conn.execution_options(spamfilter_write=False)
            if not inspect(conn).has_table(VERSION_TABLE):
                return None
            row = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).first()
    except DBAPIError as error:
        raise translate(error) from error
    return None if row is None else str(row[0])


def is_current(engine: Engine) -> bool:
    """True when ``engine``'s database is at the newest revision the code ships."""
    return current_revision(engine) == SCHEMA_REVISION


def refuse_newer(revision: str | None) -> None:
    """ConfigurationError when ``revision`` (a database's; None: never migrated) is past
    ``SCHEMA_REVISION``: a newer release migrated the database."""
    if revision is None or revision <= SCHEMA_REVISION:
        return
    raise ConfigurationError(
        f"the database is at schema revision {revision}, which this release of spamfilter "
        f"does not know (its newest is {SCHEMA_REVISION}): a newer release migrated it. Run "
        "that release, or downgrade the database with it first (docs/operations.md, Upgrading "
        "and going back)"
    )
