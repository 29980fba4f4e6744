"""Connection hygiene for the HTTP server: what ``spamfilter serve`` gives uvicorn.

* ``server.idle_timeout_seconds``: uvicorn's keep-alive timeout, and more. uvicorn starts
  that clock only after a response and stops it at the first byte of the next request, so a
  connection that opens and sends nothing, or trickles its request head a byte at a time,
  would be held for ever, and with it one of the ``max_connections`` slots: 256 silent
  sockets would have the server answer 503 to everyone. The protocols here close a
  connection that has not sent a whole request head within the idle timeout of opening or
  of its last response.
* ``server.max_connections``: uvicorn's ``limit_concurrency``; a request on a connection
  past it gets 503 from uvicorn (plain text, before the app sees it). Open connections count,
  idle or not, which is why the idle timeout above must hold from the first byte.
* ``server.read_timeout_seconds`` bounds the body, once the head is in: see ``app.api.body``.

Imported by ``spamfilter serve`` only, so the other commands start without uvicorn.
"""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.settings.schema import Settings


class _HeadDeadline:
    """Closes a connection whose next request head is not complete within ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._handle: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop, transport: asyncio.BaseTransport) -> None:
        """(Re)start the clock; at the end of it ``transport`` is closed."""
        self.cancel()
        self._handle = loop.call_later(self._seconds, _close, transport)

    def cancel(self) -> None:
        """Stop the clock: a request head has arrived, or the connection is gone."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


def _close(transport: asyncio.BaseTransport) -> None:
    if not transport.is_closing():
        transport.close()


class _HeadDeadlineMixin(asyncio.Protocol):
    """The deadline on every request head, for either of uvicorn's HTTP protocols (it comes
    before the protocol class in the bases, so ``super()`` is uvicorn's)."""

    _head_deadline: _HeadDeadline
    cycle: Any
    loop: asyncio.AbstractEventLoop
    timeout_keep_alive: int

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Accept the connection and start the clock on its first request head."""
        super().connection_made(transport)
        self._head_deadline = _HeadDeadline(self.timeout_keep_alive)
        self._head_deadline.start(self.loop, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the clock with the connection."""
        self._head_deadline.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Feed the parser; the clock stops once a request head is complete."""
        before = self.cycle
        super().data_received(data)
        if self.cycle is not before:
            self._head_deadline.cancel()


class HeadDeadlineH11Protocol(_HeadDeadlineMixin, H11Protocol):
    """uvicorn's h11 protocol with a deadline on every request head (see the module doc)."""

    def on_response_complete(self) -> None:
        """After a response the clock runs again, unless a pipelined request is under way."""
        before = self.cycle
        super().on_response_complete()
        if self.cycle is before and not self.transport.is_closing():
            self._head_deadline.start(self.loop, self.transport)


class HeadDeadlineHttpToolsProtocol(_HeadDeadlineMixin, HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline on every request head."""

    def on_response_complete(self) -> None:
        """After a response the clock runs again, unless a pipelined request is waiting."""
        waiting = bool(self.pipeline)
        super().on_response_complete()
        if not waiting and not self.transport.is_closing():
            self._head_deadline.start(self.loop, self.transport)


PROTOCOLS: dict[str, type[asyncio.Protocol]] = {
    "h11": HeadDeadlineH11Protocol,
    "httptools": HeadDeadlineHttpToolsProtocol,
}


def protocol_of(http: str) -> type[asyncio.Protocol]:
    """The protocol class for ``--http`` (``auto``: httptools when installed, as uvicorn)."""
    if http == "auto":
        http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    return PROTOCOLS[http]


def server_options(settings: Settings, http: str = "auto") -> dict[str, Any]:
    """The uvicorn options that carry the connection limits of ``settings.server``."""
    server = settings.server
    return {
        "http": protocol_of(http),
        "timeout_keep_alive": server.idle_timeout_seconds,
        # uvicorn refuses a request when the open connections, its own included, number
        # limit_concurrency or more: N + 1 lets N connections in and answers the next 503.
        "limit_concurrency": server.max_connections + 1,
    }
