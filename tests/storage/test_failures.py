"""Driver errors become StorageUnavailable / StorageConflict whose text is safe to show.

That text reaches HTTP clients, spamd and milter peers and stderr; psycopg's own messages
name the server's host and port, so they go to the log (WARNING) and never into the error.
"""

from __future__ import annotations

import logging
import os
import sqlite3

import pytest
import sqlalchemy as sa

from app.errors import StorageConflict, StorageUnavailable
from app.storage.engine import make_engine
from app.storage.failures import is_file_fault, translate
from app.storage.store import Store

SECRETS = ("hunter2", "127.0.0.1", "5432", "port 1", "nobody")


def wrapped(orig: Exception) -> sa.exc.DBAPIError:
    return sa.exc.OperationalError("SELECT 1", {}, orig)


class AdminShutdown(Exception):
    """Stands for psycopg.errors.AdminShutdown: a SQLSTATE and a message naming the server."""

    sqlstate = "57P01"


def assert_safe(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def test_an_unreachable_server_is_unavailable_with_the_detail_only_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = make_engine("postgresql://nobody:hunter2@127.0.0.1:1/none")
    try:
        with (
            caplog.at_level(logging.WARNING, "app.storage"),
            pytest.raises(StorageUnavailable) as raised,
        ):
            Store(engine).schema_revision()
    finally:
        engine.dispose()
    assert str(raised.value) == "cannot reach the database (OperationalError; details in the log)"
    assert_safe(str(raised.value))
    logged = [r for r in caplog.records if r.name == "app.storage.failures"]
    assert [r.levelno for r in logged] == [logging.WARNING]
    assert "127.0.0.1" in logged[0].getMessage()  # the operator still learns where


@pytest.mark.postgres
def test_a_refused_login_names_neither_user_nor_server() -> None:
    url = os.environ.get("SPAMFILTER_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("SPAMFILTER_TEST_POSTGRES_URL is not set")
    wrong = sa.engine.make_url(url).set(password="hunter2").render_as_string(hide_password=False)
    engine = make_engine(wrong)
    try:
        with pytest.raises(StorageUnavailable) as raised:
            Store(engine).schema_revision()
    finally:
        engine.dispose()
    assert_safe(str(raised.value))
    assert "password" not in str(raised.value)


def test_an_error_with_a_sqlstate_keeps_its_kind_and_code_only() -> None:
    orig = AdminShutdown('terminating connection: server at "127.0.0.1", port 5432')
    error = translate(wrapped(orig))
    assert type(error) is StorageUnavailable
    assert str(error) == "database error AdminShutdown (SQLSTATE 57P01)"


def test_a_lost_race_is_a_conflict_named_by_its_sqlstate() -> None:
    orig = AdminShutdown("deadlock detected; process 77 on 127.0.0.1")
    orig.sqlstate = "40P01"
    error = translate(wrapped(orig))
    assert type(error) is StorageConflict
    assert str(error) == "deadlock (SQLSTATE 40P01)"


def test_sqlite_messages_are_kept_they_name_no_file_or_server() -> None:
    orig = sqlite3.OperationalError("attempt to write a readonly database")
    assert str(translate(wrapped(orig))) == "attempt to write a readonly database"


@pytest.mark.parametrize(
    ("code", "fault"),
    [
        (8, True),  # SQLITE_READONLY
        (8 | (1 << 8), True),  # SQLITE_READONLY_RECOVERY: extended codes count by their primary
        (14, True),  # SQLITE_CANTOPEN
        (10, True),  # SQLITE_IOERR
        (5, False),  # SQLITE_BUSY: the connection is fine, the database is just locked
        (None, False),  # not SQLite
    ],
)
def test_file_faults_are_the_sqlite_codes_a_fresh_connection_may_cure(
    code: int | None, fault: bool
) -> None:
    orig = sqlite3.OperationalError("x")
    if code is not None:
        orig.sqlite_errorcode = code
    assert is_file_fault(wrapped(orig)) is fault


def test_readiness_of_an_unreachable_server_is_false_with_a_safe_reason() -> None:
    engine = make_engine("postgresql://nobody:hunter2@127.0.0.1:1/none")
    try:
        reason = Store(engine).readiness()
    finally:
        engine.dispose()
    assert reason is not None
    assert reason.startswith("cannot reach the database")
    assert_safe(reason)
