"""``serve --workers N``: each worker listens on a socket of its own (``app.api.workers``),
so a burst of connections is spread over the workers rather than taken by the first awake;
a port in use is still refused, and a worker that dies is replaced on its own socket."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from app.api.workers import reuse_port_sockets
from tests.builders import ham_message
from tests.environment import without_settings
from tests.serving import served

pytestmark = pytest.mark.skipif(not hasattr(socket, "SO_REUSEPORT"), reason="no SO_REUSEPORT")


def listening_sockets(port: int) -> set[str]:
    """The inodes of the TCP sockets listening on 127.0.0.1:``port`` (from /proc/net/tcp)."""
    wanted = f"0100007F:{port:04X}"
    with open("/proc/net/tcp") as table:
        rows = [line.split() for line in table.readlines()[1:]]
    return {row[9] for row in rows if row[1] == wanted and row[3] == "0A"}


def listening_socket_of(pid: int, port: int) -> set[str]:
    """Which of the sockets listening on ``port`` the process ``pid`` holds."""
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                held.add(target[8:-1])
    return held & listening_sockets(port)


def one_socket_each(workers: set[int], port: int) -> bool:
    """Whether every worker listens on exactly one socket of ``port``, none shared."""
    held = [listening_socket_of(pid, port) for pid in workers]
    return all(len(h) == 1 for h in held) and len(set().union(*held)) == len(workers)


def workers_of(process: subprocess.Popen[bytes]) -> set[int]:
    """The worker processes of a ``serve`` (its children other than multiprocessing's); a
    child reaped between the listing and the reading of its command line is none."""
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
    workers = set()
    for pid in children:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except FileNotFoundError:  # a killed worker, reaped meanwhile
            continue
        if b"resource_tracker" not in command:
            workers.add(int(pid))
    return workers


def test_each_socket_is_bound_to_one_port_and_a_taken_port_is_refused() -> None:
    sockets = reuse_port_sockets("127.0.0.1", 0, 3)
    try:
        ports = {sock.getsockname()[1] for sock in sockets}
        assert len(ports) == 1 and 0 not in ports
        for sock in sockets:
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
        (port,) = ports
        sockets[0].listen()
        # A second serve on the same port would share it: it is refused instead.
        with pytest.raises(OSError):
            reuse_port_sockets("127.0.0.1", port, 2)
    finally:
        for sock in sockets:
            sock.close()
    with socket.socket() as plain:
        plain.bind(("127.0.0.1", 0))
        plain.listen()
        with pytest.raises(OSError):
            reuse_port_sockets("127.0.0.1", plain.getsockname()[1], 2)


def test_a_burst_of_connections_reaches_every_worker(tmp_path: Path) -> None:
    database = tmp_path / "workers.db"
    settings = {
        "SPAMFILTER_DATABASE_URL": f"sqlite:///{database}",
        "SPAMFILTER_CONSOLE__FLUSH_SECONDS": "0.2",
        "SPAMFILTER_LOG__VERDICTS": "off",
    }
    message = ham_message(random.Random(1), 0)
    with served(tmp_path, settings, workers=2) as server:
        port = int(server.url.rsplit(":", 1)[1])
        # Each worker listens once its app has started; uvicorn's own supervisor shares one.
        _wait_for(lambda: len(listening_sockets(port)) == 2)
        assert one_socket_each(workers_of(server.process), port)

        # 32 keep-alive connections opened at once, then a request on each: with one shared
        # socket the first worker awake could take them all (2^-31 by the port hash here).
        connections = [socket.create_connection(("127.0.0.1", port)) for _ in range(32)]
        try:
            request = (
                f"POST /v1/classify HTTP/1.1\r\nHost: x\r\nContent-Type: message/rfc822\r\n"
                f"Content-Length: {len(message)}\r\n\r\n"
            ).encode() + message
            with ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(lambda c: _ask(c, request), connections))
        finally:
            for connection in connections:
                connection.close()
        assert all(answer.startswith(b"HTTP/1.1 200") for answer in answers)
        sources = _recording_processes(database, deadline=time.monotonic() + 10)
        assert sources == 2
        second = subprocess.run(
            [sys.executable, "-c", "from app.cli import main; main()", "serve",
             "--port", str(port), "--workers", "2"],
            env=without_settings(settings), capture_output=True, timeout=60,
        )  # fmt: skip
        assert second.returncode != 0
        assert b"address already in use" in second.stderr.lower()
        assert len(listening_sockets(port)) == 2


def test_a_worker_that_dies_is_replaced_on_its_socket(tmp_path: Path) -> None:
    settings = {"SPAMFILTER_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}"}
    with served(tmp_path, settings, workers=2) as server:
        port = int(server.url.rsplit(":", 1)[1])
        workers = _wait_for_workers(server.process, 2)
        _wait_for(lambda: one_socket_each(workers, port))
        sockets = listening_sockets(port)
        for victim in sorted(workers):  # each worker in turn, whichever socket it had
            os.kill(victim, signal.SIGKILL)
            now = _wait_for_workers(server.process, 2, without=victim)
            assert len(now & workers) == 1
            # The replacement listens on the socket the dead worker had: one each, the same.
            _wait_for(lambda: one_socket_each(now, port))  # noqa: B023 - waited for here
            assert listening_sockets(port) == sockets
            workers = now
        for _ in range(20):  # every connection is answered, whichever socket it hashes to
            with urllib.request.urlopen(f"{server.url}/readyz", timeout=5) as reply:
                assert reply.status == 200


def _ask(connection: socket.socket, request: bytes) -> bytes:
    connection.sendall(request)
    connection.settimeout(10)
    return connection.recv(65536)


def _recording_processes(database: Path, deadline: float) -> int:
    """How many processes have written per-minute counts (each worker has its own source)."""
    while True:
        with sqlite3.connect(database) as db:
            found = db.execute("SELECT COUNT(DISTINCT source) FROM activity_minute").fetchone()
        if found[0] >= 2 or time.monotonic() > deadline:
            return int(found[0])
        time.sleep(0.1)


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _wait_for_workers(
    process: subprocess.Popen[bytes], count: int, without: int | None = None
) -> set[int]:
    deadline = time.monotonic() + 30
    while True:
        workers = workers_of(process)
        if len(workers) == count and without not in workers:
            return workers
        assert time.monotonic() < deadline, f"workers {workers}"
        time.sleep(0.1)
