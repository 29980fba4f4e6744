"""Reading ahead for a bulk learn: the next messages read in other processes.

Reading a message (``reading.Reader``) is about a quarter of learning it and depends on
nothing learned, so the next messages are read on another core while this process learns the
current one, in the same order. Learning stays in this process, one message after another:
under thick training each decision depends on what was learned before it.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Generator, Iterable
from concurrent.futures import BrokenExecutor, Future, ProcessPoolExecutor
from itertools import chain, islice
from typing import TypeVar

from app.service.reading import Reader
from app.service.results import Analysed, Form
from app.settings.schema import Settings

K = TypeVar("K")

# From this many messages on, a reading process pays for its start (why: its start-up
# against the time it saves a message, docs/benchmarks.md "Measurements behind the design").
AHEAD_FROM = 500
# Messages sent to another process at once, and at most this many such batches on the way:
# enough to keep the other process busy, few enough that a large folder is never all read
# into memory (at most CHUNK * WINDOW messages wait).
CHUNK = 16
WINDOW = 8


def reading_processes(messages: int) -> int:
    """How many processes should read ahead for a run of ``messages``: one from
    ``AHEAD_FROM`` messages on, on a machine with a core to spare; else none."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 1 if messages >= AHEAD_FROM and (cores or 1) > 1 else 0


def read_ahead(
    settings: Settings,
    entries: Iterable[tuple[K, bytes | None]],
    processes: int,
    legacy: bool = False,
    form: Form = "rfc822",
) -> Generator[tuple[K, Analysed | None], None, None]:
    """Each entry's key with its bytes read (``Reader.analyse``) in ``processes`` other
    processes, in the order given; None for an entry without bytes and for one whose
    reading failed there (the caller reads it again itself, to meet the error where it
    reports errors). ``entries`` is consumed as the results are taken, at most
    ``CHUNK * WINDOW`` ahead; the processes end with the iteration."""
    pending: deque[tuple[list[tuple[K, bytes | None]], Future[list[Analysed | None]]]] = deque()
    source = iter(entries)
    context = multiprocessing.get_context("spawn")  # no fork of a process with threads
    pool = ProcessPoolExecutor(
        processes, mp_context=context, initializer=_start, initargs=(settings, legacy, form)
    )
    try:
        while True:
            while len(pending) < WINDOW and (chunk := list(islice(source, CHUNK))):
                pending.append((chunk, pool.submit(_read_chunk, [raw for _, raw in chunk])))
            if not pending:
                return
            chunk, future = pending.popleft()
            try:
                read = future.result()
            except BrokenExecutor:
                # A reading process died (killed, out of memory): the caller reads the rest,
                # taken from ``source`` one at a time as before, never all at once.
                waiting = (entry for held, _future in pending for entry in held)
                for key, _raw in chain(chunk, waiting, source):
                    yield key, None
                return
            yield from zip((key for key, _ in chunk), read, strict=True)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


# In a reading process: its reader and how it reads (set once, by ``_start``).
_reader: tuple[Reader, bool, Form] | None = None


def _start(settings: Settings, legacy: bool, form: Form) -> None:
    global _reader
    _reader = (Reader(settings), legacy, form)


def _read_chunk(raws: list[bytes | None]) -> list[Analysed | None]:
    assert _reader is not None
    reader, legacy, form = _reader
    found: list[Analysed | None] = []
    for raw in raws:
        try:
            found.append(None if raw is None else reader.analyse(raw, legacy, form))
        except Exception:  # read again by the caller, which reports it
            found.append(None)
    return found
