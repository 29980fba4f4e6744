"""The transport over real sockets: timeouts, the size cap, refusals, limits, odd clients.

These do not depend on the database, so they run on SQLite only.
"""

from __future__ import annotations

import re
import socket
import threading
import time
import zlib

import pytest

from app.errors import StorageUnavailable
from tests.adapters.spamd.conftest import SpamdFactory, exchange, read_all
from tests.builders import make_message

MESSAGE = make_message("Lunch?", "Are we still on for noon\n")


def check(message: bytes = MESSAGE, version: str = "1.5", fields: bytes = b"") -> bytes:
    """A CHECK request as spamc sends it."""
    length = b"Content-length: %d\r\n" % len(message)
    return f"CHECK SPAMC/{version}\r\n".encode() + fields + length + b"\r\n" + message


def test_a_client_that_stalls_after_the_headers_times_out(sqlite_spamd: SpamdFactory) -> None:
    spamd = sqlite_spamd(timeout_seconds=0.3)
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", spamd.port), timeout=10) as conn:
        conn.sendall(b"CHECK SPAMC/1.5\r\nContent-length: 500\r\n\r\nFrom: a@b\r\n")
        reply = read_all(conn)  # no half-close: the client just stops sending
    elapsed = time.monotonic() - started
    assert reply == (
        b"SPAMD/1.0 79 Timeout: (0.3 second socket timeout reading input from client)\r\n"
    )
    assert 0.25 <= elapsed < 3


def test_a_client_that_sends_nothing_times_out(sqlite_spamd: SpamdFactory) -> None:
    spamd = sqlite_spamd(timeout_seconds=0.2)
    with socket.create_connection(("127.0.0.1", spamd.port), timeout=10) as conn:
        assert read_all(conn).startswith(b"SPAMD/1.0 79 Timeout: ")


def test_an_oversized_content_length_is_refused_before_the_body(
    sqlite_spamd: SpamdFactory,
) -> None:
    spamd = sqlite_spamd(max_message_bytes=1024, timeout_seconds=10)
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", spamd.port), timeout=10) as conn:
        conn.sendall(b"PROCESS SPAMC/1.5\r\nContent-length: 50000000\r\n\r\nFrom: a@b\r\n")
        reply = read_all(conn)
    assert reply == (
        b"SPAMD/1.0 65 Data error: Content-length 50000000 is over the limit of 1024 bytes\r\n"
    )
    assert time.monotonic() - started < 5  # answered at once, not after the read timeout


def test_an_oversized_body_without_content_length_is_refused(
    sqlite_spamd: SpamdFactory,
) -> None:
    spamd = sqlite_spamd(max_message_bytes=1024)
    request = b"CHECK SPAMC/1.2\r\n\r\n" + make_message("big", "word " * 400 + "\n")
    assert exchange(spamd.port, request) == (
        b"SPAMD/1.0 65 Data error: message is over the limit of 1024 bytes\r\n"
    )


@pytest.mark.parametrize(
    ("request_bytes", "reply"),
    [
        (b"HELLO\r\n", b"SPAMD/1.0 76 Bad header line: HELLO\r\n"),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"SPAMD/1.0 76 Bad header line: GET / HTTP/1.1\r\n"),
        (b"", b"SPAMD/1.0 76 Bad header line: (closed before headers)\r\n"),
        (
            b"CHECK SPAMC/1.5\r\nContent-length: 99\r\n\r\nFrom: a@b\r\n",
            b"SPAMD/1.0 76 Bad header line: (Content-Length mismatch: Expected 99 bytes,"
            b" got 11 bytes)\r\n",
        ),
        (
            b"CHECK SPAMC/1.5\r\nX-Long: " + b"x" * 20_000 + b"\r\n\r\n",
            b"SPAMD/1.0 76 Bad header line: (line longer than 16384 bytes)\r\n",
        ),
        (
            check(b"hello, no header here\r\n"),
            b"SPAMD/1.0 65 Data error: input does not start with an RFC 822 header\r\n",
        ),
    ],
)
def test_malformed_requests(sqlite_spamd: SpamdFactory, request_bytes: bytes, reply: bytes) -> None:
    assert exchange(sqlite_spamd().port, request_bytes) == reply


