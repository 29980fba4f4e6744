"""Service calls from the event loop: in worker threads, a bounded number at once.

Every service call (parsing, tokenising, SQL) is synchronous Python, so it runs in a worker
thread and the event loop keeps reading requests. Python runs one thread at a time, though:
16 connections each in a thread of their own (Starlette's pool lets 40 in) made one worker
answer fewer requests (94 a second against 248 with one connection) and each of them later,
as the threads took turns. So each worker lets ``server.service_threads`` calls in at once
(default 1: 194 classifications a second at 16 connections) and queues the rest; the queue
is fair (first come, first served).
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
