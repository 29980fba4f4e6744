"""Milter fixtures: a trained database, the milter as a real process or in-process, message
files for miltertest, and miltertest itself.

The model is trained through the service on 20 generated spam and 20 generated ham messages
(tests.builders), with a small ``min_messages`` and a spam cut-off of 5 nats, so the test
messages below score far beyond either threshold. The milter process is the real CLI
(``spamfilter milter``) with the same settings passed as ``SPAMFILTER_*`` variables.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.adapters.milter.server import MilterServer
from app.admission import BodyBudget
from app.binding import parse_socket
from app.service import SpamFilter
from app.settings.schema import Settings
from tests.adapters.milter.wire import Peer
from tests.adapters.peers import require_program
from tests.builders import (
    COMMON_WORDS,
    HAM_SENDERS,
    HAMMY_WORDS,
    SPAM_SENDERS,
    SPAMMY_WORDS,
    ham_message,
    make_message,
    spam_message,
)

LUA = Path(__file__).parent / "lua"
# The settings every milter in these tests runs with (nested groups as for make_settings).
MODEL: dict[str, Any] = {
    "decision": {"min_messages": 1, "ham_log_odds": 0.0, "spam_log_odds": 5.0},
    "training_mode": "everything",
}
TRAINING_MESSAGES = 20
START_TIMEOUT = 30.0
_LISTENING = re.compile(r"milter listening on (\S+)")


def merged(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Settings overrides merged group by group (later layers win)."""
    result: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
                result[key] = {**result[key], **value}
            else:
                result[key] = value
    return result


def environment(settings: Settings) -> dict[str, str]:
    """``settings`` as the ``SPAMFILTER_*`` variables that rebuild it in another process."""
    env: dict[str, str] = {}
    for key, value in settings.model_dump().items():
        if isinstance(value, dict):
            for name, inner in value.items():
                env[f"SPAMFILTER_{key.upper()}__{name.upper()}"] = _env_value(inner)
        else:
            env[f"SPAMFILTER_{key.upper()}"] = _env_value(value)
    return {name: value for name, value in env.items() if value != ""}


def _env_value(value: object) -> str:
    if value is None:
        return ""  # left unset: the default
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    return str(value)


