"""Reading a raw message from a request body under a hard size cap.

The cap is enforced twice: a declared ``Content-Length`` over the cap is refused before a
byte of the body is read, and a body without one (chunked) is read chunk by chunk and refused
as soon as it passes the cap, so a 50 MB upload never sits in memory just to be rejected.
"""

from __future__ import annotations

from starlette.requests import Request

from app.errors import InvalidMessage, MessageTooLarge


async def read_message(request: Request, limit: int) -> bytes:
    """The request body as bytes, at most ``limit`` bytes long.

    Raises MessageTooLarge when the declared or actual size exceeds ``limit``, and
    InvalidMessage for an empty body or an unreadable Content-Length.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        _check_declared(declared, limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise MessageTooLarge(f"the message exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    if size == 0:
        raise InvalidMessage("the request body is empty; send the raw message (RFC 822)")
    return b"".join(chunks)


def _check_declared(declared: str, limit: int) -> None:
    try:
        length = int(declared)
    except ValueError:
        raise InvalidMessage(f"Content-Length {declared!r} is not a number") from None
    if length > limit:
        raise MessageTooLarge(f"the message is {length} bytes; the limit is {limit}")
