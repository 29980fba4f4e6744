"""A small HTTP/1.1 load generator for ``spamfilter bench speed``: keep-alive connections over
asyncio streams, loopback addresses only.

``C`` connections each send one request at a time and read the whole response before the
next (closed-loop load, as a mail server's filter calls behave). Requests are taken in turn
from a list and cycled; the run stops by itself after ``max_requests`` requests or once
``duration`` seconds have passed, whichever comes first, and a request that gets no answer
within ``timeout`` seconds is counted as an error and its connection replaced.

Every answered request has its latency (seconds, from the first byte written to the last
byte read) and its status counted; transport failures are counted by kind (``timeout``,
``closed``, ``refused``, ...). The generator's own CPU time is reported beside the wall time
so a run shows whether the generator, rather than the server, was the limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Clock = Callable[[], float]
Tally = Callable[[int, bytes], str | None]
"""Called with each response's status and body; a string it returns is counted."""


class ProtocolError(Exception):
    """The server's answer is not an HTTP/1.1 response this generator can read."""


@dataclass(frozen=True, slots=True)
class Request:
    """One request to send: ``POST /v1/classify`` with a message as its body."""

    method: str
    path: str
    body: bytes = b""
    content_type: str = "message/rfc822"


@dataclass(slots=True)
class LoadResult:
    """What a run saw. Latencies are seconds, one per answered request, in no order."""

    connections: int
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    tallies: Counter[str] = field(default_factory=Counter)

    @property
    def answered(self) -> int:
        """Requests that got a whole response, of any status."""
        return sum(self.statuses.values())

    @property
    def ok(self) -> int:
        """Requests answered with a 2xx status."""
        return sum(n for status, n in self.statuses.items() if 200 <= status < 300)

    @property
    def ok_per_second(self) -> float:
        """2xx responses per second of wall time."""
        return self.ok / self.seconds if self.seconds > 0 else 0.0

    @property
    def errors(self) -> dict[str, int]:
        """Every request that did not succeed: non-2xx statuses and transport failures."""
        found = {str(s): n for s, n in sorted(self.statuses.items()) if not 200 <= s < 300}
        found.update(sorted(self.failures.items()))
        return found

    @property
    def cpu_share(self) -> float:
        """The generator's CPU seconds per wall second (1.0 = one core kept busy)."""
        return self.cpu_seconds / self.seconds if self.seconds > 0 else 0.0

    def percentile_ms(self, p: float) -> float:
        """The ``p``-th percentile (0-100) of the latencies, in milliseconds; NaN if none."""
        return 1000 * percentile(sorted(self.latencies), p)


