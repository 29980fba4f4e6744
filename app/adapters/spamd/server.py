"""The spamd transport: asyncio sockets, framing, size cap, timeouts, connection limit.

One request per connection, as spamd serves it: read the request line, the header block and
the body (``protocol`` parses them), call the service in a worker thread, write the reply,
close. The limits (idle and request timeouts, the size cap checked before a body is read,
the shared ``BodyBudget``, ``spamd.tell_from`` for TELL, ``spamd.max_connections`` served at
once with the rest in the listen backlog) come from settings; docs/operations.md#limits says
what each does past it. Fail-safe: whatever goes wrong while a request is read or answered
becomes one spamd status line (``protocol.error_response``: 70 for a bug, 75 for what may
pass), never a dropped connection. Verdicts, models and idempotency are the service's; the
``User:`` header is passed on as the user whose model judges.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import socket
from collections.abc import Awaitable, Callable
from typing import TypeVar

from app.adapters.spamd.peers import IPAddress, is_within, networks, peer_address
from app.adapters.spamd.protocol import (
    MAX_HEADER_FIELDS,
    CheckResponse,
    ErrorResponse,
    ExitCode,
    Method,
    PongResponse,
    Request,
    RequestHead,
    Response,
    SpamdError,
    TellAction,
    TellResponse,
    bad_request,
    decode_body,
    error_response,
    is_end_of_head,
    parse_head,
    parse_request_line,
    render_response,
    tell_action,
)
from app.adapters.spamd.report import CheckResult
from app.admission import BodyBudget, Reservation, in_thread
from app.errors import MessageTooLarge
from app.service import Classification, MailReport, Outcome, SpamFilter
from app.settings.schema import Settings

log = logging.getLogger(__name__)

LINE_LIMIT = 16 * 1024  # bytes in one request or header line (spamc's lines are < 100)
_CHUNK = 64 * 1024
# After replying, wait this long at most for the client to finish sending and close, so that
# closing with unread input does not reset the connection before the reply is read.
_LINGER_SECONDS = 1.0
_LEARNED = (Outcome.LEARNED, Outcome.RELABELLED)
T = TypeVar("T")


class IdleTimeout(TimeoutError):
    """The client sent nothing for ``spamd.idle_timeout_seconds``."""


class SpamdServer:
    """A spamd-protocol listener on ``settings.spamd.host``/``port`` (port 0: any free one).

    ``budget`` caps the body bytes all connections hold at once; by default one is built from
    ``server.max_buffered_bytes`` (one per server, so one per process).
    """

    def __init__(
        self, service: SpamFilter, settings: Settings, budget: BodyBudget | None = None
    ) -> None:
        self._service = service
        self._host = settings.spamd.host
        self._port = settings.spamd.port
        self._allow_tell = settings.spamd.allow_tell
        self._tell_from = networks(settings.spamd.tell_from)
        self._junk_classes = settings.model.junk_classes
        self._training_margin = settings.training_margin
        self._timeout = settings.spamd.timeout_seconds
        self._idle_timeout = settings.spamd.idle_timeout_seconds
        self._max_bytes = settings.server.max_message_bytes
        if budget is None:
            budget = BodyBudget.for_server(settings.server)
        self._budget = budget
        self._slots = asyncio.Semaphore(settings.spamd.max_connections)
        self._listener: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def budget(self) -> BodyBudget:
        """The byte budget request bodies are drawn from."""
        return self._budget

    @property
    def address(self) -> tuple[str, int]:
        """The bound host and port (after ``start``)."""
        if self._listener is None:
            raise RuntimeError("the server is not started")
        host, port = self._listener.getsockname()[:2]
        return str(host), int(port)

    async def start(self) -> None:
        """Bind, listen and start accepting connections."""
        self._listener = _listen(self._host, self._port)
        self._accepting = asyncio.create_task(self._accept(self._listener))

    async def close(self, grace: float = 0.0) -> None:
        """Stop accepting; give requests in flight ``grace`` seconds, then cancel them."""
        if self._accepting is not None:
            self._accepting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._accepting
        if self._listener is not None:
            self._listener.close()
        if self._connections:
            _, pending = await asyncio.wait(set(self._connections), timeout=grace)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def _accept(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._slots.acquire()
            try:
                conn, _ = await loop.sock_accept(listener)
            except OSError as error:  # e.g. out of file descriptors: back off, keep serving
                self._slots.release()
                log.warning("spamd: accept failed: %s", error)
                await asyncio.sleep(0.1)
                continue
            except BaseException:
                self._slots.release()
                raise
            task = asyncio.create_task(self._connection(conn))
            self._connections.add(task)
            task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._connections.discard(task)
        self._slots.release()
        if not task.cancelled() and task.exception() is not None:
            log.error("spamd: connection failed", exc_info=task.exception())

    async def _connection(self, conn: socket.socket) -> None:
        try:
            reader, writer = await asyncio.open_connection(sock=conn, limit=LINE_LIMIT)
        except BaseException:
            conn.close()
            raise
        peer = peer_address(conn)
        try:
            reply = await self._exchange(reader, peer)
            async with asyncio.timeout(self._timeout):
                if reply:
                    writer.write(reply)
                    await writer.drain()
                writer.write_eof()
            await _linger(reader)
        except OSError as error:
            # The peer went first: reset, timed out, or already closed when the reply's end
            # is signalled (write_eof raises ENOTCONN after spamc has read its answer and
            # gone). Nothing is wrong with the server, and nobody is left to answer.
            log.debug("spamd: connection ended early: %r", error)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _exchange(self, reader: asyncio.StreamReader, peer: IPAddress | None) -> bytes | None:
        """Read one request from ``peer`` and return the reply bytes (None: close without
        replying)."""
        hold = self._budget.reserve()
        try:
            head, raw = await self._receive(reader, hold, peer)
        except IdleTimeout:
            return self._refuse(_timeout_error(self._idle_timeout))
        except TimeoutError:
            if hold.evicted:
                detail = "(cut off: the body stopped arriving while others waited for room)"
                return self._refuse(SpamdError(ExitCode.TIMEOUT, detail))
            return self._refuse(_timeout_error(self._timeout))
        except ConnectionError:
            raise  # the client went away: nobody to answer
        except Exception as error:
            return self._refuse(error)
        if head.line.method is Method.SKIP:
            return None  # SKIP and PING have no body: nothing is held
        if head.line.method is Method.PING:
            return render_response(PongResponse())
        try:
            work = functools.partial(self._reply, head, raw, hold)
            return await in_thread(work, self._timeout, hold)
        except TimeoutError:
            detail = f"(no answer within {self._timeout:g} seconds)"
            return self._refuse(SpamdError(ExitCode.TEMPFAIL, detail))
        except Exception as error:
            return self._refuse(error)

    async def _receive(
        self, reader: asyncio.StreamReader, hold: Reservation, peer: IPAddress | None
    ) -> tuple[RequestHead, bytes]:
        """The request, read within ``spamd.timeout_seconds`` (or until it is cut off as
        stalled to make room: see ``app.admission``); ``hold`` is released if not."""
        try:
            async with asyncio.timeout(self._timeout) as deadline:
                hold.on_evict = functools.partial(deadline.reschedule, 0)  # 0: at once
                return await self._read_request(reader, hold, peer)
        except BaseException:
            hold.release()
            raise
        finally:
            hold.on_evict = None  # read: its bytes are judged now, never cut off

    async def _read_request(
        self, reader: asyncio.StreamReader, hold: Reservation, peer: IPAddress | None
    ) -> tuple[RequestHead, bytes]:
        line = parse_request_line(await self._read_line(reader))
        fields: list[bytes] = []
        if line.has_headers:
            while not is_end_of_head(field := await self._read_line(reader)):
                fields.append(field)
                if len(fields) > MAX_HEADER_FIELDS:
                    raise bad_request("(too many headers)")
        head = parse_head(line, fields)
        if not line.has_body:
            return head, b""
        self._admit(head, peer)
        return head, await self._read_body(reader, head.content_length, hold)

    async def _read_body(
        self, reader: asyncio.StreamReader, length: int | None, hold: Reservation
    ) -> bytes:
        """The body: ``length`` bytes (fewer if the client closes first; decode_body answers
        the mismatch), or up to the end of input; each chunk drawn from the budget."""
        chunks: list[bytes] = []
        size = 0
        while length is None or size < length:
            want = _CHUNK if length is None else min(_CHUNK, length - size)
            chunk = await self._idle(reader.read(want))
            if not chunk:
                break
            size += len(chunk)
            if size > self._max_bytes:
                raise MessageTooLarge(f"message is over the limit of {self._max_bytes} bytes")
            await hold.admit(len(chunk))  # waits for room, cutting off stalled bodies
            chunks.append(chunk)
        return b"".join(chunks)

    async def _read_line(self, reader: asyncio.StreamReader) -> bytes:
        try:
            return await self._idle(reader.readline())
        except ValueError as error:  # the stream's limit: a line longer than LINE_LIMIT
            raise bad_request(f"(line longer than {LINE_LIMIT} bytes)") from error

    async def _idle(self, read: Awaitable[T]) -> T:
        """``read``, or IdleTimeout when no byte comes for ``spamd.idle_timeout_seconds``."""
        try:
            async with asyncio.timeout(self._idle_timeout):
                return await read
        except TimeoutError as error:
            raise IdleTimeout from error

    def _admit(self, head: RequestHead, peer: IPAddress | None) -> None:
        """Refuse before reading the body: TELL when not enabled or from a peer outside
        ``spamd.tell_from``, or a body over the cap."""
        if head.line.method is Method.TELL:
            if not self._allow_tell:
                raise SpamdError(
                    ExitCode.UNAVAILABLE,
                    "TELL commands are not enabled, set the --allow-tell switch.",
                )
            if not is_within(peer, self._tell_from):
                raise SpamdError(
                    ExitCode.NOPERM, f"TELL from {peer} is not allowed (spamd.tell_from)"
                )
            tell_action(head, self._junk_classes)
        if head.content_length is not None and head.content_length > self._max_bytes:
            raise MessageTooLarge(
                f"Content-length {head.content_length} is over the limit of {self._max_bytes} bytes"
            )

    def _reply(self, head: RequestHead, raw: bytes, hold: Reservation) -> bytes:
        """The reply bytes to a whole request (runs in a worker thread)."""
        body = decode_body(head, raw, self._max_bytes)
        if head.compressed:
            hold.grow(len(body))  # the inflated message is held too
        return render_response(self._answer(Request(head, body)))

    def _answer(self, request: Request) -> Response:
        """The service's answer to a request."""
        head = request.head
        if head.line.method is Method.TELL:
            return self._tell(tell_action(head, self._junk_classes), request.body, head.user)
        result = self._service.classify(request.body, head.user)
        report = result.mail_report
        log.info(
            "spamd: %s %s score=%.1f/%.1f",
            head.line.method,
            result.verdict,
            report.score,
            report.required,
        )
        return CheckResponse(head.line, check_result(result, report), request.body)

    def _tell(self, action: TellAction, message: bytes, user: str | None) -> TellResponse:
        if action.learn is not None:
            learned = self._service.learn(message, action.learn, user)
            if learned.outcome is Outcome.SKIPPED:
                # spamc can only say "already learned"; the log and our reply line say why
                log.info(
                    "spamd: TELL learn %s: skipped: already judged right by more than %g nats",
                    learned.label,
                    self._training_margin,
                )
                return TellResponse(outcome=Outcome.SKIPPED.value)
            log.info("spamd: TELL learn %s: %s", learned.label, learned.outcome)
            return TellResponse(did_set=("local",) if learned.outcome in _LEARNED else ())
        if action.forget:
            forgotten = self._service.forget(message, user)
            log.info("spamd: TELL forget: %s", forgotten.outcome)
            done = forgotten.outcome is Outcome.FORGOTTEN
            return TellResponse(did_remove=("local",) if done else ())
        return TellResponse()

    def _refuse(self, error: Exception) -> bytes:
        response: ErrorResponse = error_response(error)
        if response.status is ExitCode.SOFTWARE:
            log.error("spamd: request failed", exc_info=error)
        elif response.status in (ExitCode.TEMPFAIL, ExitCode.CONFIG):
            log.warning("spamd: %s: %s", response.status.name, error)
        else:
            log.info("spamd: refused (%d): %s", response.status, response.detail)
        return render_response(response)


