"""Fail-safe and connection hygiene: internal errors, hostile messages, idle and trickling
clients, and the buffered-bytes budget, through raw sockets and the real spamc.

Whatever goes wrong, the client gets one spamd status line, never a dropped connection or a
hang, and the connection's slot and budget bytes are given back. These do not depend on the
database, so they run on SQLite only.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest

from benchmarks.hostile import SHAPES, shape
from tests.adapters.spamd.conftest import Spamc, SpamdFactory, exchange, read_all
from tests.builders import make_message

MESSAGE = make_message("Lunch?", "Are we still on for noon\n")
PING = b"PING SPAMC/1.5\r\n\r\n"
PONG = b"SPAMD/1.5 0 PONG\r\n"
EX_IOERR = 74  # spamc -x: the server refused (whatever code it sent)
# Every attack shape (see app/evaluation/hostile.py) at a size at which each once raised
# RecursionError or ran for minutes, or larger; small enough to send in a test.
HOSTILE = [(s.name, 120_000) for s in SHAPES]


def check(message: bytes = MESSAGE) -> bytes:
    """A CHECK request as spamc sends it."""
    return b"CHECK SPAMC/1.5\r\nContent-length: %d\r\n\r\n" % len(message) + message


def wait_until_released(held: Callable[[], int], deadline: float = 10.0) -> None:
    """Poll ``held`` until it is 0: a worker thread may still be judging a message."""
    stop = time.monotonic() + deadline
    while held() and time.monotonic() < stop:
        time.sleep(0.02)
    assert held() == 0


@pytest.mark.peer
@pytest.mark.parametrize(
    ("error", "line"),
    [
        (RecursionError("maximum recursion depth exceeded"), b"70 Internal error: internal"),
        (RuntimeError("unexpected"), b"70 Internal error: internal"),
        (MemoryError(), b"75 Temporary failure: out_of_memory"),
    ],
    ids=["RecursionError", "RuntimeError", "MemoryError"],
)
def test_an_internal_error_is_a_status_line_and_spamc_passes_the_message(
    sqlite_spamd: SpamdFactory,
    spamc: Spamc,
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    line: bytes,
) -> None:
    spamd = sqlite_spamd()

    def broken(*_args: object, **_kwargs: object) -> None:
        raise error

    monkeypatch.setattr(spamd.service, "classify", broken)
    assert exchange(spamd.port, check()) == b"SPAMD/1.0 " + line + b"\r\n"
    # spamc's own fail-safe: the message passes unchanged; with -x it exits EX_IOERR
    passed = spamc(spamd.port, message=MESSAGE)
    assert (passed.returncode, passed.stdout) == (0, MESSAGE)
    strict = spamc(spamd.port, "-x", message=MESSAGE)
    assert (strict.returncode, strict.stdout) == (EX_IOERR, b"")
    assert exchange(spamd.port, PING) == PONG  # the server goes on serving
    assert spamd.server.budget.held == 0


@pytest.mark.peer
@pytest.mark.parametrize(("name", "size"), HOSTILE, ids=[name for name, _ in HOSTILE])
def test_hostile_messages_get_a_verdict_and_lose_their_forged_headers(
    sqlite_spamd: SpamdFactory, spamc: Spamc, name: str, size: int
) -> None:
    spamd = sqlite_spamd(trained=True)
    message = shape(name).build(size)
    reply = exchange(spamd.port, check(message), timeout=30)
    assert reply.startswith(b"SPAMD/1.1 0 EX_OK\r\nSpam: "), reply
    result = spamc(spamd.port, "-x", "-s", "2000000", message=message)
    assert result.returncode == 0, result.stderr
    head = result.stdout.partition(b"\r\n\r\n")[0]
    assert head.startswith(b"X-Spam-")  # our headers on top, the forged ones gone
    assert b"version=spamfilter" in head
    assert b"score=-100.0" not in head and b"X-Spam-Flag: NO" not in head
    assert exchange(spamd.port, PING) == PONG
    wait_until_released(lambda: spamd.server.budget.held)


def test_a_client_that_sends_nothing_is_closed_after_the_idle_timeout_and_its_slot_freed(
    sqlite_spamd: SpamdFactory,
) -> None:
    # The request deadline is long; only the idle timeout can free the one slot in time.
    spamd = sqlite_spamd(max_connections=1, timeout_seconds=60, idle_timeout_seconds=0.2)
    with socket.create_connection(("127.0.0.1", spamd.port), timeout=10) as idle:
        time.sleep(0.05)  # the one slot is taken by a client that sends nothing
        assert exchange(spamd.port, PING) == PONG  # served once the idle client is closed
        assert read_all(idle) == (
            b"SPAMD/1.0 79 Timeout: (0.2 second socket timeout reading input from client)\r\n"
        )


def test_a_client_that_pauses_inside_its_request_is_closed_after_the_idle_timeout(
    sqlite_spamd: SpamdFactory,
) -> None:
    spamd = sqlite_spamd(timeout_seconds=60, idle_timeout_seconds=0.2)
    with socket.create_connection(("127.0.0.1", spamd.port), timeout=10) as conn:
        conn.sendall(b"CHECK SPAMC/1.5\r\nContent-length: 500\r\n\r\nFrom: a@b\r\n")
        assert read_all(conn).startswith(b"SPAMD/1.0 79 Timeout: (0.2 second socket timeout")
    assert spamd.server.budget.held == 0


def test_a_client_trickling_bytes_meets_the_request_deadline(sqlite_spamd: SpamdFactory) -> None:
    # Each byte comes well within the idle timeout; the whole request never would.
    spamd = sqlite_spamd(timeout_seconds=0.5, idle_timeout_seconds=5)
    reply = b""
    with socket.create_connection(("127.0.0.1", spamd.port), timeout=10) as conn:
        conn.sendall(b"CHECK SPAMC/1.5\r\nContent-length: 1000\r\n\r\n")
        conn.setblocking(False)
        for _ in range(200):  # 200 bytes over about 10 s, unless the server answers first
            try:
                conn.send(b"x")
                reply += conn.recv(4096)
            except BlockingIOError:
                pass
            except OSError:
                break
            if reply.endswith(b"\r\n"):
                break
            time.sleep(0.05)
    assert reply == (
        b"SPAMD/1.0 79 Timeout: (0.5 second socket timeout reading input from client)\r\n"
    )
    assert spamd.server.budget.held == 0


@pytest.mark.peer
def test_a_body_over_the_buffered_bytes_budget_is_a_temporary_failure(
    sqlite_spamd: SpamdFactory, spamc: Spamc
) -> None:
    spamd = sqlite_spamd(trained=True, max_buffered_bytes=1024)
    big = make_message("big", "word " * 1000 + "\n")
    assert len(big) > spamd.server.budget.limit == 1024
    assert exchange(spamd.port, check(big)) == b"SPAMD/1.0 75 Temporary failure: overloaded\r\n"
    assert spamd.server.budget.held == 0
    strict = spamc(spamd.port, "-x", message=big)
    assert (strict.returncode, strict.stdout) == (EX_IOERR, b"")
    passed = spamc(spamd.port, message=big)
    assert (passed.returncode, passed.stdout) == (0, big)
    assert spamd.server.budget.held == 0
    # a message that fits is judged as ever
    assert exchange(spamd.port, check()).startswith(b"SPAMD/1.1 0 EX_OK\r\nSpam: False ; ")
    assert spamd.server.budget.held == 0


def test_a_trickled_body_holding_the_budget_is_cut_off_for_a_waiting_client(
    sqlite_spamd: SpamdFactory,
) -> None:
    """A client sends most of the budget's worth of body, then a byte every 0.1 s (under the
    idle timeout, so it never times out by itself): a CHECK that needs room waits, the
    trickler is cut off (79) and the CHECK answered."""
    budget = {"stall_seconds": 0.5, "budget_wait_seconds": 5.0, "max_buffered_bytes": 65_536}
    spamd = sqlite_spamd(trained=True, timeout_seconds=20, idle_timeout_seconds=5, server=budget)
    stop = threading.Event()
    with socket.create_connection(("127.0.0.1", spamd.port), timeout=10) as holder:
        holder.sendall(b"CHECK SPAMC/1.5\r\nContent-length: 100000\r\n\r\n" + b"x" * 65_400)
        give_up = time.monotonic() + 10
        while spamd.server.budget.held < 65_400:
            assert time.monotonic() < give_up, "the body never reached the budget"
            time.sleep(0.01)
        sender = threading.Thread(target=drip, args=(holder, stop), daemon=True)
        sender.start()
        try:
            answered = exchange(spamd.port, check())
            assert answered.startswith(b"SPAMD/1.1 0 EX_OK\r\nSpam: False ; "), answered
            assert read_all(holder).startswith(b"SPAMD/1.0 79 Timeout: (cut off")
        finally:
            stop.set()
            sender.join(10)
    wait_until_released(lambda: spamd.server.budget.held)


def drip(sock: socket.socket, stop: threading.Event) -> None:
    """A byte every 0.1 s on ``sock`` until ``stop`` or an error."""
    while not stop.wait(0.1):
        try:
            sock.sendall(b"y")
        except OSError:
            return


def test_a_slow_service_is_a_temporary_failure_and_its_bytes_come_back_when_it_ends(
    sqlite_spamd: SpamdFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    spamd = sqlite_spamd(timeout_seconds=0.3)
    classify = spamd.service.classify

    def slow(*args: object, **kwargs: object) -> object:
        time.sleep(2.0)
        return classify(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(spamd.service, "classify", slow)
    assert exchange(spamd.port, check()) == (
        b"SPAMD/1.0 75 Temporary failure: (no answer within 0.3 seconds)\r\n"
    )
    assert spamd.server.budget.held > 0  # the worker thread still holds the message
    wait_until_released(lambda: spamd.server.budget.held)
