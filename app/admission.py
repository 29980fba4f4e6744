"""Admission control: one cap on the bytes of message bodies a process holds at once.

Every adapter that buffers a message (HTTP, spamd, milter) draws the bytes it buffers from
one ``BodyBudget`` per process; past the cap a body waits for room (``admit``, at most
``server.budget_wait_seconds``), then is refused with ``Overloaded``. Bytes count as they
arrive (``Reservation.grow``), nothing declared is reserved; anonymous HTTP requests hold at
most ``server.anonymous_share`` of the cap; while a body waits, holders that made no progress
(fewer than ``PROGRESS_BYTES`` in ``server.stall_seconds``) are cut off, largest first, through
their ``on_evict``; a holder whose bytes are being judged is never cut. Why, and what each
adapter answers: docs/operations.md#limits.

A budget is safe to share between the event loop and worker threads (one lock, no waiting).
``in_thread`` runs the work on those bytes in a worker thread under a deadline, and gives the
bytes back only when the thread has really finished.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from app.errors import Overloaded

if TYPE_CHECKING:
    from app.settings.schema import ServerSettings

T = TypeVar("T")
Clock = Callable[[], float]

# Why 8 KiB: a client that is really sending (spamc, Postfix's cleanup, curl) writes 16-64 KiB
# at a time, while a holder trickling a byte every few seconds takes hours to send this much.
PROGRESS_BYTES = 8 * 1024
# How often a waiting body looks for room again: releases come from other coroutines and
# worker threads alike, and a poll this fine costs nothing next to a request.
WAIT_TICK = 0.02


class BodyBudget:
    """At most ``limit`` bytes held at once, across every ``Reservation``; anonymous ones at
    most ``anonymous_share`` of it together."""

    def __init__(
        self,
        limit: int,
        anonymous_share: float = 1.0,
        stall_seconds: float = 2.0,
        wait_seconds: float = 0.0,
        clock: Clock = time.monotonic,
    ) -> None:
        if limit <= 0:
            raise ValueError("the budget must be positive")
        self._limit = limit
        self._anonymous_limit = max(1, int(limit * anonymous_share))
        self._stall_seconds = stall_seconds
        self._wait_seconds = wait_seconds
        self._clock = clock
        self._held = 0
        self._anonymous_held = 0
        self._holders: set[Reservation] = set()
        self._lock = threading.Lock()

    @classmethod
    def for_server(cls, server: ServerSettings) -> BodyBudget:
        """The budget ``server.max_buffered_bytes`` and its rules describe."""
        return cls(
            server.max_buffered_bytes,
            anonymous_share=server.anonymous_share,
            stall_seconds=server.stall_seconds,
            wait_seconds=server.budget_wait_seconds,
        )

    @property
    def limit(self) -> int:
        """The cap, in bytes."""
        return self._limit

    @property
    def anonymous_limit(self) -> int:
        """The most anonymous reservations hold together, in bytes."""
        return self._anonymous_limit

    @property
    def held(self) -> int:
        """Bytes reserved now, in all reservations."""
        return self._held

    def reserve(
        self, anonymous: bool = False, on_evict: Callable[[], None] | None = None
    ) -> Reservation:
        """An empty reservation; grow it as bytes arrive, and close it (``with``) when done.

        ``on_evict`` (called on the event loop, at most once) makes the holder let go of its
        bytes; without one (or once it is set to None) the holder is never cut off."""
        return Reservation(self, anonymous, on_evict)

    async def admit(self, hold: Reservation, size: int) -> None:
        """``hold.grow(size)`` once there is room (``room_for``); Overloaded, holding nothing
        more, when none comes."""
        await self.room_for(hold, size)
        hold.grow(size)

    async def room_for(self, hold: Reservation, size: int) -> None:
        """Return once ``size`` more bytes would fit for ``hold``, waiting up to
        ``wait_seconds`` and cutting off stalled holders meanwhile; Overloaded when no room
        comes in time, or at once when no wait could make it (``size`` over the cap)."""
        if hold.size + size > self._limit:
            raise self._refusal(False)
        if hold.anonymous and hold.size + size > self._anonymous_limit:
            raise self._refusal(True)
        give_up = self._clock() + self._wait_seconds
        hold.waiting = True  # a body we keep waiting is not stalled by its own doing
        try:
            while (refusal := self._short_of(hold, size)) is not None:
                if self._clock() >= give_up:
                    raise refusal
                self.evict_stalled(hold, size)
                await asyncio.sleep(WAIT_TICK)
        finally:
            hold.waiting = False

    def evict_stalled(self, waiter: Reservation, size: int) -> int:
        """Cut off holders that have stalled, largest first, until ``size`` more bytes would
        fit for ``waiter``; returns how many were cut off now."""
        now = self._clock()
        with self._lock:
            short_of_anonymous = waiter.anonymous and (
                self._anonymous_held + size > self._anonymous_limit
            )
            need = self._held + size - self._limit
            if waiter.anonymous:
                need = max(need, self._anonymous_held + size - self._anonymous_limit)
            going = [h for h in self._holders if h.evicted]
            need -= sum(h.size for h in going if h.anonymous or not short_of_anonymous)
            candidates = sorted(
                (
                    h
                    for h in self._holders
                    if h is not waiter
                    and h.evictable
                    and now - h.progressed_at >= self._stall_seconds
                    and (h.anonymous or not short_of_anonymous)
                ),
                key=lambda h: h.size,
                reverse=True,
            )
        chosen: list[Reservation] = []
        for holder in candidates:
            if need <= 0:
                break
            chosen.append(holder)
            need -= holder.size
        for holder in chosen:
            holder.evict()
        return len(chosen)

    def _short_of(self, hold: Reservation, size: int) -> Overloaded | None:
        """The refusal ``size`` more bytes for ``hold`` would meet now, or None."""
        with self._lock:
            return self._check(hold, size)

    def _check(self, hold: Reservation, size: int) -> Overloaded | None:
        # Under the lock.
        if self._held + size > self._limit:
            return self._refusal(False)
        if hold.anonymous and self._anonymous_held + size > self._anonymous_limit:
            return self._refusal(True)
        return None

    def _refusal(self, anonymous: bool) -> Overloaded:
        if anonymous:
            return Overloaded(
                "too many message bytes from callers without an API token are in flight; "
                f"retry shortly (their limit is {self._anonymous_limit} bytes per process)"
            )
        return Overloaded(
            "too many message bytes are in flight; retry shortly "
            f"(the limit is {self._limit} bytes per process)"
        )

    def _take(self, hold: Reservation, size: int) -> None:
        with self._lock:
            refusal = self._check(hold, size)
            if refusal is not None:
                raise refusal
            if hold.anonymous:
                self._anonymous_held += size
            self._held += size
            self._holders.add(hold)

    def _give(self, hold: Reservation, size: int) -> None:
        with self._lock:
            self._held -= size
            if hold.anonymous:
                self._anonymous_held -= size
            self._holders.discard(hold)


class Reservation:
    """Bytes one connection holds from a budget; all given back by ``release`` or ``with``."""

    def __init__(
        self,
        budget: BodyBudget,
        anonymous: bool = False,
        on_evict: Callable[[], None] | None = None,
    ) -> None:
        self._budget = budget
        self._size = 0
        self.anonymous = anonymous
        self.on_evict = on_evict
        self.evicted = False
        self.waiting = False
        self.progressed_at = budget._clock()
        self._since_progress = 0

    @property
    def size(self) -> int:
        """Bytes this reservation holds."""
        return self._size

    @property
    def evictable(self) -> bool:
        """Holding bytes, still receiving (``on_evict`` set), not waiting for room, and not cut
        off already."""
        return self._size > 0 and self.on_evict is not None and not (self.evicted or self.waiting)

    def grow(self, size: int) -> None:
        """Hold ``size`` more bytes; raises Overloaded (holding nothing more) past the cap."""
        if size <= 0:
            return
        self._budget._take(self, size)
        if self._size == 0:  # the first bytes: the clock of progress starts now
            self._since_progress = 0
            self.progressed_at = self._budget._clock()
        self._size += size
        self._since_progress += size
        if self._since_progress >= PROGRESS_BYTES:
            self._since_progress = 0
            self.progressed_at = self._budget._clock()

    async def admit(self, size: int) -> None:
        """``grow(size)``, waiting for room as ``BodyBudget.admit`` does."""
        await self._budget.admit(self, size)

    def evict(self) -> None:
        """Ask the holder to let go (its ``on_evict``); once only."""
        callback = self.on_evict
        if callback is None or self.evicted:
            return
        self.evicted = True
        callback()

    def release(self) -> None:
        """Give every byte back (idempotent)."""
        if self._size:
            self._budget._give(self, self._size)
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