def percentile(ordered: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile (0 < p <= 100) of ascending ``ordered``: the
    smallest value with at least p% of the values at or below it; NaN when empty."""
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def check_loopback(host: str) -> None:
    """Raise ValueError unless ``host`` is a loopback IP address: the generator never loads
    anything but this machine."""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(f"the load generator only drives loopback addresses, not {host!r}")


def encode(request: Request, host: str, port: int) -> bytes:
    """The request's bytes, keep-alive, with a Content-Length."""
    head = (
        f"{request.method} {request.path} HTTP/1.1\r\n"
        f"Host: {host}:{port}\r\n"
        f"Content-Type: {request.content_type}\r\n"
        f"Content-Length: {len(request.body)}\r\n\r\n"
    )
    return head.encode("ascii") + request.body


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """(status, body, keep the connection) of one response; ProtocolError if unreadable."""
    line = await reader.readline()
    parts = line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise ProtocolError("closed" if not line else "bad status line")
    headers: dict[bytes, bytes] = {}
    while (field_line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = field_line.partition(b":")
        headers[name.strip().lower()] = value.strip().lower()
    if headers.get(b"transfer-encoding") == b"chunked":
        body = await _read_chunked(reader)
    else:
        body = await reader.readexactly(int(headers.get(b"content-length", b"0")))
    keep = headers.get(b"connection") != b"close" and parts[0] == b"HTTP/1.1"
    return int(parts[1]), body, keep


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    while size := int((await reader.readline()).split(b";")[0].strip() or b"0", 16):
        chunks.append(await reader.readexactly(size))
        await reader.readline()
    while await reader.readline() not in (b"\r\n", b"\n", b""):
        pass  # trailer fields
    return b"".join(chunks)


@dataclass(slots=True)
class _Plan:
    host: str
    port: int
    payloads: list[bytes]
    max_requests: int
    deadline: float
    timeout: float
    clock: Clock
    tally: Tally | None
    issued: int = 0

    def next_payload(self) -> bytes | None:
        """The next request's bytes, or None once the count or the time is up."""
        if self.issued >= self.max_requests or self.clock() >= self.deadline:
            return None
        payload = self.payloads[self.issued % len(self.payloads)]
        self.issued += 1
        return payload


async def _connection(plan: _Plan, result: LoadResult) -> None:
    """One client connection: request, whole response, next request; reconnects after a
    close or a failure."""
    stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    while (payload := plan.next_payload()) is not None:
        try:
            if stream is None:
                stream = await asyncio.wait_for(
                    asyncio.open_connection(plan.host, plan.port), plan.timeout
                )
            start = plan.clock()
            stream[1].write(payload)
            status, body, keep = await asyncio.wait_for(read_response(stream[0]), plan.timeout)
            result.latencies.append(plan.clock() - start)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ProtocolError) as e:
            result.failures[_failure_kind(e)] += 1
            await _close(stream)
            stream = None
            continue
        result.statuses[status] += 1
        if plan.tally is not None and (key := plan.tally(status, body)) is not None:
            result.tallies[key] += 1
        if not keep:
            await _close(stream)
            stream = None
    await _close(stream)


async def _close(stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None) -> None:
    """Close the connection, if any."""
    if stream is not None:
        stream[1].close()
        with contextlib.suppress(OSError):
            await stream[1].wait_closed()


def _failure_kind(error: Exception) -> str:
    if isinstance(error, TimeoutError):
        return "timeout"
    if isinstance(error, ConnectionRefusedError):
        return "refused"
    if isinstance(error, ConnectionResetError | BrokenPipeError | asyncio.IncompleteReadError):
        return "closed"
    if isinstance(error, ProtocolError):
        return str(error) if str(error) == "closed" else "protocol"
    return type(error).__name__


async def drive(
    host: str,
    port: int,
    requests: Sequence[Request],
    connections: int = 16,
    max_requests: int = 100_000,
    duration: float = 10.0,
    timeout: float = 10.0,
    clock: Clock = time.perf_counter,
    tally: Tally | None = None,
) -> LoadResult:
    """Send ``requests`` (cycled) over ``connections`` keep-alive connections to
    ``host:port`` until ``max_requests`` were sent or ``duration`` seconds have passed.
    Wall and CPU seconds cover the whole run, connecting included."""
    check_loopback(host)
    if not requests:
        raise ValueError("no requests to send")
    if connections < 1:
        raise ValueError("at least one connection is needed")
    cpu_start, start = time.process_time(), clock()
    plan = _Plan(
        host,
        port,
        [encode(request, host, port) for request in requests],
        max_requests,
        start + duration,
        timeout,
        clock,
        tally,
    )
    result = LoadResult(connections)
    await asyncio.gather(*(_connection(plan, result) for _ in range(connections)))
    result.seconds = clock() - start
    result.cpu_seconds = time.process_time() - cpu_start
    return result


def run_load(
    host: str,
    port: int,
    requests: Sequence[Request],
    connections: int = 16,
    max_requests: int = 100_000,
    duration: float = 10.0,
    timeout: float = 10.0,
    tally: Tally | None = None,
) -> LoadResult:
    """``drive`` in an event loop of its own (for callers outside asyncio)."""
    return asyncio.run(
        drive(host, port, requests, connections, max_requests, duration, timeout, tally=tally)
    )
