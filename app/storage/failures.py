"""Driver errors mapped to the service's error hierarchy, in one place."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, OperationalError

from app.errors import StorageConflict, StorageUnavailable

# PostgreSQL SQLSTATEs a retry can cure: serialization_failure, deadlock_detected.
_RETRYABLE_SQLSTATES = {"40001", "40P01"}


def translate(error: DBAPIError) -> StorageConflict | StorageUnavailable:
    """Map a driver error to the service's error hierarchy."""
    sqlstate = getattr(error.orig, "sqlstate", None)
    if sqlstate in _RETRYABLE_SQLSTATES:
        return StorageConflict(str(error.orig))
    if isinstance(error, OperationalError):
        return StorageUnavailable(str(error.orig))
    return StorageUnavailable(f"database error: {error.orig}")
