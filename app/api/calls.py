"""Service calls from the event loop: in worker threads, a bounded number at once.

Every service call (parsing, tokenising, SQL) is synchronous Python, so it runs in a worker
thread and the event loop keeps reading requests. Python runs one thread at a time, though:
16 connections each in a thread of their own (Starlette's pool lets 40 in) made one worker
answer fewer requests (94 a second against 248 with one connection) and each of them later,
as the threads took turns. So each worker lets ``server.service_threads`` calls in at once
(default 1: 194 classifications a second at 16 connections) and queues the rest; the queue
is fair (first come, first served).

A classification of a small message runs on the event loop itself (``run_inline``), in a
service slot all the same: it reads without waiting on any lock (SQLite's WAL readers and
PostgreSQL's never wait for writers) and takes a millisecond or two, less than the hop to a
worker thread and back with its interpreter-lock hand-offs cost (``spamfilter bench speed``:
~0.3 ms a request, on ~3). Writes (learn, forget) may wait for a lock: always in a thread.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import anyio
from anyio import CapacityLimiter
from starlette.requests import Request

P = ParamSpec("P")
T = TypeVar("T")


# Bodies up to this size are classified on the event loop: ~1.5 ms for a typical message,
# at most ~12 ms for the slowest shape ``spamfilter bench hostile --max-size 64K`` builds.
INLINE_BYTES = 64 * 1024


def service_slots(threads: int) -> CapacityLimiter:
    """The limiter an app keeps on ``app.state.service_slots``."""
    return CapacityLimiter(threads)


async def call_service(
    request: Request, func: Callable[P, T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """``func(*args, **kwargs)`` in a worker thread, once one of the app's service slots is
    free."""
    limiter: CapacityLimiter = request.app.state.service_slots
    work = functools.partial(func, *args, **kwargs)
    return await anyio.to_thread.run_sync(work, limiter=limiter)


async def run_inline(
    request: Request, func: Callable[P, T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """``func(*args, **kwargs)`` on the event loop, once one of the app's service slots is
    free: only for a call that waits on no lock and is short (see the module doc)."""
    limiter: CapacityLimiter = request.app.state.service_slots
    async with limiter:
        return func(*args, **kwargs)
