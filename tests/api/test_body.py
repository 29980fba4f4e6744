"""The capped body reader on its own: it refuses early and never reads past the cap."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from starlette.requests import Request
from starlette.types import Message

from app.api.body import read_message
from app.errors import InvalidMessage, MessageTooLarge

LIMIT = 1000


def request(headers: dict[str, str], receive: Callable[[], Awaitable[Message]]) -> Request:
    """A bare ASGI request with ``headers`` whose body comes from ``receive``."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/classify",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    return Request(scope, receive)


def endless(chunk: bytes, calls: list[int]) -> Callable[[], Awaitable[Message]]:
    """A receive channel that never ends, counting how often it is read."""

    async def receive() -> Message:
        calls.append(1)
        return {"type": "http.request", "body": chunk, "more_body": True}

    return receive


def test_declared_length_over_the_cap_is_refused_before_reading() -> None:
    calls: list[int] = []
    req = request({"Content-Length": str(LIMIT + 1)}, endless(b"x", calls))
    with pytest.raises(MessageTooLarge):
        asyncio.run(read_message(req, LIMIT))
    assert calls == []


def test_stream_over_the_cap_stops_at_the_chunk_that_crosses_it() -> None:
    calls: list[int] = []
    req = request({}, endless(b"x" * 100, calls))
    with pytest.raises(MessageTooLarge):
        asyncio.run(read_message(req, LIMIT))
    assert len(calls) == LIMIT // 100 + 1


def test_a_body_that_lies_about_its_length_is_still_capped() -> None:
    calls: list[int] = []
    req = request({"Content-Length": "10"}, endless(b"x" * 100, calls))
    with pytest.raises(MessageTooLarge):
        asyncio.run(read_message(req, LIMIT))


def test_body_in_chunks_is_joined() -> None:
    parts = [b"From: a@example.org\n", b"Subject: hi\n\n", b"body\n"]

    async def receive() -> Message:
        body = parts.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(parts)}

    assert asyncio.run(read_message(request({}, receive), LIMIT)) == (
        b"From: a@example.org\nSubject: hi\n\nbody\n"
    )


@pytest.mark.parametrize("length", ["ten", "-", "1e3"])
def test_unreadable_content_length_is_invalid(length: str) -> None:
    req = request({"Content-Length": length}, endless(b"", []))
    with pytest.raises(InvalidMessage):
        asyncio.run(read_message(req, LIMIT))


def test_empty_body_is_invalid() -> None:
    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    with pytest.raises(InvalidMessage, match="empty"):
        asyncio.run(read_message(request({}, receive), LIMIT))
