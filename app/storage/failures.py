"""Driver errors mapped to the service's error hierarchy, in one place.

The text of the errors raised here reaches HTTP clients, spamd and milter peers and stderr,
so it never carries what the driver said about the connection: psycopg's messages name the
server's host and port (``connection to server at "10.0.0.5", port 5432 failed``). They keep
the kind of failure (the driver's exception class and SQLSTATE) and the full text goes to the
log, at WARNING, for the operator. SQLite's own messages ("attempt to write a readonly
database", "database is locked") name no file, host or user and are kept as they are.
"""

from __future__ import annotations

import logging
import sqlite3

from sqlalchemy.exc import DBAPIError, OperationalError

from app.errors import StorageConflict, StorageUnavailable

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


def translate(error: DBAPIError) -> StorageConflict | StorageUnavailable:
    """Map a driver error to the service's error hierarchy, with a text safe to show anyone."""
    orig = error.orig
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate in _RETRYABLE_SQLSTATES:
        # The service retries these; only the last one reaches a caller.
        log.info("database conflict, retried: %s", _one_line(orig))
        return StorageConflict(f"{_RETRYABLE_SQLSTATES[sqlstate]} (SQLSTATE {sqlstate})")
    log.warning("database unavailable: %s", _one_line(orig))
    return StorageUnavailable(_summary(error))


def is_file_fault(error: DBAPIError) -> bool:
    """True for a SQLite error that a fresh connection may cure (read-only, file gone)."""
    code = getattr(error.orig, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _SQLITE_FILE_FAULTS


def _summary(error: DBAPIError) -> str:
    orig = error.orig
    if isinstance(orig, sqlite3.Error):
        return _one_line(orig)
    kind = type(orig).__name__
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate:
        return f"database error {kind} (SQLSTATE {sqlstate})"
    if isinstance(error, OperationalError):
        return f"cannot reach the database ({kind}; details in the log)"
    return f"database error {kind} (details in the log)"


def _one_line(error: BaseException | None) -> str:
    return " ".join(str(error).split())
