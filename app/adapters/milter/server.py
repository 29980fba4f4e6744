"""The milter transport: an asyncio listener on a TCP or unix socket, one Session per
connection, the service called in a worker thread.

Sockets are named as libmilter and Sendmail name them: ``inet:PORT@HOST``, ``inet6:PORT@HOST``,
``unix:PATH`` or ``local:PATH`` (Postfix's main.cf writes ``inet:HOST:PORT`` for the same
listener). ``inet:PORT`` alone listens on every address, which needs ``allow_public_bind``.

Timeouts: a classification, and a frame that has begun to arrive, get ``milter.timeout_seconds``
each (a stalled peer or a stuck database then meets ``mail.on_error``, or loses the
connection). Between frames the MTA may be silent much longer: Postfix holds one milter
connection for a whole SMTP session, and the client may idle between commands for up to
``smtpd_timeout`` (300 s); closing it then would make Postfix apply milter_default_action to that
client's next message. So an idle connection is closed only after ``IDLE_TIMEOUT``.
Frames above ``protocol.MAX_FRAME`` end the connection; messages above
``server.max_message_bytes`` are cut there and their head classified (see ``session``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from app.adapters.milter.protocol import FrameDecoder, OptionNegotiation, ProtocolError
from app.adapters.milter.responses import Response, encode
from app.adapters.milter.session import Close, Message, Session
from app.binding import check_open_listener
from app.bootstrap import build_service, migrate_database
from app.errors import ConfigurationError, InvalidMessage, SpamFilterError, describe
from app.service import MailReport, SpamFilter
from app.settings import Settings

log = logging.getLogger(__name__)
READ_SIZE = 256 * 1024
# Why 7210 s: libmilter's own default (smfi_settimeout), longer than any MTA's SMTP session
# timeout, so a filter never drops a connection the MTA still means to use.
IDLE_TIMEOUT = 7210.0
_SOCKET_FORMS = "inet:PORT@HOST, inet6:PORT@HOST, unix:PATH or local:PATH"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where to listen: a TCP host and port, or a unix socket path."""

    kind: Literal["inet", "unix"]
    host: str = ""
    port: int = 0
    path: str = ""

    def describe(self) -> str:
        """The endpoint in libmilter's notation."""
        if self.kind == "unix":
            return f"unix:{self.path}"
        family = "inet6" if ":" in self.host else "inet"
        return f"{family}:{self.port}@{self.host}"


def parse_socket(spec: str) -> Endpoint:
    """An Endpoint from ``inet:PORT@HOST`` and the other libmilter forms (a bare absolute
    path is a unix socket, as in libmilter); raises ConfigurationError."""
    kind, sep, rest = spec.strip().partition(":")
    if not sep and spec.startswith("/"):
        return Endpoint("unix", path=spec)
    kind = kind.lower()
    if kind in ("unix", "local") and rest:
        return Endpoint("unix", path=rest)
    if kind in ("inet", "inet6") and rest:
        port_text, _, host = rest.partition("@")
        if port_text.isdigit() and int(port_text) <= 65535:
            default_host = "::" if kind == "inet6" else "0.0.0.0"
            return Endpoint("inet", host=host.strip("[]") or default_host, port=int(port_text))
    hint = " (Postfix's inet:HOST:PORT is inet:PORT@HOST here)" if rest.count(":") == 1 else ""
    raise ConfigurationError(f"milter socket {spec!r}: expected {_SOCKET_FORMS}{hint}")


def check_bind(endpoint: Endpoint, allow_public_bind: bool) -> None:
    """Raise ConfigurationError for a non-loopback TCP address without the explicit opt-in.

    The milter protocol has no authentication: anyone who reaches the port can have mail
    scored, so it listens on loopback (or a unix socket) unless told otherwise.
    """
    if endpoint.kind == "unix":
        return
    check_open_listener(
        endpoint.host,
        allow_public_bind,
        f"refusing to listen on {endpoint.describe()}: the milter protocol has no "
        "authentication; bind a loopback address or a unix socket, or pass --allow-public-bind",
    )


def serve(
    settings: Settings,
    socket_spec: str | None,
    allow_public_bind: bool,
    announce: Callable[[str], None],
) -> None:
    """Check the socket, migrate the database once, then serve until SIGINT or SIGTERM.

    ``announce`` receives one-line progress notes (the revision, the bound address).
    """
    endpoint = parse_socket(socket_spec or settings.milter.socket)
    check_bind(endpoint, allow_public_bind)
    announce(f"database at revision {migrate_database(settings)}")
    service = build_service(settings, migrate=False)
    try:
        asyncio.run(_serve_until_signal(service, settings, endpoint, announce))
    finally:
        service.close()


