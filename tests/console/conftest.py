"""Fixtures of the console tests: an app whose service records to the console's history.

The recorder's thread is not started: a test calls ``Console.flush()`` where the daemon's
thread would flush, so nothing depends on timing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.api.app import create_app
from app.service import SpamFilter
from app.settings.schema import Settings
from app.storage.engine import make_engine
from app.storage.migrate import upgrade
from app.storage.store import Store
from app.telemetry.recorder import Recorder
from tests.api.samples import HAM, SPAM

ADMIN = "admin-token-for-tests"
READER = "read-token-for-tests"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass
class Console:
    """An app under test with a recording service and an open client."""

    settings: Settings
    service: SpamFilter
    recorder: Recorder
    client: TestClient

    def flush(self) -> None:
        """What the recorder's thread does every few seconds."""
        self.recorder.flush()

    def login(self, token: str = ADMIN) -> None:
        """Log in through the form; fails the test unless it lands on the status page."""
        form = self.client.get("/ui/login")
        reply = self.client.post(
            "/ui/login", data={"token": token, "csrf": csrf_of(form.text)}, follow_redirects=False
        )
        assert reply.status_code == 303, reply.text
        assert reply.headers["location"] == "/ui/"

    def csrf(self, path: str = "/ui/") -> str:
        """The CSRF token of the forms on ``path``."""
        return csrf_of(self.client.get(path).text)

    def train(self) -> None:
        """Learn the sample messages through the service."""
        for raw in HAM:
            self.service.learn(raw, "ham")
        for raw in SPAM:
            self.service.learn(raw, "spam")


def csrf_of(page: str) -> str:
    found = CSRF.search(page)
    assert found, page
    return found.group(1)


MakeConsole = Callable[..., Console]


@pytest.fixture
def make_console(make_settings: Callable[..., Settings]) -> Iterator[MakeConsole]:
    """Builds consoles; keyword arguments override settings (tokens default to both)."""
    made: list[tuple[Console, Any]] = []

    def make(**overrides: Any) -> Console:
        overrides.setdefault("api_tokens", [ADMIN])
        overrides.setdefault("read_tokens", [READER])
        overrides.setdefault(
            "decision", {"min_messages": 1, "ham_log_odds": 0.0, "spam_log_odds": 0.0}
        )
        settings = make_settings(**overrides)
        engine = make_engine(settings.database_url)
        upgrade(engine)
        holder: list[SpamFilter] = []
        recorder = Recorder(lambda events: holder[0].history.record(events), 60, 10_000, 10_000)
        store = Store(engine, classes=settings.model.classes)
        store.prepare_classes()
        service = SpamFilter(store, settings, [recorder], "http")
        holder.append(service)
        client = TestClient(create_app(settings, service), base_url="https://testserver")
        context = client.__enter__()
        console = Console(settings, service, recorder, context)
        made.append((console, client))
        return console

    yield make
    for _console, client in made:
        client.__exit__(None, None, None)


@pytest.fixture
def console(make_console: MakeConsole) -> Console:
    return make_console()
