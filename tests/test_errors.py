"""errors.describe: one line for logs and stderr, whichever edge reports the error."""

from __future__ import annotations

from app.errors import InvalidMessage, StorageUnavailable, describe


def test_a_service_error_is_its_code_and_its_folded_text() -> None:
    error = StorageUnavailable("database is locked\n  (after 5 s)")
    assert describe(error) == "storage_unavailable: database is locked (after 5 s)"


def test_a_service_error_without_text_is_its_code() -> None:
    assert describe(InvalidMessage()) == "invalid_message"


def test_any_other_exception_is_its_type_and_text() -> None:
    assert describe(TimeoutError()) == "TimeoutError"
    assert describe(BrokenPipeError(32, "Broken pipe")) == "BrokenPipeError: [Errno 32] Broken pipe"
