"""Admission control: one cap on the bytes of message bodies a process holds at once.

Every adapter that buffers a message (HTTP, spamd, milter) draws the bytes it buffers from
one ``BodyBudget`` per process. A connection that would take the total past the cap is refused
at once with ``Overloaded`` (HTTP 503, spamd EX_TEMPFAIL, milter tempfail) instead of making
the process swap: sixteen 25 MiB uploads at once held about 790 MiB before this cap.

A budget is safe to share between the event loop and worker threads (one lock, no waiting).
``in_thread`` runs the work on those bytes in a worker thread under a deadline, and gives the
bytes back only when the thread has really finished.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from app.errors import Overloaded

T = TypeVar("T")


class BodyBudget:
    """At most ``limit`` bytes held at once, across every ``Reservation``."""

    def __init__(self, limit: int) -> None:
        if limit <= 0:
            raise ValueError("the budget must be positive")
        self._limit = limit
        self._held = 0
        self._lock = threading.Lock()

    @property
    def limit(self) -> int:
        """The cap, in bytes."""
        return self._limit

    @property
    def held(self) -> int:
        """Bytes reserved now, in all reservations."""
        return self._held

    def reserve(self) -> Reservation:
        """An empty reservation; grow it as bytes arrive, and close it (``with``) when done."""
        return Reservation(self)

    def _take(self, size: int) -> None:
        with self._lock:
            if self._held + size > self._limit:
                raise Overloaded(
                    "too many message bytes are in flight; retry shortly "
                    f"(the limit is {self._limit} bytes per process)"
                )
            self._held += size

    def _give(self, size: int) -> None:
        with self._lock:
            self._held -= size


class Reservation:
    """Bytes one connection holds from a budget; all given back by ``release`` or ``with``."""

    def __init__(self, budget: BodyBudget) -> None:
        self._budget = budget
        self._size = 0

    @property
    def size(self) -> int:
        """Bytes this reservation holds."""
        return self._size

    def grow(self, size: int) -> None:
        """Hold ``size`` more bytes; raises Overloaded (holding nothing more) past the cap."""
        if size <= 0:
            return
        self._budget._take(size)
        self._size += size

    def release(self) -> None:
        """Give every byte back (idempotent)."""
        if self._size:
            self._budget._give(self._size)
            self._size = 0

    def __enter__(self) -> Reservation:
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        self.release()


async def in_thread(work: Callable[[], T], timeout: float, hold: Reservation | None) -> T:
    """``work()`` in a worker thread, waited for at most ``timeout`` seconds (TimeoutError).

    A thread cannot be stopped: after a timeout it runs on, and ``hold`` (the bytes it works
    on) goes back to the budget only when it ends, so the budget never undercounts.
    """
    task = asyncio.ensure_future(asyncio.to_thread(work))
    task.add_done_callback(functools.partial(_settled, hold))
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        raise TimeoutError(f"no answer within {timeout:g} seconds")
    return task.result()


def _settled(hold: Reservation | None, task: asyncio.Future[Any]) -> None:
    if hold is not None:
        hold.release()
    if not task.cancelled():
        task.exception()  # retrieved: nobody may be waiting for it any more
