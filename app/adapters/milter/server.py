"""The milter transport: an asyncio listener on a TCP or unix socket, one Session per
connection, the service called in a worker thread.

Its limits (timeouts per frame, between frames and per message; connections; the shared
byte budget; caps on macros, recipients, frames and message size) all come from settings;
what each does past it is in docs/integration/postfix.md (Limits). Fail-safe: any error
while judging a message is answered at end of message as ``mail.on_error`` says, with the
X-Spam-* fields the message came with deleted when it is let through; an error in one
connection closes that connection only. Whose model judges: ``Message.user``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import socket
import stat
from collections.abc import Callable

from app.adapters.milter.protocol import (
    Command,
    FrameDecoder,
    OptionNegotiation,
    ProtocolError,
)
from app.adapters.milter.responses import Response, encode
from app.adapters.milter.session import Close, Message, NoRoom, Outcome, Refuse, Session
from app.admission import BodyBudget, in_thread
from app.binding import Endpoint
from app.errors import (
    ConfigurationError,
    InvalidMessage,
    InvalidUser,
    Overloaded,
    SpamFilterError,
    describe,
)
from app.service import MailReport, SpamFilter
from app.settings.schema import Settings

log = logging.getLogger(__name__)
READ_SIZE = 256 * 1024


def listen(
    service: SpamFilter, settings: Settings, endpoint: Endpoint, announce: Callable[[str], None]
) -> None:
    """Serve ``endpoint`` with ``service`` until SIGINT or SIGTERM (start-up, the bind check
    and the migration are ``app.daemons.run_milter``'s); ``announce`` receives the bound
    address."""
    asyncio.run(_serve_until_signal(service, settings, endpoint, announce))


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
    """Accepts MTA connections and runs one Session on each.

    ``budget`` caps the message bytes every connection buffers at once; by default one is
    built from ``server.max_buffered_bytes`` (one per server, so one per process).
    """

    def __init__(
        self, service: SpamFilter, settings: Settings, budget: BodyBudget | None = None
    ) -> None:
        self._service = service
        self._timeout = settings.milter.timeout_seconds
        self._idle_timeout = settings.milter.idle_timeout_seconds
        self._message_timeout = settings.milter.message_timeout_seconds
        self._max_connections = settings.milter.max_connections
        self._max_message_bytes = settings.server.max_message_bytes
        self._on_error = settings.mail.on_error
        self._recipients = settings.milter.recipients
        if budget is None:
            budget = BodyBudget.for_server(settings.server)
        self._budget = budget
        self._open = 0
        self._server: asyncio.AbstractServer | None = None
        self._unix_path: str | None = None

    @property
    def budget(self) -> BodyBudget:
        """The byte budget the sessions draw from."""
        return self._budget

    @property
    def connections(self) -> int:
        """Connections being served now."""
        return self._open

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
        if self._open >= self._max_connections:
            log.warning(
                "milter: %d connections open (milter.max_connections); closing a new one",
                self._open,
            )
            await _close(writer)
            return
        self._open += 1
        session = Session(self._max_message_bytes, self._budget)
        try:
            await self._converse(session, reader, writer)
        except TimeoutError:
            if session.in_content:
                log.warning(
                    "milter peer did not finish a message within %g seconds; closing the "
                    "connection",
                    self._message_timeout,
                )
            else:
                log.info("milter peer silent too long; closing the connection")
        except ProtocolError as error:
            log.warning("milter protocol error, closing the connection: %s", error)
        except (ConnectionError, asyncio.IncompleteReadError) as error:
            log.debug("milter peer went away: %s", error)
        except Exception:
            log.exception("milter connection failed; closing it")
        finally:
            self._open -= 1
            session.close()
            await _close(writer)

    async def _converse(
        self, session: Session, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        decoder = FrameDecoder()
        loop = asyncio.get_running_loop()
        frame_deadline: float | None = None  # when the frame begun must be whole
        content_deadline: float | None = None  # when the message begun must be whole
        while True:
            wait = self._idle_timeout
            for deadline in (frame_deadline, content_deadline):
                if deadline is not None:
                    wait = min(wait, max(deadline - loop.time(), 0.0))
            data = await asyncio.wait_for(reader.read(READ_SIZE), wait)
            if not data:
                return
            commands = decoder.feed(data)
            ended = await self._answer(session, commands, writer)
            await asyncio.wait_for(writer.drain(), self._timeout)
            if ended:
                return
            # A new frame's clock starts once we have answered the ones before it.
            if commands or not decoder.pending:
                frame_deadline = None
            if decoder.pending and frame_deadline is None:
                frame_deadline = loop.time() + self._timeout
            if not session.in_content:
                content_deadline = None
            elif content_deadline is None:
                content_deadline = loop.time() + self._message_timeout

    async def _answer(
        self, session: Session, commands: list[Command], writer: asyncio.StreamWriter
    ) -> bool:
        """Write the replies to ``commands``; True when the connection is to end."""
        for command in commands:
            if size := session.wants(command):
                await self._room(session, size)
            outcome = session.handle(_logged(command))
            if isinstance(outcome, Close):
                return True
            if isinstance(outcome, Refuse):
                log.warning("milter: %s; refused, closing the connection", outcome.reason)
                writer.write(_encoded(outcome.responses))
                return True
            writer.write(await self._respond(session, outcome))
        return False

    async def _room(self, session: Session, size: int) -> None:
        """Wait (a little) for room in the budget for ``size`` more bytes of the message; on
        none, the session finds the budget full and the message ends in a tempfail."""
        with contextlib.suppress(Overloaded):
            await self._budget.room_for(session.hold, size)

    async def _respond(self, session: Session, outcome: Outcome) -> bytes:
        """The bytes to send for what the session made of one command."""
        if isinstance(outcome, Message):
            return await self._evaluate(session, outcome)
        if isinstance(outcome, NoRoom):
            queue_id = outcome.queue_id or "-"
            held, limit = self._budget.held, self._budget.limit
            # Transient, so tempfail whatever on_error says: the MTA retries in a few minutes.
            log.warning(
                "%s: not classified (overloaded: %d of %d buffered bytes in use); tempfail",
                queue_id,
                held,
                limit,
            )
            return _encoded(session.failure("tempfail"))
        assert not isinstance(outcome, (Close, Refuse))
        return _encoded(outcome)

    async def _evaluate(self, session: Session, message: Message) -> bytes:
        """Classify in a worker thread; map every failure to mail.on_error."""
        queue_id = message.queue_id or "-"
        try:
            work = functools.partial(self._report, message)
            report = await in_thread(work, self._timeout, message.hold)
            reply = _encoded(session.verdict(report))
        except InvalidMessage as error:
            # Not an internal error: the same bytes would fail again, so never tempfail them.
            log.info("%s: not classified (%s); accepted unjudged", queue_id, error)
            return _encoded(session.failure("accept"))
        except Overloaded as error:
            log.warning("%s: not classified (%s); tempfail", queue_id, describe(error))
            return _encoded(session.failure("tempfail"))
        except (SpamFilterError, TimeoutError) as error:
            detail = describe(error)
            log.warning("%s: classification failed (%s); %s", queue_id, detail, self._on_error)
            return _encoded(session.failure(self._on_error))
        except Exception:
            log.exception("%s: classification failed; %s", queue_id, self._on_error)
            return _encoded(session.failure(self._on_error))
        cut = ", head only (size cap)" if message.truncated else ""
        log.info("%s: score %.1f, %s%s", queue_id, report.score, report.action, cut)
        return reply

    def _report(self, message: Message) -> MailReport:
        """The verdict of the model ``milter.recipients`` picks (see ``Message.user``).

        A recipient that cannot name a model (InvalidUser: a quoted local part with a space,
        say) is judged by the site-wide model instead: the same envelope would fail again,
        so a tempfail would only defer the mail until it bounced, and accepting it unjudged
        would let spam through; the site-wide model is what a message without a user gets.
        """
        user = message.user(self._recipients)
        try:
            result = self._service.classify(message.raw, user)
        except InvalidUser:
            log.info("%s: recipient names no model; site-wide model", message.queue_id or "-")
            result = self._service.classify(message.raw)
        return result.mail_report


def _logged(command: Command) -> Command:
    if isinstance(command, OptionNegotiation):
        offer = (command.version, command.actions, command.steps)
        log.debug("MTA offers version %d, actions %#x, steps %#x", *offer)
    return command


def _encoded(responses: tuple[Response, ...]) -> bytes:
    return b"".join(encode(response) for response in responses)


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(ConnectionError, OSError):
        await writer.wait_closed()


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
