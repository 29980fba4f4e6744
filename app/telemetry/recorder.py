"""The console's recorder: an observer that keeps events in memory and writes them in batches.

A classify must not wait for a database write of its own, so ``observe`` only appends to a
bounded buffer (past ``capacity`` the oldest events are dropped and counted); a background
thread hands the buffer to ``sink`` (``History.record``: one transaction) every
``interval`` seconds, or sooner once ``batch`` events wait, and once more when the process
exits.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence

from app.errors import SpamFilterError
from app.service.events import Event

log = logging.getLogger(__name__)

Sink = Callable[[Sequence[Event]], None]


class Recorder:
    """Buffers events and flushes them to ``sink`` from a thread of its own."""

    def __init__(
        self, sink: Sink, interval: float, batch: int, capacity: int, keep_tokens: bool = True
    ) -> None:
        self._sink = sink
        self._keep_tokens = keep_tokens
        self._interval = interval
        self._batch = batch
        self._buffer: deque[Event] = deque(maxlen=capacity)
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.dropped = 0

    def observe(self, event: Event) -> None:
        """Keep ``event`` for the next flush (never touches the database). Only a classify's
        token counts are kept, and only when history entries keep tokens: the rest would
        hold memory for nothing while a flush waits."""
        if event.tokens is not None and (event.call != "classify" or not self._keep_tokens):
            event = dataclasses.replace(event, tokens=None)
        with self._lock:
            if len(self._buffer) == self._buffer.maxlen:
                self.dropped += 1
            self._buffer.append(event)
            full = len(self._buffer) >= self._batch
        if full:
            self._wake.set()

    def pending(self) -> int:
        """Events waiting for the next flush."""
        with self._lock:
            return len(self._buffer)

    def flush(self) -> int:
        """Write what waits now; returns how many events were handed over. A failed write is
        logged and its events are lost (the buffer stays bounded): in one line when the
        service refused it (a full disk, a read-only database), with a traceback for a bug."""
        with self._flushing:
            with self._lock:
                events = list(self._buffer)
                self._buffer.clear()
            if not events:
                return 0
            try:
                self._sink(events)
            except SpamFilterError as error:
                log.warning("could not record %d events for the console: %s", len(events), error)
            except Exception:
                log.exception("could not record %d events for the console", len(events))
            return len(events)

    def start(self) -> None:
        """Start the flushing thread (once) and flush at interpreter exit."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="console-recorder", daemon=True)
        self._thread.start()
        atexit.register(self.stop)

    def close(self) -> None:
        """Stop the thread after a last flush (the service's ``close`` calls it)."""
        atexit.unregister(self.stop)
        self.stop()

    def stop(self) -> None:
        """Stop the thread after a last flush."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
            if self._thread.is_alive():  # a flush is stuck (a locked database): do not wait
                log.warning(
                    "console recorder: a flush is still running; %d events left", self.pending()
                )
                return
        self.flush()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(self._interval)
            self._wake.clear()
            self.flush()
