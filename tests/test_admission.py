"""The process-wide cap on message bytes held in memory."""

from __future__ import annotations

import threading

import pytest

from app.admission import BodyBudget
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
