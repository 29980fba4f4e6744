"""Driver errors mapped to the service's error hierarchy, in one place.

The text of the errors raised here reaches HTTP clients, spamd and milter peers and stderr,
so it never carries what the driver said about the connection: psycopg's messages name the
server's host and port (``connection to server at "10.0.0.5", port 5432 failed``). They keep
the kind of failure (the driver's exception class and SQLSTATE) and the full text goes to the
log, at WARNING, for the operator. SQLite's own messages ("attempt to write a readonly
database", "database is locked") name no file, host or user and are kept as they are (so
the log has them at DEBUG only: each edge reports the error itself).
"""

from __future__ import annotations

import logging
import sqlite3

from sqlalchemy.exc import DBAPIError, OperationalError

from app.errors import StorageConflict, StorageUnavailable, StorageWritesFailing

log = logging.getLogger(__name__)

# PostgreSQL SQLSTATEs a retry can cure: serialization_failure, deadlock_detected.
_RETRYABLE_SQLSTATES = {"40001": "serialization failure", "40P01": "deadlock"}

# SQLite primary result codes after which the pooled connections are suspect: opened
# read-only (READONLY), or on a file that went away or changed under them (IOERR, CORRUPT,
# CANTOPEN, NOTADB). A fresh connection is the only cure for the first, and harmless for the
# rest.
_SQLITE_FILE_FAULTS = {
    8,  # SQLITE_READONLY
    10,  # SQLITE_IOERR
    11,  # SQLITE_CORRUPT
    14,  # SQLITE_CANTOPEN
    26,  # SQLITE_NOTADB
}
# ...but not a write the disk refused (full, past a file-size limit): the connections are
# sound, and the last one closed gives up the -shm that a new one could not size on that
# disk ("disk I/O error", SQLITE_IOERR_SHMSIZE): reads would fail too.
_SQLITE_IOERR_WRITE = 778

# Faults of writing while reading goes on: SQLite's READONLY, IOERR (EFBIG past a file-size
# limit is IOERR_WRITE) and FULL; PostgreSQL's SQLSTATEs for the same, named for the operator.
_SQLITE_WRITE_FAULTS = {8, 10, 13}
_WRITE_SQLSTATES = {
    "25006": "the database is read-only",  # read_only_sql_transaction
    "42501": "permission denied",  # insufficient_privilege (a revoked GRANT)
    "53100": "disk full",
    "58030": "I/O error",
}
# Pooled connections keep the read-only default they were opened with, as SQLite's do.
_RENEW_SQLSTATES = {"25006"}


def translate(error: DBAPIError) -> StorageConflict | StorageUnavailable:
    """Map a driver error to the service's error hierarchy, with a text safe to show anyone."""
    orig = error.orig
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate in _RETRYABLE_SQLSTATES:
        # The service retries these; only the last one reaches a caller.
        log.info("database conflict, retried: %s", _one_line(orig))
        return StorageConflict(f"{_RETRYABLE_SQLSTATES[sqlstate]} (SQLSTATE {sqlstate})")
    summary = _summary(error)
    # Only what the error's own text hides is worth a line of its own: SQLite's is kept whole
    # (a failing bulk learn printed each failure twice).
    hidden = _one_line(orig) != summary
    log.log(
        logging.WARNING if hidden else logging.DEBUG, "database unavailable: %s", _one_line(orig)
    )
    return StorageUnavailable(summary)


def write_failure(error: DBAPIError) -> StorageWritesFailing | None:
    """For a write that failed as read-only, disk full or without the privilege (reading
    goes on): ``writes failing: <why>``, safe to show anyone; else None."""
    if not _is_write_fault(error):
        return None
    return StorageWritesFailing(f"writes failing: {_summary(error)}")


def _is_write_fault(error: DBAPIError) -> bool:
    code = getattr(error.orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _SQLITE_WRITE_FAULTS
    return getattr(error.orig, "sqlstate", None) in _WRITE_SQLSTATES


def is_file_fault(error: DBAPIError) -> bool:
    """True for an error that a fresh connection may cure (read-only, file gone)."""
    code = getattr(error.orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _SQLITE_FILE_FAULTS and code != _SQLITE_IOERR_WRITE
    return getattr(error.orig, "sqlstate", None) in _RENEW_SQLSTATES


def _summary(error: DBAPIError) -> str:
    orig = error.orig
    if isinstance(orig, sqlite3.Error):
        return _one_line(orig)
    kind = type(orig).__name__
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate in _WRITE_SQLSTATES:
        return f"{_WRITE_SQLSTATES[sqlstate]} (SQLSTATE {sqlstate})"
    if sqlstate:
        return f"database error {kind} (SQLSTATE {sqlstate})"
    if isinstance(error, OperationalError):
        return f"cannot reach the database ({kind}; details in the log)"
    return f"database error {kind} (details in the log)"


def _one_line(error: BaseException | None) -> str:
    return " ".join(str(error).split())
