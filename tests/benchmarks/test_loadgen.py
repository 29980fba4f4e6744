"""The load generator against a tiny asyncio server started here on 127.0.0.1, port 0: it
answers by path with fixed responses, so every count, status and failure is known.

Nothing here asserts how fast anything is; the one test of the time bound uses a fake clock.
"""

from __future__ import annotations

import asyncio
import json
import math
import socket
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from benchmarks.loadgen import (
    LoadResult,
    Request,
    check_loopback,
    drive,
    encode,
    percentile,
    run_load,
)

OK = Request("POST", "/ok", b"Subject: hi\r\n\r\nhello\r\n")
BUSY = Request("POST", "/busy", b"x")


class Server:
    """Answers ``/ok`` 200 with a JSON body, ``/busy`` 503, ``/close`` 200 and closes,
    ``/chunked`` 200 in two chunks, ``/drop`` by closing without an answer, ``/hang`` never.
    Counts the requests by path and the connections accepted."""

    def __init__(self) -> None:
        self.paths: Counter[str] = Counter()
        self.connections = 0
        self.bodies: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while await self._one(reader, writer):
                pass
        finally:
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        line = await reader.readline()
        if not line:
            return False
        path = line.split()[1].decode()
        length = 0
        while (field := await reader.readline()) != b"\r\n":
            name, _, value = field.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        self.bodies.append(await reader.readexactly(length))
        self.paths[path] += 1
        return await self._answer(path, writer)

    async def _answer(self, path: str, writer: asyncio.StreamWriter) -> bool:
        if path == "/drop":
            return False
        if path == "/hang":
            await asyncio.sleep(30)
        if path == "/chunked":
            writer.write(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                b'7\r\n{"verdi\r\n7\r\nct": 1}\r\n0\r\n\r\n'
            )
            return True
        status = "503 Service Unavailable" if path == "/busy" else "200 OK"
        body = json.dumps({"path": path}).encode()
        close = "Connection: close\r\n" if path == "/close" else ""
        head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{close}"
        writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        await writer.drain()
        return path != "/close"


Driven = Callable[..., Awaitable[LoadResult]]


def serve_and_drive(server: Server, **kwargs: Any) -> LoadResult:
    """Start ``server`` on 127.0.0.1 port 0, run ``drive`` against it, stop the server."""

    async def main() -> LoadResult:
        listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        try:
            return await drive("127.0.0.1", port, **kwargs)
        finally:
            listener.close()

    return asyncio.run(main())


def test_every_request_is_answered_counted_and_timed() -> None:
    server = Server()
    result = serve_and_drive(server, requests=[OK], connections=4, max_requests=50, duration=60)
    assert server.paths == {"/ok": 50}
    assert server.bodies == [OK.body] * 50
    assert result.answered == result.ok == 50
    assert result.statuses == {200: 50}
    assert len(result.latencies) == 50
    assert result.errors == {}
    assert server.connections == 4  # keep-alive: one connection each, reused


def test_statuses_other_than_2xx_are_errors_by_status() -> None:
    server = Server()
    result = serve_and_drive(server, requests=[OK, BUSY], connections=2, max_requests=40)
    assert server.paths == {"/ok": 20, "/busy": 20}
    assert result.statuses == {200: 20, 503: 20}
    assert result.ok == 20
    assert result.errors == {"503": 20}
    assert len(result.latencies) == 40  # an answered error is still timed


def test_a_connection_the_server_closes_is_opened_again() -> None:
    server = Server()
    close = Request("POST", "/close")
    result = serve_and_drive(server, requests=[close], connections=1, max_requests=5)
    assert result.statuses == {200: 5}
    assert server.connections == 5


def test_a_connection_dropped_without_an_answer_is_a_failure() -> None:
    server = Server()
    drop = Request("POST", "/drop")
    result = serve_and_drive(server, requests=[OK, drop], connections=1, max_requests=6)
    assert result.statuses == {200: 3}
    assert result.failures == {"closed": 3}
    assert result.errors == {"closed": 3}
    assert len(result.latencies) == 3


def test_an_answer_that_never_comes_is_a_timeout() -> None:
    server = Server()
    hang = Request("POST", "/hang")
    result = serve_and_drive(server, requests=[hang], connections=2, max_requests=2, timeout=0.2)
    assert result.failures == {"timeout": 2}
    assert result.answered == 0
    assert math.isnan(result.percentile_ms(99))


def test_a_port_nobody_listens_on_is_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = run_load("127.0.0.1", port, [OK], connections=2, max_requests=4, timeout=2)
    assert result.failures == {"refused": 4}
    assert result.ok_per_second == 0


def test_chunked_bodies_are_read_whole_and_tallied() -> None:
    server = Server()
    seen: list[tuple[int, bytes]] = []

    def tally(status: int, body: bytes) -> str:
        seen.append((status, body))
        return str(json.loads(body).get("verdict"))

    chunked = Request("POST", "/chunked")
    result = serve_and_drive(
        server, requests=[chunked, OK], connections=1, max_requests=4, tally=tally
    )
    assert seen[0] == (200, b'{"verdict": 1}')
    assert result.tallies == {"1": 2, "None": 2}  # /ok's body has no verdict


def test_the_run_stops_at_the_deadline_and_latencies_come_from_the_clock() -> None:
    ticks = iter(range(1000))
    server = Server()
    # One connection: start 0, deadline 5; each request reads the clock to check the
    # deadline, at the write and after the answer, so requests start at ticks 2 and 5.
    result = serve_and_drive(
        server,
        requests=[OK],
        connections=1,
        max_requests=100,
        duration=5,
        clock=lambda: float(next(ticks)),
    )
    assert server.paths == {"/ok": 2}
    assert result.latencies == [1.0, 1.0]
    assert result.seconds == 8.0
    assert result.ok_per_second == 2 / 8


def test_only_loopback_addresses_are_driven() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "::1"):
        check_loopback(host)
    for host in ("10.0.0.1", "192.0.2.7", "0.0.0.0", "example.org", "localhost.example"):
        with pytest.raises(ValueError, match="loopback"):
            check_loopback(host)
    with pytest.raises(ValueError, match="loopback"):
        run_load("192.0.2.7", 80, [OK], max_requests=1)


def test_the_request_bytes_are_keep_alive_http_1_1_with_a_length() -> None:
    raw = encode(Request("POST", "/v1/feedback?label=spam", b"abc"), "127.0.0.1", 8000)
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.split(b"\r\n") == [
        b"POST /v1/feedback?label=spam HTTP/1.1",
        b"Host: 127.0.0.1:8000",
        b"Content-Type: message/rfc822",
        b"Content-Length: 3",
    ]
    assert body == b"abc"


@pytest.mark.parametrize(
    ("p", "expected"),
    [(50, 5.0), (95, 10.0), (99, 10.0), (100, 10.0), (10, 1.0), (1, 1.0), (0, 1.0)],
)
def test_percentiles_are_nearest_rank(p: float, expected: float) -> None:
    assert percentile([float(v) for v in range(1, 11)], p) == expected


def test_percentiles_of_a_result_are_in_milliseconds() -> None:
    result = LoadResult(1, seconds=2.0, latencies=[0.003, 0.001, 0.002, 0.004])
    result.statuses[200] = 4
    assert result.percentile_ms(50) == pytest.approx(2.0)
    assert result.percentile_ms(99) == pytest.approx(4.0)
    assert result.ok_per_second == 2.0
    assert math.isnan(percentile([], 50))
