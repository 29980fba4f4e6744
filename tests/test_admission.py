"""The process-wide cap on message bytes held in memory."""

from __future__ import annotations

import asyncio
import threading

import pytest

from app.admission import PROGRESS_BYTES, BodyBudget
from app.errors import Overloaded


def test_reservations_share_one_cap_and_give_back_on_exit() -> None:
    budget = BodyBudget(100)
    with budget.reserve() as first:
        first.grow(60)
        second = budget.reserve()
        with pytest.raises(Overloaded):
            second.grow(41)
        assert second.size == 0, "a refused grow holds nothing"
        second.grow(40)
        assert budget.held == 100
        second.release()
        second.release()  # idempotent
        assert budget.held == 60
    assert budget.held == 0


def test_release_on_error_inside_with() -> None:
    budget = BodyBudget(10)
    with pytest.raises(RuntimeError), budget.reserve() as reservation:
        reservation.grow(10)
        raise RuntimeError("boom")
    assert budget.held == 0


def test_threads_never_take_more_than_the_cap() -> None:
    budget = BodyBudget(1000)
    granted: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        reservation = budget.reserve()
        for _ in range(200):
            try:
                reservation.grow(7)
            except Overloaded:
                break
        with lock:
            granted.append(reservation.size)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(granted) == budget.held <= 1000
    assert budget.held > 1000 - 7 * 8


def test_a_budget_must_be_positive() -> None:
    with pytest.raises(ValueError):
        BodyBudget(0)


class Clock:
    """A clock the test moves by hand (and by ``step`` at every reading)."""

    def __init__(self, step: float = 0.0) -> None:
        self.now = 100.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_anonymous_reservations_share_a_small_part_of_the_cap() -> None:
    budget = BodyBudget(1000, anonymous_share=0.25)
    anonymous = budget.reserve(anonymous=True)
    anonymous.grow(250)
    with pytest.raises(Overloaded, match="without an API token"):
        budget.reserve(anonymous=True).grow(1)
    trusted = budget.reserve()
    trusted.grow(750)  # the rest is theirs whatever the anonymous hold
    assert budget.held == 1000
    anonymous.release()
    budget.reserve(anonymous=True).grow(250)


def test_a_waiting_grow_cuts_off_a_stalled_holder_and_takes_its_room() -> None:
    clock = Clock()
    budget = BodyBudget(100, stall_seconds=2.0, wait_seconds=5.0, clock=clock)
    cut: list[str] = []
    stalled = budget.reserve(on_evict=lambda: (cut.append("stalled"), stalled.release()))
    stalled.grow(90)
    clock.now += 3.0  # nothing more arrived for longer than stall_seconds
    waiter = budget.reserve()
    asyncio.run(waiter.admit(50))
    assert cut == ["stalled"]
    assert waiter.size == 50 and budget.held == 50


def test_holders_that_progress_or_are_done_receiving_are_never_cut_off() -> None:
    clock = Clock(step=0.01)
    budget = BodyBudget(14_000, stall_seconds=2.0, wait_seconds=0.5, clock=clock)
    cut: list[str] = []
    done = budget.reserve()  # no on_evict: its bytes are being judged
    done.grow(5_700)
    sending = budget.reserve(on_evict=lambda: (cut.append("sending"), sending.release()))
    sending.grow(40)
    clock.now += 3.0  # both are old now, but...
    sending.grow(PROGRESS_BYTES)  # ...this one has just made progress
    with pytest.raises(Overloaded):
        asyncio.run(budget.reserve().admit(100))
    assert cut == []
    clock.now += 3.0  # and now it has stalled
    asyncio.run(budget.reserve().admit(100))
    assert cut == ["sending"]


def test_a_grow_that_finds_no_room_waits_then_is_refused() -> None:
    budget = BodyBudget(100, wait_seconds=0.1)
    budget.reserve().grow(100)
    with pytest.raises(Overloaded):
        asyncio.run(budget.reserve().admit(1))
