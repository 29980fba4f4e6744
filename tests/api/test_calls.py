"""Service calls run in worker threads, at most ``server.service_threads`` at once per app."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from app.api.app import create_app
from app.api.calls import call_service, service_slots
from tests.api.conftest import MakeSettings


class Gauge:
    """Counts the calls running at once, and the most there ever were."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.threads: set[int] = set()

    def work(self, value: int, *, pause: float) -> int:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.threads.add(threading.get_ident())
        time.sleep(pause)  # long enough for the others to pile up behind the limit
        with self._lock:
            self.now -= 1
        return value * 2


def request_of(threads: int) -> Any:
    """What call_service reads of a request: its app's service slots."""
    return SimpleNamespace(
        app=SimpleNamespace(state=SimpleNamespace(service_slots=service_slots(threads)))
    )


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_no_more_calls_run_at_once_than_the_app_has_slots(threads: int) -> None:
    gauge = Gauge()
    request = request_of(threads)
    results: list[int] = []

    async def one(value: int) -> None:
        results.append(await call_service(request, gauge.work, value, pause=0.02))

    async def many() -> None:
        async with anyio.create_task_group() as group:
            for value in range(12):
                group.start_soon(one, value)

    anyio.run(many)
    assert sorted(results) == [2 * value for value in range(12)]
    assert gauge.most == threads
    assert threading.get_ident() not in gauge.threads  # never on the event loop's thread


def test_the_app_takes_its_slots_from_settings(make_api_settings: MakeSettings) -> None:
    settings = make_api_settings(server={"service_threads": 3})
    app = create_app(settings)
    assert app.state.service_slots.total_tokens == 3