def test_unknown_request_fields_are_ignored(sqlite_spamd: SpamdFactory) -> None:
    spamd = sqlite_spamd(trained=True)
    plain = exchange(spamd.port, check())
    fields = b"X-Custom: 1\r\nQueue-Id: 4AbC\r\nHelo: mx.example.org\r\n"
    assert exchange(spamd.port, check(fields=fields)) == plain
    assert plain.startswith(b"SPAMD/1.1 0 EX_OK\r\nSpam: False ; -")


def test_exim_reads_the_report_reply(sqlite_spamd: SpamdFactory) -> None:
    """Exim sends REPORT SPAMC/1.2 and parses the reply with sscanf formats; its second
    format (no Content-length) must match, with the report after the blank line."""
    spamd = sqlite_spamd(trained=True)
    request = b"REPORT SPAMC/1.2\r\nUser: nobody\r\nContent-length: %d\r\n\r\n" % len(MESSAGE)
    reply = exchange(spamd.port, request + MESSAGE)
    match = re.match(rb"SPAMD/(\S{1,7}) 0 EX_OK\r\nSpam: \S+ ; (\S+) / (\S+)\r\n\r\n", reply)
    assert match is not None, reply
    assert float(match[2]) < float(match[3]) == 5.0
    assert reply[match.end() :].startswith(b"Spam filter verdict: ham")


def test_a_compressed_request_is_answered_like_a_plain_one(sqlite_spamd: SpamdFactory) -> None:
    spamd = sqlite_spamd(trained=True)
    packed = zlib.compress(MESSAGE, 3)
    request = (
        b"SYMBOLS SPAMC/1.5\r\nCompress: zlib\r\nContent-length: %d\r\n\r\n" % len(packed) + packed
    )
    plain = b"SYMBOLS SPAMC/1.5\r\nContent-length: %d\r\n\r\n" % len(MESSAGE) + MESSAGE
    assert exchange(spamd.port, request) == exchange(spamd.port, plain)


def test_skip_gets_no_reply_and_ping_a_pong(sqlite_spamd: SpamdFactory) -> None:
    spamd = sqlite_spamd()
    assert exchange(spamd.port, b"SKIP SPAMC/1.5\r\n\r\n") == b""
    assert exchange(spamd.port, b"PING SPAMC/1.5\r\n\r\n") == b"SPAMD/1.5 0 PONG\r\n"
    # before 1.5 PING has no header block: the pong comes without waiting for one
    assert exchange(spamd.port, b"PING SPAMC/1.2\r\n", half_close=False) == (
        b"SPAMD/1.5 0 PONG\r\n"
    )


def test_tell_is_refused_before_its_body(sqlite_spamd: SpamdFactory) -> None:
    spamd = sqlite_spamd(timeout_seconds=10)
    request = b"TELL SPAMC/1.5\r\nMessage-class: spam\r\nSet: local\r\nContent-length: 999\r\n\r\n"
    started = time.monotonic()
    assert exchange(spamd.port, request, half_close=False) == (
        b"SPAMD/1.0 69 Service Unavailable: TELL commands are not enabled,"
        b" set the --allow-tell switch.\r\n"
    )
    assert time.monotonic() - started < 5


def test_tell_from_a_peer_outside_tell_from_is_refused_before_its_body(
    sqlite_spamd: SpamdFactory,
) -> None:
    """TELL trains the model and spamc sends no credentials: only the peers of
    ``spamd.tell_from`` may send it, even with TELL enabled. Checks stay open."""
    spamd = sqlite_spamd(allow_tell=True, tell_from=["192.0.2.0/24", "2001:db8::/32"])
    head = b"TELL SPAMC/1.5\r\nMessage-class: spam\r\nSet: local\r\nContent-length: 999\r\n\r\n"
    assert exchange(spamd.port, head, half_close=False) == (
        b"SPAMD/1.0 77 Permission denied: TELL from 127.0.0.1 is not allowed (spamd.tell_from)\r\n"
    )
    told = b"TELL SPAMC/1.5\r\nMessage-class: spam\r\nSet: local\r\n"
    request = told + b"Content-length: %d\r\n\r\n" % len(MESSAGE) + MESSAGE
    assert exchange(spamd.port, request).startswith(b"SPAMD/1.0 77 ")
    assert spamd.service.stats().labels["spam"].messages == 0
    assert exchange(spamd.port, check()).startswith(b"SPAMD/1.1 0 EX_OK\r\n")


