"""Fail-safe through the real miltertest: a service that raises, hostile messages, and the
buffered-bytes budget. Whatever happens, a message let through never keeps the X-Spam-*
fields its sender forged, and the budget's bytes come back."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.settings.schema import Settings
from benchmarks.hostile import shape
from tests.adapters.milter.conftest import InProcessMilter, MilterProcess, write_message
from tests.builders import make_message

pytestmark = pytest.mark.peer

MilterSettings = Callable[..., Settings]
StartMilter = Callable[[Settings, str], MilterProcess]
Miltertest = Callable[..., subprocess.CompletedProcess[str]]
# Sizes at which each shape once raised RecursionError or ran for minutes (see
# app/evaluation/hostile.py) or larger; small enough to send in a test. miltertest itself
# overflows a buffer on a header field much over 1 KiB: test_server sends longer ones by hand.
HOSTILE = [
    ("nested-comments", 1_000),
    ("unclosed-comments", 1_000),
    ("nested-multipart", 120_000),
    ("nested-rfc822", 20_000),
    ("many-headers", 30_000),
    ("nested-div", 100_000),
    ("binary-junk", 20_000),
]


@pytest.mark.parametrize("on_error", ["accept", "tempfail"])
@pytest.mark.parametrize(
    "error",
    [RecursionError("maximum recursion depth exceeded"), RuntimeError("unexpected")],
    ids=["RecursionError", "RuntimeError"],
)
def test_a_service_that_raises_meets_on_error_and_forged_headers_never_pass(
    milter_settings: MilterSettings,
    in_process_milter: Callable[[Settings, str], InProcessMilter],
    miltertest: Miltertest,
    messages: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    on_error: str,
    error: Exception,
) -> None:
    milter = in_process_milter(milter_settings(mail={"on_error": on_error}), "inet:0@127.0.0.1")

    def broken(*args: Any, **kwargs: Any) -> None:
        raise error

    monkeypatch.setattr(milter.service, "classify", broken)
    miltertest("failure.lua", milter.socket, HAM=messages["HAM"], EXPECT=on_error)
    assert milter.server.budget.held == 0


def test_hostile_messages_are_judged_and_lose_their_forged_headers(
    milter_settings: MilterSettings,
    start_milter: StartMilter,
    miltertest: Miltertest,
    tmp_path: Path,
) -> None:
    milter = start_milter(milter_settings(mail={"on_error": "accept"}), "inet:0@127.0.0.1")
    for name, size in HOSTILE:
        path = write_message(tmp_path, name, shape(name).build(size))
        miltertest("hostile.lua", milter.socket, milter.output(), HOSTILE=path)
    log = milter.output()
    assert log.count("HOSTILEQUEUE1: score ") == len(HOSTILE), log
    assert milter.process.poll() is None  # still serving


def test_a_message_over_the_buffered_bytes_budget_is_tempfailed_whatever_on_error_says(
    milter_settings: MilterSettings,
    in_process_milter: Callable[[Settings, str], InProcessMilter],
    miltertest: Miltertest,
    messages: dict[str, Path],
    tmp_path: Path,
) -> None:
    settings = milter_settings(server={"max_buffered_bytes": 1024}, mail={"on_error": "accept"})
    milter = in_process_milter(settings, "inet:0@127.0.0.1")
    small = make_message("Lunch?", "Are we still on for noon\n")
    assert len(small) < milter.server.budget.limit == 1024
    small_path = write_message(tmp_path, "small", small)
    miltertest("overloaded.lua", milter.socket, BIG=messages["BIG"], SMALL=small_path)
    assert milter.server.budget.held == 0
