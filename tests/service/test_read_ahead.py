"""Reading ahead in other processes (``app.service.read_ahead``): the same analyses as the
reader here, in order, never far ahead of the caller, and the caller's to redo where a
reading process failed."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
from collections.abc import Iterator

from app.service import read_ahead as ahead
from app.service.reading import Reader
from app.settings.schema import Settings
from tests.builders import ham_message, spam_message


def settings() -> Settings:
    return Settings(database_url="sqlite:///unused.db", server={"max_message_bytes": 20_000})


def raws(count: int) -> list[bytes]:
    rng = random.Random(5)
    return [(spam_message if n % 2 else ham_message)(rng, n) for n in range(count)]


def test_every_message_comes_back_read_as_here_and_in_order() -> None:
    messages = raws(40)
    entries: list[tuple[int, bytes | None]] = list(enumerate(messages))
    entries[3] = (3, None)  # nothing to read: None back
    entries[7] = (7, b"Subject: big\n\n" + b"x" * 30_000)  # too large: fails there, None back
    entries[9] = (9, b"\x00\x01 not a message\n")  # not a message: None back
    found = list(ahead.read_ahead(settings(), entries, processes=2, legacy=True))
    assert [key for key, _ in found] == list(range(40))
    here = Reader(settings())
    for key, analysed in found:
        if key in (3, 7, 9):
            assert analysed is None
        else:
            assert analysed == here.analyse(messages[key], legacy=True)


class Counted:
    """``count`` messages as ``read_ahead``'s entries, and how many it has taken so far."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.taken = 0

    def __iter__(self) -> Iterator[tuple[int, bytes | None]]:
        for key, raw in enumerate(raws(self.count)):
            self.taken += 1
            yield key, raw


def test_the_messages_are_taken_only_a_window_ahead_of_the_caller() -> None:
    entries = Counted(400)
    reading = ahead.read_ahead(settings(), iter(entries), processes=1)
    next(reading)
    assert entries.taken <= ahead.CHUNK * ahead.WINDOW
    assert sum(1 for _ in reading) == 399
    assert entries.taken == 400


def test_a_reading_process_that_dies_leaves_the_rest_to_the_caller() -> None:
    messages = raws(300)
    reading = ahead.read_ahead(settings(), enumerate(messages), processes=1)
    first = [next(reading) for _ in range(3)]
    assert all(analysed is not None for _, analysed in first)
    for child in multiprocessing.active_children():
        os.kill(child.pid or 0, signal.SIGKILL)
    rest = list(reading)
    assert [key for key, _ in first + rest] == list(range(300))
    # What was read before the kill still comes back; from the broken batch on, None.
    lost = [analysed is None for _, analysed in rest]
    assert lost[-1] and lost == sorted(lost)


def test_after_a_reading_process_dies_the_rest_is_still_taken_one_at_a_time() -> None:
    entries = Counted(1_000)
    reading = ahead.read_ahead(settings(), iter(entries), processes=1)
    next(reading)
    for child in multiprocessing.active_children():
        os.kill(child.pid or 0, signal.SIGKILL)
    while next(reading)[1] is not None:
        pass
    assert entries.taken <= 2 * ahead.CHUNK * ahead.WINDOW  # not the whole folder at once
    list(reading)
    assert entries.taken == 1_000
