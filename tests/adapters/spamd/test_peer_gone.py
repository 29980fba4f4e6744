"""A client that is gone by the time the reply's end is signalled is the client's business:
logged at DEBUG, one line without a traceback, never as a server error.

``spamc -L ham`` read its answer and closed, and about 1 TELL in 13 then logged ERROR with a
traceback from ``write_eof`` (``OSError: [Errno 107] Transport endpoint is not connected``).
The server runs with one connection slot, so the PING that follows is accepted only once the
first connection's task has ended and its end has been logged.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import struct

import pytest

from tests.adapters.spamd.conftest import SpamdFactory, exchange, read_all
from tests.builders import make_message

LOGGER = "app.adapters.spamd.server"
MESSAGE = make_message("Lunch?", "Are we still on for noon\n")
PING = b"PING SPAMC/1.5\r\n\r\n"


def tell_ham() -> bytes:
    head = b"TELL SPAMC/1.5\r\nMessage-class: ham\r\nSet: local\r\n"
    return head + b"Content-length: %d\r\n\r\n" % len(MESSAGE) + MESSAGE


def test_a_peer_gone_before_write_eof_is_logged_at_debug_without_a_traceback(
    sqlite_spamd: SpamdFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    spamd = sqlite_spamd(allow_tell=True, max_connections=1)

    def gone(_self: asyncio.StreamWriter) -> None:
        raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")

    monkeypatch.setattr(asyncio.StreamWriter, "write_eof", gone)
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    assert exchange(spamd.port, tell_ham()).startswith(b"SPAMD/1.1 0 EX_OK\r\nDidSet: local")
    assert exchange(spamd.port, PING) == b"SPAMD/1.5 0 PONG\r\n"

    records = [r for r in caplog.records if r.name == LOGGER]
    assert not [r for r in records if r.levelno >= logging.WARNING]
    ended = [r for r in records if "connection ended early" in r.getMessage()]
    assert len(ended) == 2 and all(r.levelno == logging.DEBUG for r in ended)
    assert all(r.exc_info is None for r in ended)
    assert "not connected" in ended[0].getMessage()


def test_clients_that_reset_after_their_answer_log_no_error(
    sqlite_spamd: SpamdFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """The real thing: read the answer, then reset the connection (SO_LINGER 0) at once."""
    spamd = sqlite_spamd(allow_tell=True, max_connections=1)
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    for _ in range(20):
        with socket.create_connection(("127.0.0.1", spamd.port), timeout=10) as conn:
            conn.sendall(tell_ham())
            assert conn.recv(65536).startswith(b"SPAMD/1.1 0 EX_OK\r\n")
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with socket.create_connection(("127.0.0.1", spamd.port), timeout=10) as conn:
        conn.sendall(PING)
        conn.shutdown(socket.SHUT_WR)
        assert read_all(conn) == b"SPAMD/1.5 0 PONG\r\n"
    errors = [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.ERROR]
    assert errors == []