def test_tell_from_a_listed_address_is_learned(sqlite_spamd: SpamdFactory) -> None:
    spamd = sqlite_spamd(allow_tell=True, tell_from=["192.0.2.0/24", "127.0.0.1"])
    told = b"TELL SPAMC/1.5\r\nMessage-class: spam\r\nSet: local\r\n"
    request = told + b"Content-length: %d\r\n\r\n" % len(MESSAGE) + MESSAGE
    assert exchange(spamd.port, request).startswith(b"SPAMD/1.1 0 EX_OK\r\nDidSet: local")
    assert spamd.service.stats().labels["spam"].messages == 1


def test_tell_contradictions(sqlite_spamd: SpamdFactory) -> None:
    spamd = sqlite_spamd(allow_tell=True)
    fields = b"Message-class: spam\r\nSet: local\r\nRemove: local\r\n"
    request = b"TELL SPAMC/1.5\r\n" + fields + b"Content-length: %d\r\n\r\n" % len(MESSAGE)
    assert exchange(spamd.port, request + MESSAGE) == (
        b"SPAMD/1.0 76 Bad header line: Unable to set local and remove local in the same"
        b" operation.\r\n"
    )


def test_tell_without_local_changes_nothing(sqlite_spamd: SpamdFactory) -> None:
    spamd = sqlite_spamd(allow_tell=True)
    fields = b"Message-class: spam\r\nSet: remote\r\n"
    request = b"TELL SPAMC/1.5\r\n" + fields + b"Content-length: %d\r\n\r\n" % len(MESSAGE)
    assert exchange(spamd.port, request + MESSAGE) == b"SPAMD/1.1 0 EX_OK\r\n\r\n\r\n"
    assert spamd.service.stats().labels["spam"].messages == 0


def test_storage_failures_are_temporary(
    sqlite_spamd: SpamdFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    spamd = sqlite_spamd()

    def down(*_args: object, **_kwargs: object) -> None:
        raise StorageUnavailable("could not connect to server at db.internal:5432")

    monkeypatch.setattr(spamd.service, "classify", down)
    assert exchange(spamd.port, check()) == (
        b"SPAMD/1.0 75 Temporary failure: storage_unavailable\r\n"
    )


def test_a_bug_is_an_internal_error_and_the_server_keeps_serving(
    sqlite_spamd: SpamdFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    spamd = sqlite_spamd()

    def broken(*_args: object, **_kwargs: object) -> None:
        raise KeyError("secret detail")

    monkeypatch.setattr(spamd.service, "classify", broken)
    assert exchange(spamd.port, check()) == b"SPAMD/1.0 70 Internal error: internal\r\n"
    assert exchange(spamd.port, b"PING SPAMC/1.5\r\n\r\n") == b"SPAMD/1.5 0 PONG\r\n"


def test_connections_over_the_limit_wait_for_a_free_slot(sqlite_spamd: SpamdFactory) -> None:
    spamd = sqlite_spamd(max_connections=1, timeout_seconds=0.5)
    with socket.create_connection(("127.0.0.1", spamd.port), timeout=10) as stalled:
        time.sleep(0.1)  # the one slot is taken by a client that sends nothing
        started = time.monotonic()
        pong = exchange(spamd.port, b"PING SPAMC/1.5\r\n\r\n")
        waited = time.monotonic() - started
        assert read_all(stalled).startswith(b"SPAMD/1.0 79 Timeout: ")
    assert pong == b"SPAMD/1.5 0 PONG\r\n"
    assert waited >= 0.3


def test_concurrent_requests(sqlite_spamd: SpamdFactory) -> None:
    spamd = sqlite_spamd(trained=True)
    expected = exchange(spamd.port, check())
    replies: list[bytes] = []

    def client() -> None:
        replies.append(exchange(spamd.port, check()))

    threads = [threading.Thread(target=client) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert replies == [expected] * 12