def check_result(result: Classification, report: MailReport) -> CheckResult:
    """What the replies present of a classification and its mail report."""
    return CheckResult(
        is_spam=report.is_spam,
        score=report.score,
        required=report.required,
        headers=report.headers,
        clues=result.clues,
        verdict=result.verdict.value,
        reason=result.reason.value if result.reason else None,
        log_odds=result.log_odds,
        spam_probability=result.spam_probability,
    )


async def serve(
    service: SpamFilter, settings: Settings, ready: Callable[[str, int], None] | None = None
) -> None:
    """Serve until SIGINT or SIGTERM; requests in flight then get up to the read timeout."""
    server = SpamdServer(service, settings)
    await server.start()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    if ready is not None:
        ready(*server.address)
    try:
        await stop.wait()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        await server.close(grace=settings.spamd.timeout_seconds)


def main(
    service: SpamFilter, settings: Settings, ready: Callable[[str, int], None] | None = None
) -> None:
    """Run ``serve`` in a new event loop (the ``spamfilter spamd`` command's entry point)."""
    asyncio.run(serve(service, settings, ready))


def _listen(host: str, port: int) -> socket.socket:
    family, _, _, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    listener = socket.create_server(address, family=family)
    listener.setblocking(False)
    return listener


def _timeout_error(seconds: float) -> SpamdError:
    """spamd's own words for a client that is too slow."""
    detail = f"({seconds:g} second socket timeout reading input from client)"
    return SpamdError(ExitCode.TIMEOUT, detail)


async def _linger(reader: asyncio.StreamReader) -> None:
    """Discard what the client still sends until it closes (at most _LINGER_SECONDS)."""
    with contextlib.suppress(OSError):  # TimeoutError and ConnectionError among them
        async with asyncio.timeout(_LINGER_SECONDS):
            while await reader.read(_CHUNK):
                pass
