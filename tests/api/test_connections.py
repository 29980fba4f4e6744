"""Hostile clients against a real uvicorn server (in a thread, on a free loopback port), with
the options ``spamfilter serve`` gives it, spoken to over raw sockets.

Timeouts are small (0.5 s) and every socket read has a generous deadline, so each test ends
by itself within seconds; no test asserts a duration beyond those upper bounds.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import uvicorn

from app.api.connections import server_options
from tests.api.conftest import Api, MakeApi
from tests.api.samples import HAMMY, message

SHORT = 0.5  # seconds: the idle and read timeouts of these servers
DEADLINE = 10.0  # seconds: the most any socket read here waits
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"


@dataclass
class Served:
    """A running server: its app (for its state) and its port."""

    api: Api
    port: int

    def connect(self) -> socket.socket:
        """A fresh connection to the server, with a read deadline."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=DEADLINE)
        sock.settimeout(DEADLINE)
        return sock


Serve = Callable[..., Served]


@pytest.fixture
def serve(make_api: MakeApi) -> Iterator[Serve]:
    """``serve(http="auto", **settings)``: start a server; every one is stopped afterwards."""
    running: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start(http: str = "auto", **overrides: Any) -> Served:
        server_settings = {
            "idle_timeout_seconds": SHORT,
            "read_timeout_seconds": SHORT,
            **overrides.pop("server", {}),
        }
        api = make_api(server=server_settings, **overrides)
        config = uvicorn.Config(
            api.app,
            host="127.0.0.1",
            port=0,
            lifespan="off",  # the app was given its service: nothing to build
            log_level="warning",
            timeout_graceful_shutdown=1,
            **server_options(api.settings, http),
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        running.append((server, thread))
        give_up = time.monotonic() + DEADLINE
        while not server.started:
            assert thread.is_alive() and time.monotonic() < give_up, "the server did not start"
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        return Served(api, port)

    yield start
    for server, _ in running:
        server.should_exit = True
    for _, thread in running:
        thread.join(DEADLINE)


@dataclass
class Reply:
    """An HTTP response read off a socket."""

    status: int
    headers: dict[str, str]
    body: bytes


def read_reply(sock: socket.socket) -> Reply:
    """One response (with a Content-Length body) from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed before a response: {data!r}"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the connection closed in the middle of a response"
        body += chunk
    return Reply(int(status_line.split()[1]), headers, body[:length])


def closed_by_server(sock: socket.socket) -> bool:
    """True when the server closes ``sock`` (reading an end of file or a reset) before the
    read deadline; anything it sends first is discarded."""
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def post_head(path: str, length: int) -> bytes:
    """The head of a POST of ``length`` body bytes."""
    return f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {length}\r\n\r\n".encode()


def trickle(sock: socket.socket, data: bytes, stop: threading.Event) -> threading.Thread:
    """Send ``data`` a byte every 50 ms from a thread, until done, ``stop`` or an error."""

    def run() -> None:
        for byte in data:
            if stop.wait(0.05):
                return
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                return

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("http", ["h11", "httptools"])
def test_an_idle_keep_alive_connection_is_closed(serve: Serve, http: str) -> None:
    served = serve(http)
    with served.connect() as sock:
        sock.sendall(HEALTHZ)
        assert read_reply(sock).status == 200
        assert closed_by_server(sock)


@pytest.mark.parametrize("http", ["h11", "httptools"])
def test_a_connection_that_never_sends_a_byte_is_closed(serve: Serve, http: str) -> None:
    served = serve(http)
    with served.connect() as sock:
        assert closed_by_server(sock)


@pytest.mark.parametrize("http", ["h11", "httptools"])
def test_a_request_head_trickled_a_byte_at_a_time_is_cut_off(serve: Serve, http: str) -> None:
    served = serve(http)
    stop = threading.Event()
    with served.connect() as sock:
        # 200 header bytes at 20 a second would take 10 s: longer than the read deadline.
        sender = trickle(sock, b"GET /healthz HTTP/1.1\r\n" + b"X-Slow: " + b"a" * 200, stop)
        try:
            assert closed_by_server(sock)
        finally:
            stop.set()
            sender.join(DEADLINE)


@pytest.mark.parametrize("path", ["/v1/classify", "/v1/feedback?label=ham", "/v1/forget"])
def test_a_body_trickled_a_byte_at_a_time_gets_408(serve: Serve, path: str) -> None:
    served = serve()
    raw = HAMMY + b"x" * 400  # 20 bytes a second: far longer than the 0.5 s read timeout
    stop = threading.Event()
    with served.connect() as sock:
        sock.sendall(post_head(path, len(raw)))
        sender = trickle(sock, raw, stop)
        try:
            reply = read_reply(sock)
        finally:
            stop.set()
            sender.join(DEADLINE)
        assert reply.status == 408
        assert reply.headers["content-type"] == "application/json"
        assert b'"error":"request_timeout"' in reply.body
        assert reply.headers["connection"] == "close"
        assert closed_by_server(sock)
    assert served.api.app.state.budget.held == 0


def test_past_the_connection_cap_the_server_answers_503(serve: Serve) -> None:
    served = serve(server={"max_connections": 2, "idle_timeout_seconds": 5.0})
    first, second = served.connect(), served.connect()
    with first, second:
        for sock in (first, second):  # both are known to the server, and kept open
            sock.sendall(HEALTHZ)
            assert read_reply(sock).status == 200
        with served.connect() as third:
            third.sendall(HEALTHZ)
            assert read_reply(third).status == 503
    give_up = time.monotonic() + DEADLINE
    while True:  # once the two have gone, there is room again
        with served.connect() as sock:
            sock.sendall(HEALTHZ)
            if read_reply(sock).status == 200:
                break
        assert time.monotonic() < give_up, "the closed connections were never let go"
        time.sleep(0.05)


def test_a_body_past_the_budget_gets_503_and_the_budget_is_given_back(serve: Serve) -> None:
    served = serve(server={"max_buffered_bytes": 4096, "read_timeout_seconds": 5.0})
    budget = served.api.app.state.budget
    raw = message("budget", "z" * 3000)
    with served.connect() as first, served.connect() as second:
        first.sendall(post_head("/v1/classify", len(raw)) + raw[:100])
        give_up = time.monotonic() + DEADLINE
        while budget.held < len(raw):  # the first body's declared length is held
            assert time.monotonic() < give_up, f"held {budget.held}, expected {len(raw)}"
            time.sleep(0.01)

        second.sendall(post_head("/v1/classify", len(raw)) + raw)
        refused = read_reply(second)
        assert refused.status == 503
        assert b'"error":"overloaded"' in refused.body
        assert refused.headers["retry-after"] == "1"

        first.sendall(raw[100:])
        assert read_reply(first).status == 200
    assert budget.held == 0
