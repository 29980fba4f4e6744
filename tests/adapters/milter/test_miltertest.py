"""Sendmail's milter test tool drives the milter: Debian's miltertest runs the Lua scripts in
lua/ against ``spamfilter milter`` started as a process (or, where the service must be made to
fail on purpose, against the server in this process)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from app.settings.schema import Settings
from tests.adapters.milter.conftest import InProcessMilter, MilterProcess

pytestmark = pytest.mark.peer

MilterSettings = Callable[..., Settings]
StartMilter = Callable[[Settings, str], MilterProcess]
Miltertest = Callable[..., subprocess.CompletedProcess[str]]


def test_ham_goes_through_every_callback_and_gets_our_headers_only(
    milter_settings: MilterSettings,
    start_milter: StartMilter,
    miltertest: Miltertest,
    messages: dict[str, Path],
    unix_socket: str,
) -> None:
    milter = start_milter(milter_settings(), unix_socket)
    miltertest("accept.lua", milter.socket, milter.output(), HAM=messages["HAM"])
    assert "HAMQUEUE1: score -" in milter.output()  # queue id from the macro, never addresses
    assert "user@example.net" not in milter.server_log()
    milter.stop()  # SIGTERM: a clean exit that removes the socket file
    assert milter.process.returncode == 0, milter.output()
    assert not Path(unix_socket.removeprefix("unix:")).exists()


def test_spam_is_rejected_with_550(
    milter_settings: MilterSettings,
    start_milter: StartMilter,
    miltertest: Miltertest,
    messages: dict[str, Path],
) -> None:
    settings = milter_settings(mail={"spam_action": "reject", "reject_log_odds": 5.0})
    milter = start_milter(settings, "inet:0@127.0.0.1")
    miltertest("reject.lua", milter.socket, milter.output(), SPAM=messages["SPAM"])


def test_spam_is_quarantined_with_its_headers(
    milter_settings: MilterSettings,
    start_milter: StartMilter,
    miltertest: Miltertest,
    messages: dict[str, Path],
) -> None:
    milter = start_milter(milter_settings(mail={"spam_action": "quarantine"}), "inet:0@127.0.0.1")
    miltertest("quarantine.lua", milter.socket, milter.output(), SPAM=messages["SPAM"])


def test_a_multi_chunk_body_and_several_messages_on_one_connection(
    milter_settings: MilterSettings,
    start_milter: StartMilter,
    miltertest: Miltertest,
    messages: dict[str, Path],
) -> None:
    assert messages["BIG"].with_suffix(".body").stat().st_size > 3 * 64 * 1024
    milter = start_milter(milter_settings(), "inet:0@127.0.0.1")
    miltertest("large.lua", milter.socket, milter.output(), SPAM=messages["BIG"])
    miltertest(
        "two_messages.lua",
        milter.socket,
        milter.output(),
        SPAM=messages["SPAM"],
        HAM=messages["HAM"],
    )
    log = milter.output()
    assert "BIGQUEUE1: score" in log and "head only" not in log
    assert "FIRST: score" in log and "SECOND: score -" in log and "ABORTED" not in log


def test_tempfail_when_the_database_is_gone(
    milter_settings: MilterSettings,
    start_milter: StartMilter,
    miltertest: Miltertest,
    messages: dict[str, Path],
) -> None:
    settings = milter_settings(mail={"on_error": "tempfail"})
    milter = start_milter(settings, "inet:0@127.0.0.1")
    engine = sa.create_engine(settings.database_url, poolclass=sa.NullPool)
    with engine.begin() as connection:  # the schema vanishes under the running milter
        connection.execute(sa.text("DROP TABLE label_total"))
    engine.dispose()
    miltertest(
        "failure.lua", milter.socket, milter.output(), HAM=messages["HAM"], EXPECT="tempfail"
    )
    assert "storage_unavailable" in milter.output()


@pytest.mark.parametrize("on_error", ["accept", "tempfail"])
def test_a_failing_service_answers_as_on_error_says(
    milter_settings: MilterSettings,
    in_process_milter: Callable[[Settings, str], InProcessMilter],
    miltertest: Miltertest,
    messages: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    on_error: str,
) -> None:
    milter = in_process_milter(milter_settings(mail={"on_error": on_error}), "inet:0@127.0.0.1")

    def broken(*args: Any, **kwargs: Any) -> None:
        raise ConnectionResetError("database connection lost")

    monkeypatch.setattr(milter.service, "classify", broken)
    miltertest("failure.lua", milter.socket, HAM=messages["HAM"], EXPECT=on_error)


def test_over_the_size_cap_the_rest_is_skipped_and_the_head_classified(
    milter_settings: MilterSettings,
    in_process_milter: Callable[[Settings, str], InProcessMilter],
    miltertest: Miltertest,
    messages: dict[str, Path],
) -> None:
    settings = milter_settings(server={"max_message_bytes": 64 * 1024})
    milter = in_process_milter(settings, "inet:0@127.0.0.1")
    miltertest("size_cap.lua", milter.socket, SPAM=messages["BIG"])
