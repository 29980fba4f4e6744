"""Reading a raw message from a request body under a size cap, a deadline and a byte budget.

* The size cap is enforced twice: a declared ``Content-Length`` over the cap is refused
  before a byte of the body is read, and a body without one (chunked) is read chunk by chunk
  and refused as soon as it passes the cap, so a 50 MB upload never sits in memory just to
  be rejected.
* The whole body must arrive within ``server.read_timeout_seconds`` (408 past it), however
  it trickles: a client sending a byte a second cannot hold a connection slot and its buffer
  for ever (nginx's ``client_body_timeout``, but for the whole body rather than per read).
* Every byte held is drawn from the app's ``BodyBudget`` (``server.max_buffered_bytes``, one
  per process) as it arrives; the declared length reserves nothing, so connections that
  announce a large body and send none hold nothing. A request without a valid API token
  (when tokens are configured) draws from the anonymous share of the budget only. A chunk
  that finds no room waits for it, and meanwhile bodies that have stalled are cut off (408)
  to make room (see ``app.admission``); no room within ``server.budget_wait_seconds`` is a
  503 ``overloaded``. ``received_message`` gives the bytes back when the request is done,
  that is after the service call that works on them.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from starlette.requests import ClientDisconnect, Request

from app.admission import BodyBudget, Reservation
from app.api.dependencies import carries_token
from app.api.errors import RequestTimeout, UnsupportedMediaType
from app.errors import InvalidMessage, MessageTooLarge
from app.service import Form
from app.settings.schema import Settings


@asynccontextmanager
async def received_message(request: Request) -> AsyncIterator[bytes]:
    """The request's message, its bytes held from the app's budget until the block ends.

    Use it around the service call: ``async with received_message(request) as raw: ...``.
    """
    settings: Settings = request.app.state.settings
    budget: BodyBudget = request.app.state.budget
    server = settings.server
    with budget.reserve(anonymous=not carries_token(request, settings)) as hold:
        yield await read_message(
            request, server.max_message_bytes, hold, server.read_timeout_seconds
        )


async def read_message(
    request: Request,
    limit: int,
    hold: Reservation,
    timeout: float,
    allow_empty: bool = False,
    inspect: Callable[[bytes], None] | None = None,
) -> bytes:
    """The request body as bytes, at most ``limit`` bytes long, read within ``timeout``
    seconds, every byte of it held in ``hold`` (which the caller releases). ``inspect``, when
    given, sees each chunk as it arrives and may refuse the body by raising.

    Raises MessageTooLarge when the declared or actual size exceeds ``limit``, Overloaded when
    the budget behind ``hold`` stays full, RequestTimeout when the body is late or was cut
    off as stalled, and
    InvalidMessage for an empty body (unless ``allow_empty``: a form), an unreadable
    Content-Length or a client that closed the connection before the end of its body.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        _check_declared_length(declared, limit)  # reserves nothing: bytes count as they come
    try:
        async with asyncio.timeout(timeout) as deadline:
            hold.on_evict = functools.partial(deadline.reschedule, 0)  # 0: at once
            try:
                raw = await _read_chunks(request, limit, hold, inspect)
            finally:
                hold.on_evict = None  # the bytes are whole: they are never cut off now
    except TimeoutError:
        if hold.evicted:
            raise RequestTimeout(
                "the message stopped arriving while others waited for room; it was cut off"
            ) from None
        raise RequestTimeout(f"the message did not arrive within {timeout:g} seconds") from None
    except ClientDisconnect:
        raise InvalidMessage(
            "the client closed the connection before the end of its message"
        ) from None
    if not raw and not allow_empty:
        raise InvalidMessage("the request body is empty; send the raw message (RFC 822)")
    return raw


async def _read_chunks(
    request: Request, limit: int, hold: Reservation, inspect: Callable[[bytes], None] | None
) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise MessageTooLarge(f"the message exceeds the limit of {limit} bytes")
        await hold.admit(len(chunk))
        if inspect is not None:
            inspect(chunk)
        chunks.append(chunk)
    return b"".join(chunks)


def _check_declared_length(declared: str, limit: int) -> None:
    try:
        length = int(declared)
    except ValueError:
        raise InvalidMessage(f"Content-Length {declared!r} is not a number") from None
    if length > limit:
        raise MessageTooLarge(f"the message is {length} bytes; the limit is {limit}")


# Body types that are never a message or its text: a client sending JSON or an HTML form
# upload has misread the API, and reading its bytes as mail would learn the wrapping.
_REFUSED_TYPES = ("application/json", "multipart/form-data")


def message_form(request: Request) -> Form:
    """How to read the body, from its Content-Type: ``message/rfc822`` a message,
    ``text/plain`` text, JSON (``application/json``, ``*/*+json``) and form uploads refused
    (UnsupportedMediaType, 415), anything else (none, octet-stream, curl's default
    ``application/x-www-form-urlencoded``) ``auto``: a message when it starts with a header
    field, else text."""
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type == "message/rfc822":
        return "rfc822"
    if media_type == "text/plain":
        return "text"
    if media_type in _REFUSED_TYPES or media_type.endswith("+json"):
        raise UnsupportedMediaType(
            f"a body of type {media_type} is not read: send the raw message "
            "(message/rfc822) or its text (text/plain) as the request body"
        )
    return "auto"
