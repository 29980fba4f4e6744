"""Hostile clients against a real uvicorn server (in a thread, on a free loopback port), with
the options ``spamfilter serve`` gives it, spoken to over raw sockets.

Timeouts are small (0.5 s) and every socket read has a generous deadline, so each test ends
by itself within seconds; no test asserts a duration beyond those upper bounds.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import uvicorn

from app.api.connections import server_options
from app.api.console.session import COOKIE, Role
from tests.api.conftest import Api, MakeApi
from tests.api.samples import HAMMY, message
from tests.serving import closed_after

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
    """True when the server closes ``sock`` before the read deadline."""
    return closed_after(lambda: sock.recv(65536))


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


TOKEN = "hold-test-token"


def post(path: str, raw: bytes, token: str | None = None) -> bytes:
    """A whole POST of ``raw``, with ``token`` as its bearer when given."""
    auth = "" if token is None else f"Authorization: Bearer {token}\r\n"
    head = f"POST {path} HTTP/1.1\r\nHost: t\r\n{auth}Content-Length: {len(raw)}\r\n\r\n"
    return head.encode() + raw


def answer(served: Served, request: bytes) -> Reply:
    """The reply to ``request`` on a fresh connection."""
    with served.connect() as sock:
        sock.sendall(request)
        return read_reply(sock)


def wait_for_held(served: Served, size: int) -> None:
    """Until the server's budget holds ``size`` bytes (within the socket deadline)."""
    budget = served.api.app.state.budget
    give_up = time.monotonic() + DEADLINE
    while budget.held != size:
        assert time.monotonic() < give_up, f"held {budget.held}, expected {size}"
        time.sleep(0.01)


def test_bodies_announced_but_never_sent_hold_nothing(serve: Serve) -> None:
    """A dozen connections announce a body at the 25 MiB cap and send none of it: the budget
    (128 MiB) holds nothing for them, and classify and feedback, with and without a token,
    are served meanwhile."""
    served = serve(api_tokens=[TOKEN], server={"read_timeout_seconds": 10.0})
    cap = served.api.settings.server.max_message_bytes
    holders = [served.connect() for _ in range(12)]
    try:
        for sock in holders:
            sock.sendall(post_head("/v1/classify", cap))
        for request in (
            post("/v1/classify", HAMMY),
            post("/v1/classify", HAMMY, TOKEN),
            post("/v1/feedback?label=ham", HAMMY, TOKEN),
        ):
            reply = answer(served, request)
            assert reply.status == 200, reply.body
        assert served.api.app.state.budget.held == 0
    finally:
        for sock in holders:
            sock.close()


def test_stalled_bodies_are_cut_off_when_others_wait_for_room(serve: Serve) -> None:
    """Four anonymous clients each send 8 KiB of a body and stop: together they fill the
    anonymous share. A client with a token is served past them at once; an anonymous one
    waits, the stalled bodies are cut off (408) and it is served."""
    served = serve(
        api_tokens=[TOKEN],
        server={
            "max_buffered_bytes": 64 * 1024,
            "anonymous_share": 0.5,
            "stall_seconds": 0.3,
            "budget_wait_seconds": 5.0,
            "read_timeout_seconds": 10.0,
        },
    )
    holders = [served.connect() for _ in range(4)]
    with holders[0], holders[1], holders[2], holders[3]:
        for sock in holders:
            sock.sendall(post_head("/v1/classify", 20_000) + b"x" * 8192)
        wait_for_held(served, 4 * 8192)
        assert answer(served, post("/v1/feedback?label=ham", HAMMY, TOKEN)).status == 200
        assert answer(served, post("/v1/classify", HAMMY)).status == 200
        wait_for_held(served, 3 * 8192)  # one was enough to make room, and one was cut
        readable, _, _ = select.select(holders, [], [], DEADLINE)
        assert len(readable) == 1
        cut = read_reply(readable[0])
        assert cut.status == 408
        assert b"cut off" in cut.body
    wait_for_held(served, 0)


def test_a_body_that_finds_no_room_in_time_gets_503(serve: Serve) -> None:
    """A body still arriving is never cut off: one that wants its room waits, then 503."""
    served = serve(
        server={
            "max_buffered_bytes": 4096,
            "budget_wait_seconds": 0.5,
            "stall_seconds": 60.0,
            "read_timeout_seconds": 10.0,
        }
    )
    raw = message("budget", "z" * 3000)
    with served.connect() as first:
        first.sendall(post_head("/v1/classify", len(raw)) + raw[:2000])
        wait_for_held(served, 2000)
        refused = answer(served, post("/v1/classify", raw))
        assert refused.status == 503
        assert b'"error":"overloaded"' in refused.body
        assert refused.headers["retry-after"] == "1"
        first.sendall(raw[2000:])
        assert read_reply(first).status == 200
    wait_for_held(served, 0)


def test_an_oversized_console_field_is_refused_before_the_rest_of_the_form(
    serve: Serve,
) -> None:
    """A read-only session posts a scan form with a field three times the message cap: the
    413 page comes while most of the form is still unsent, and does not repeat the field."""
    cap = 64 * 1024
    served = serve(
        api_tokens=[TOKEN],
        read_tokens=["reader-token"],
        server={"max_message_bytes": cap, "read_timeout_seconds": 10.0},
        console={"session_key": "a configured key"},  # the keys exist before the first login
    )
    keys = served.api.app.state.console_keys
    cookie = keys.issue("reader-token", Role.READ)
    session = keys.session(cookie)
    assert session is not None
    form = f"csrf={keys.csrf(session.nonce)}&action=classify&raw=".encode() + b"zq" * cap
    head = (
        f"POST /ui/scan HTTP/1.1\r\nHost: t\r\nCookie: {COOKIE}={cookie}\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {len(form)}\r\n\r\n"
    ).encode()
    with served.connect() as sock:
        sock.sendall(head + form[: cap + 4096])  # past the cap, far from the end of the form
        reply = read_reply(sock)
    assert reply.status == 413
    assert b"message_too_large" in reply.body
    assert b"zqzq" not in reply.body
    wait_for_held(served, 0)
