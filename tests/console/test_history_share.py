"""The history keeps a share for callers who proved who they are: a flood of classify calls
without a token cannot push their entries out (on SQLite and PostgreSQL)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from app.service import SpamFilter
from app.service.history import EntryFilter
from tests.builders import make_message
from tests.conftest import ServiceFactory, SettingsFactory
from tests.console.conftest import ADMIN, MakeConsole
from tests.console.test_recording import NOW, event

SHARES = {"history_entries": 3, "history_anonymous_entries": 2}


def test_anonymous_entries_are_capped_apart_from_the_others(
    make_settings: SettingsFactory, make_service: ServiceFactory
) -> None:
    service: SpamFilter = make_service(make_settings(console=SHARES))
    history = service.history
    history.record([event("classify", "ham", f"mine{i}", adapter="http") for i in range(4)], NOW)
    for batch in range(10):  # a flood, flushed batch after batch
        at = NOW + timedelta(seconds=batch + 1)
        flood = [
            dataclasses.replace(
                event("classify", "spam", f"anon{batch}-{i}", at=at), anonymous=True
            )
            for i in range(20)
        ]
        history.record(flood, at)
    kept = [entry.digest for entry in history.entries(EntryFilter())]
    assert kept == ["anon9-19", "anon9-18", "mine3", "mine2", "mine1"]


def test_classify_without_a_token_cannot_flush_the_history_over_http(
    make_console: MakeConsole,
) -> None:
    console = make_console(console=SHARES)
    bearer = {"Authorization": f"Bearer {ADMIN}"}
    for serial in range(3):
        mine = make_message(f"Quarterly report {serial}", "The figures are attached\n")
        assert console.client.post("/v1/classify", content=mine, headers=bearer).status_code == 200
    console.flush()
    for serial in range(40):
        flood = make_message(f"Flood {serial}", "cheap pills now\n")
        assert console.client.post("/v1/classify", content=flood).status_code == 200
        if serial % 10 == 9:
            console.flush()
    subjects = [entry.subject for entry in console.service.history.entries(EntryFilter())]
    assert subjects == [
        "Flood 39",
        "Flood 38",
        "Quarterly report 2",
        "Quarterly report 1",
        "Quarterly report 0",
    ]