async def _serve_until_signal(
    service: SpamFilter, settings: Settings, endpoint: Endpoint, announce: Callable[[str], None]
) -> None:
    server = MilterServer(service, settings)
    where = await server.start(endpoint)
    announce(f"milter listening on {where}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stop.set)
    try:
        await stop.wait()
    finally:
        await server.close()


class MilterServer:
    """Accepts MTA connections and runs one Session on each."""

    def __init__(self, service: SpamFilter, settings: Settings) -> None:
        self._service = service
        self._timeout = settings.milter.timeout_seconds
        self._max_message_bytes = settings.server.max_message_bytes
        self._on_error = settings.mail.on_error
        self._server: asyncio.AbstractServer | None = None
        self._unix_path: str | None = None

    async def start(self, endpoint: Endpoint) -> str:
        """Bind and start accepting; returns the bound address (the real port for port 0)."""
        if endpoint.kind == "unix":
            _remove_stale_socket(endpoint.path)
            self._server = await asyncio.start_unix_server(self._connection, endpoint.path)
            self._unix_path = endpoint.path
            return endpoint.describe()
        self._server = await asyncio.start_server(
            self._connection, endpoint.host, endpoint.port, reuse_address=True
        )
        host, port = self._server.sockets[0].getsockname()[:2]
        return Endpoint("inet", host=host, port=port).describe()

    async def close(self) -> None:
        """Stop accepting, and remove the unix socket file."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        if self._unix_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._unix_path)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = Session(self._max_message_bytes)
        try:
            await self._converse(session, reader, writer)
        except TimeoutError:
            log.info("milter peer silent too long; closing the connection")
        except ProtocolError as error:
            log.warning("milter protocol error, closing the connection: %s", error)
        except (ConnectionError, asyncio.IncompleteReadError) as error:
            log.debug("milter peer went away: %s", error)
        except Exception:
            log.exception("milter connection failed")
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _converse(
        self, session: Session, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        decoder = FrameDecoder()
        while True:
            timeout = self._timeout if decoder.pending else max(self._timeout, IDLE_TIMEOUT)
            data = await asyncio.wait_for(reader.read(READ_SIZE), timeout)
            if not data:
                return
            for command in decoder.feed(data):
                if isinstance(command, OptionNegotiation):
                    offer = (command.version, command.actions, command.steps)
                    log.debug("MTA offers version %d, actions %#x, steps %#x", *offer)
                outcome = session.handle(command)
                if isinstance(outcome, Close):
                    return
                if isinstance(outcome, Message):
                    outcome = await self._evaluate(session, outcome)
                if outcome:
                    writer.write(b"".join(encode(response) for response in outcome))
            await writer.drain()

    async def _evaluate(self, session: Session, message: Message) -> tuple[Response, ...]:
        """Classify in a worker thread; map every failure to mail.on_error."""
        queue_id = message.queue_id or "-"
        try:
            report = await asyncio.wait_for(asyncio.to_thread(self._report, message), self._timeout)
        except InvalidMessage as error:
            # Not an internal error: the same bytes would fail again, so never tempfail them.
            log.info("%s: not classified (%s); accepted without headers", queue_id, error)
            return session.failure("accept")
        except (SpamFilterError, TimeoutError) as error:
            detail = describe(error)
            log.warning("%s: classification failed (%s); %s", queue_id, detail, self._on_error)
            return session.failure(self._on_error)
        except Exception:
            log.exception("%s: classification failed; %s", queue_id, self._on_error)
            return session.failure(self._on_error)
        cut = ", head only (size cap)" if message.truncated else ""
        log.info("%s: score %.1f, %s%s", queue_id, report.score, report.action, cut)
        return session.verdict(report)

    def _report(self, message: Message) -> MailReport:
        scope = self._service.scope_for(message.recipient)
        return self._service.mail_report(self._service.classify(message.raw, scope))


def _remove_stale_socket(path: str) -> None:
    """Remove a socket file left by an earlier run; refuse to touch any other kind of file,
    and refuse a socket another process still listens on."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ConfigurationError(f"milter socket {path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        os.unlink(path)
        return
    finally:
        probe.close()
    raise ConfigurationError(f"milter socket {path} is in use by another process")
