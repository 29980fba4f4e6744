"""The body reader on its own: it refuses early, never reads past the cap, gives up on a late
body, and holds every byte it reads from the budget."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from starlette.requests import Request
from starlette.types import Message

from app.admission import BodyBudget, Reservation
from app.api.body import read_message
from app.api.errors import RequestTimeout
from app.errors import InvalidMessage, MessageTooLarge, Overloaded

LIMIT = 1000
TIMEOUT = 5.0  # seconds; generous: only the test of the deadline waits for it


def read(req: Request, hold: Reservation | None = None, timeout: float = TIMEOUT) -> bytes:
    """``read_message`` under ``LIMIT``, holding its bytes in ``hold`` (a large budget's)."""
    if hold is None:
        hold = BodyBudget(10 * LIMIT).reserve()
    return asyncio.run(read_message(req, LIMIT, hold, timeout))


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
        read(req)
    assert calls == []


def test_stream_over_the_cap_stops_at_the_chunk_that_crosses_it() -> None:
    calls: list[int] = []
    req = request({}, endless(b"x" * 100, calls))
    with pytest.raises(MessageTooLarge):
        read(req)
    assert len(calls) == LIMIT // 100 + 1


def test_a_body_that_lies_about_its_length_is_still_capped() -> None:
    calls: list[int] = []
    req = request({"Content-Length": "10"}, endless(b"x" * 100, calls))
    with pytest.raises(MessageTooLarge):
        read(req)


def test_body_in_chunks_is_joined() -> None:
    parts = [b"From: a@example.org\n", b"Subject: hi\n\n", b"body\n"]

    async def receive() -> Message:
        body = parts.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(parts)}

    assert read(request({}, receive)) == (b"From: a@example.org\nSubject: hi\n\nbody\n")


@pytest.mark.parametrize("length", ["ten", "-", "1e3"])
def test_unreadable_content_length_is_invalid(length: str) -> None:
    req = request({"Content-Length": length}, endless(b"", []))
    with pytest.raises(InvalidMessage):
        read(req)


def test_empty_body_is_invalid() -> None:
    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    with pytest.raises(InvalidMessage, match="empty"):
        read(request({}, receive))


def test_a_declared_length_reserves_nothing_before_the_bytes_arrive() -> None:
    seen: list[int] = []
    budget = BodyBudget(LIMIT)
    hold = budget.reserve()

    async def receive() -> Message:
        seen.append(budget.held)
        return {"type": "http.request", "body": b"x" * 100, "more_body": len(seen) < 3}

    assert read(request({"Content-Length": "900"}, receive), hold) == b"x" * 300
    assert seen == [0, 100, 200]  # what had arrived, never the 900 announced
    assert hold.size == 300


def test_a_declared_length_the_budget_could_not_hold_is_read_while_its_bytes_fit() -> None:
    budget = BodyBudget(LIMIT)
    busy = budget.reserve()
    busy.grow(LIMIT // 2)
    parts = [b"From: a@example.org\n\n", b"hi\n"]

    async def receive() -> Message:
        return {"type": "http.request", "body": parts.pop(0), "more_body": bool(parts)}

    req = request({"Content-Length": str(LIMIT // 2 + 100)}, receive)  # a lie, but under the cap
    assert read(req, budget.reserve()) == b"From: a@example.org\n\nhi\n"


def test_a_chunked_body_grows_its_hold_until_the_budget_is_full() -> None:
    calls: list[int] = []
    budget = BodyBudget(LIMIT // 2)
    hold = budget.reserve()
    with pytest.raises(Overloaded):
        read(request({}, endless(b"x" * 100, calls)), hold)
    assert hold.size == LIMIT // 2
    assert len(calls) == LIMIT // 2 // 100 + 1
    hold.release()
    assert budget.held == 0


def test_a_body_that_never_ends_arriving_times_out() -> None:
    async def receive() -> Message:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    with pytest.raises(RequestTimeout, match=r"0\.05 seconds"):
        read(request({"Content-Length": "10"}, receive), timeout=0.05)


def test_a_client_that_goes_away_mid_body_is_an_invalid_message() -> None:
    messages: list[Message] = [
        {"type": "http.request", "body": b"From: a@example.org\n", "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> Message:
        return messages.pop(0)

    with pytest.raises(InvalidMessage, match="closed the connection"):
        read(request({}, receive))