def spammy_message(words: int = 60, extra: int = 0) -> bytes:
    """A spam-looking message not in the training set; ``extra`` adds that many bytes of
    spammy lines to the body (for multi-chunk tests)."""
    rng = random.Random(1001)
    lines = [" ".join(rng.choice((*SPAMMY_WORDS, *COMMON_WORDS)) for _ in range(12))]
    lines += [" ".join(rng.choice(SPAMMY_WORDS) for _ in range(words // 12))]
    while extra > 0:
        line = " ".join(rng.choice(SPAMMY_WORDS) for _ in range(10))
        lines.append(line)
        extra -= len(line) + 2
    return make_message("Claim your prize today", "\n".join(lines) + "\n", SPAM_SENDERS[0])


def hammy_message() -> bytes:
    """A ham-looking message that also carries X-Spam-* fields forged by its sender."""
    rng = random.Random(1002)
    body = " ".join(rng.choice((*HAMMY_WORDS, *COMMON_WORDS)) for _ in range(60))
    forged = [("X-Spam-Flag", "YES"), ("X-Spam-Status", "Yes, score=99.0 (forged)")]
    return make_message("Project review agenda", body + "\n", HAM_SENDERS[0], headers=forged)


def write_message(folder: Path, name: str, raw: bytes) -> Path:
    """``NAME.headers`` ("Name: value" lines, LF) and ``NAME.body`` for lua/lib.lua; returns
    the common path prefix."""
    head, _, body = raw.partition(b"\r\n\r\n")
    prefix = folder / name
    prefix.with_suffix(".headers").write_bytes(head.replace(b"\r\n", b"\n") + b"\n")
    prefix.with_suffix(".body").write_bytes(body)
    return prefix


def train(service: SpamFilter) -> None:
    """Learn the generated training mail: 20 spam and 20 ham messages."""
    rng = random.Random(7)
    for serial in range(TRAINING_MESSAGES):
        service.learn(spam_message(rng, serial), "spam")
        service.learn(ham_message(rng, 1000 + serial), "ham")


@pytest.fixture
def milter_settings(
    make_settings: Callable[..., Settings], make_service: Callable[..., SpamFilter]
) -> Callable[..., Settings]:
    """Settings for a milter on this test's database, trained once on first use."""
    trained: list[bool] = []

    def make(**overrides: Any) -> Settings:
        settings = make_settings(**merged(MODEL, overrides))
        if not trained:
            service = make_service(settings)
            train(service)
            service.close()
            trained.append(True)
        return settings

    return make


@pytest.fixture
def messages(tmp_path: Path) -> dict[str, Path]:
    """Message files for the Lua scripts: SPAM, HAM and BIG (about 200 KiB of spam)."""
    folder = tmp_path / "messages"
    folder.mkdir()
    return {
        "SPAM": write_message(folder, "spam", spammy_message()),
        "HAM": write_message(folder, "ham", hammy_message()),
        "BIG": write_message(folder, "big", spammy_message(extra=200 * 1024)),
    }


@dataclass
class MilterProcess:
    """A ``spamfilter milter`` process; ``socket`` is where it listens (libmilter notation)."""

    process: subprocess.Popen[bytes]
    log: Path
    socket: str = ""

    def output(self) -> str:
        """Everything the process wrote so far."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def server_log(self) -> str:
        """What the process wrote but the verdict log's JSON lines (which name the user)."""
        return "\n".join(line for line in self.output().splitlines() if not line.startswith("{"))

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not exit within 10 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


@pytest.fixture
def start_milter(tmp_path: Path) -> Iterator[Callable[..., MilterProcess]]:
    """Starts ``spamfilter milter --socket SOCKET`` with ``settings`` passed as SPAMFILTER_*
    variables; waits until it listens; stops it at teardown."""
    started: list[MilterProcess] = []

    def start(settings: Settings, socket: str) -> MilterProcess:
        work = tmp_path / f"milter-{len(started)}"
        work.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPAMFILTER_")}
        env |= environment(settings)
        command = [sys.executable, "-c", "from app.cli import main; main()"]
        log = work / "milter.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [*command, "milter", "--socket", socket, "--log-level", "debug"],
                cwd=work, env=env, stdout=sink, stderr=subprocess.STDOUT,
            )  # fmt: skip
        milter = MilterProcess(process, log)
        started.append(milter)
        milter.socket = _wait_until_listening(milter)
        return milter

    yield start
    for milter in started:
        milter.stop()


def _wait_until_listening(milter: MilterProcess) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        found = _LISTENING.search(milter.output())
        if found:
            return found.group(1)
        if milter.process.poll() is not None:
            pytest.fail(f"the milter exited with {milter.process.returncode}:\n{milter.output()}")
        time.sleep(0.05)
    pytest.fail(f"the milter did not listen within {START_TIMEOUT:.0f} s:\n{milter.output()}")


@dataclass
class InProcessMilter:
    """A MilterServer on its own event loop in a thread (for tests that patch the service)."""

    service: SpamFilter
    settings: Settings
    socket: str = ""
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    thread: threading.Thread | None = None

    @property
    def server(self) -> MilterServer:
        """The server (after ``start``)."""
        return self._server

    def start(self, socket: str, budget: BodyBudget | None = None) -> None:
        """Bind ``socket`` and serve in a daemon thread."""
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._server = MilterServer(self.service, self.settings, budget)
        bound = asyncio.run_coroutine_threadsafe(
            self._server.start(parse_socket(socket)), self.loop
        )
        self.socket = bound.result(10)

    def stop(self) -> None:
        """Close the listener, cancel open connections, stop the loop."""
        if self.thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()

    async def _shutdown(self) -> None:
        await self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@pytest.fixture
def in_process_milter(
    make_service: Callable[..., SpamFilter],
) -> Iterator[Callable[[Settings, str], InProcessMilter]]:
    """Starts an InProcessMilter for a Settings on a socket; stopped at teardown."""
    started: list[InProcessMilter] = []

    def start(settings: Settings, socket: str) -> InProcessMilter:
        milter = InProcessMilter(make_service(settings, migrate=False), settings)
        started.append(milter)
        milter.start(socket)
        return milter

    yield start
    for milter in started:
        milter.stop()


@pytest.fixture
def unix_socket() -> Iterator[str]:
    """``unix:PATH`` in a new folder under /tmp: tmp_path can exceed the 107 bytes a unix
    socket path may have."""
    folder = Path(tempfile.mkdtemp(prefix="spamfilter-milter-", dir="/tmp"))
    yield f"unix:{folder / 'milter.sock'}"
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def miltertest() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Runs ``miltertest -s lua/SCRIPT`` with -D NAME=VALUE for each keyword; fails the test
    with miltertest's output unless it exits 0."""
    program = require_program("miltertest")

    def run(script: str, socket: str, milter_log: str = "", **defines: object) -> Any:
        args = [program, "-v", "-s", str(LUA / script), "-D", f"LIB={LUA / 'lib.lua'}"]
        args += ["-D", f"SOCKET={socket}"]
        for name, value in defines.items():
            args += ["-D", f"{name}={value}"]
        result = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
        if result.returncode != 0:
            pytest.fail(
                f"miltertest {script} exited {result.returncode}\n--- stdout\n{result.stdout}"
                f"--- stderr\n{result.stderr}--- milter\n{milter_log}"
            )
        return result

    return run


@pytest.fixture
def peer_factory() -> Iterator[Callable[[str], Peer]]:
    """Connects hand-written MTAs (``wire.Peer``) to an address; closed at teardown."""
    peers: list[Peer] = []

    def connect(address: str) -> Peer:
        peers.append(Peer(address))
        return peers[-1]

    yield connect
    for peer in peers:
        peer.sock.close()
