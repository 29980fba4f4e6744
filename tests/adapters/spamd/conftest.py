"""Fixtures of the spamd tests: a trained service, the server on a free loopback port, spamc.

The server runs in a background thread with an event loop of its own, exactly as
``spamfilter spamd`` runs it (``SpamdServer`` on the service), on port 0 so that tests never
collide. Verdicts need a model: ``train`` teaches 20 generated spam and 20 ham messages
(tests/builders.py), with ``min_messages`` low enough for verdicts and the default cut-offs.
"""

from __future__ import annotations

import asyncio
import random
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.adapters.spamd.server import SpamdServer
from app.service import SpamFilter
from app.settings.schema import Settings
from tests.adapters.peers import require_program
from tests.builders import ham_message, spam_message
from tests.conftest import ServiceFactory, SettingsFactory
from tests.environment import drop_settings

TRAINING = 20


def spamd_overrides(**spamd: Any) -> dict[str, Any]:
    """Settings for a test server: any free port, a short read timeout, small min_messages."""
    return {
        "spamd": {"port": 0, "timeout_seconds": 5.0, **spamd},
        "decision": {"min_messages": 5},
    }


def train(service: SpamFilter, seed: int = 7) -> None:
    """Learn TRAINING generated spam and ham messages."""
    rng = random.Random(seed)
    for serial in range(TRAINING):
        service.learn(spam_message(rng, serial), "spam")
        service.learn(ham_message(rng, 1000 + serial), "ham")


@dataclass
class Spamd:
    """A server running in a background thread; ``port`` is where it listens."""

    server: SpamdServer
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    settings: Settings
    service: SpamFilter

    @property
    def port(self) -> int:
        """The bound TCP port."""
        return self.server.address[1]

    def stop(self) -> None:
        """Close the server, its worker threads and its loop."""
        if self.loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(self.server.close(), self.loop).result(10)
        asyncio.run_coroutine_threadsafe(self.loop.shutdown_default_executor(), self.loop).result(
            10
        )
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def start_spamd(service: SpamFilter, settings: Settings) -> Spamd:
    """Start a SpamdServer for ``service`` in a thread with its own event loop."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="spamd-test", daemon=True)
    thread.start()
    server = SpamdServer(service, settings)
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(10)
    return Spamd(server, loop, thread, settings, service)


SpamdFactory = Callable[..., Spamd]


@pytest.fixture
def run_spamd() -> Iterator[Callable[[SpamFilter, Settings], Spamd]]:
    """Starts servers (``run_spamd(service, settings)``) and stops them after the test."""
    started: list[Spamd] = []

    def run(service: SpamFilter, settings: Settings) -> Spamd:
        spamd = start_spamd(service, settings)
        started.append(spamd)
        return spamd

    yield run
    for spamd in started:
        spamd.stop()


@pytest.fixture
def make_spamd(
    make_settings: SettingsFactory,
    make_service: ServiceFactory,
    run_spamd: Callable[[SpamFilter, Settings], Spamd],
) -> SpamdFactory:
    """A trained server on this test's database (SQLite, and PostgreSQL when configured).

    Keyword arguments are SpamdSettings fields; ``max_message_bytes`` sets the hard cap.
    """

    def make(*, trained: bool = True, max_message_bytes: int | None = None, **spamd: Any) -> Spamd:
        overrides = spamd_overrides(**spamd)
        if max_message_bytes is not None:
            overrides["server"] = {"max_message_bytes": max_message_bytes}
        settings = make_settings(**overrides)
        service = make_service(settings)
        if trained:
            train(service)
        return run_spamd(service, settings)

    return make


@pytest.fixture
def sqlite_spamd(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    make_service: ServiceFactory,
    run_spamd: Callable[[SpamFilter, Settings], Spamd],
) -> SpamdFactory:
    """Like ``make_spamd`` on a SQLite file only, for transport tests the database cannot
    change (framing, timeouts, caps): they need not run twice. ``max_buffered_bytes`` sets
    the process's BodyBudget; ``server`` any other ServerSettings fields."""
    drop_settings(monkeypatch)

    def make(
        *,
        trained: bool = False,
        max_message_bytes: int | None = None,
        max_buffered_bytes: int | None = None,
        server: dict[str, Any] | None = None,
        **spamd: Any,
    ) -> Spamd:
        overrides = spamd_overrides(**spamd)
        sizes = {"max_message_bytes": max_message_bytes, "max_buffered_bytes": max_buffered_bytes}
        chosen = {**{k: v for k, v in sizes.items() if v is not None}, **(server or {})}
        if chosen:
            overrides["server"] = chosen
        url = f"sqlite:///{tmp_path / 'spamd.db'}"
        settings = Settings(_env_file=None, database_url=url, **overrides)
        service = make_service(settings)
        if trained:
            train(service)
        return run_spamd(service, settings)

    return make


Spamc = Callable[..., subprocess.CompletedProcess[bytes]]


@pytest.fixture
def spamc() -> Spamc:
    """Runs the real ``spamc -d 127.0.0.1 -p PORT ARGS...`` with ``message`` on stdin."""
    program = require_program("spamc")

    def run(port: int, *args: str, message: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        command = [program, "-d", "127.0.0.1", "-p", str(port), "-t", "20"]
        command += ["--connect-retries=1", "--retry-sleep=0", *args]
        return subprocess.run(command, input=message, capture_output=True, timeout=60)

    return run


def exchange(port: int, request: bytes, half_close: bool = True, timeout: float = 10) -> bytes:
    """Send raw ``request`` bytes, optionally shut down writing, and read the whole reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(request)
        if half_close:
            conn.shutdown(socket.SHUT_WR)
        return read_all(conn)


def read_all(conn: socket.socket) -> bytes:
    """Everything the peer sends until it closes."""
    chunks = []
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)
