"""Timing each public call and telling the observers how it ended (see ``events``)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from app.domain.users import InvalidUserName, normalise_user
from app.errors import SpamFilterError
from app.service.events import Event, Observer, notify
from app.service.results import Analysed


class Watch:
    """One call being watched: what it read, and how it answered."""

    def __init__(self) -> None:
        self.analysed: Analysed | None = None
        self.outcome: str | None = None
        self.details: dict[str, Any] = {}

    def read(self, analysed: Analysed) -> Analysed:
        """Note the message the call is about (its digest and Message-ID); returns it."""
        self.analysed = analysed
        return analysed

    def answer(self, outcome: str, **details: Any) -> None:
        """Note the call's answer: a verdict or an outcome, and what else the event carries."""
        self.outcome = outcome
        self.details = details


class Watcher:
    """Makes one event per watched call and gives it to the observers (none: no cost)."""

    def __init__(self, observers: Sequence[Observer], adapter: str) -> None:
        self._observers = tuple(observers)
        self._adapter = adapter

    def close(self) -> None:
        """Let observers that hold resources (a ``close`` method) finish their work."""
        for observer in self._observers:
            close = getattr(observer, "close", None)
            if callable(close):
                close()

    @contextmanager
    def call(self, name: str, user: str | None) -> Iterator[Watch]:
        """Watch one call named ``name``; an exception is reported as ``error`` and re-raised."""
        with self.calls(name, user, 1) as watches:
            yield watches[0]

    @contextmanager
    def failure(self, name: str, user: str | None) -> Iterator[None]:
        """Report an exception as a call named ``name`` that ended in ``error`` (and re-raise
        it); nothing when none is raised (the call is reported by what follows)."""
        with self.calls(name, user, 1) as watches:
            yield
            watches.clear()

    @contextmanager
    def calls(self, name: str, user: str | None, count: int) -> Iterator[list[Watch]]:
        """Watch ``count`` calls made together (a batch of learns): one event each, taking
        an equal share of the time; an exception is reported as ``error`` for each of them
        and re-raised. Watches the caller removes from the list are not reported."""
        watches = [Watch() for _ in range(count)]
        if not self._observers:
            yield watches
            return
        started = time.perf_counter()
        try:
            yield watches
        except BaseException as error:
            code = error.code if isinstance(error, SpamFilterError) else type(error).__name__
            self._emit(name, user, watches, started, "error", error=code)
            raise
        self._emit(name, user, watches, started, None)

    def _emit(
        self,
        name: str,
        user: str | None,
        watches: list[Watch],
        started: float,
        outcome: str | None,
        **details: Any,
    ) -> None:
        seconds = (time.perf_counter() - started) / max(len(watches), 1)
        shown = _shown_user(user)
        for watch in watches:
            analysed = watch.analysed
            event = Event(
                time=datetime.now(UTC),
                call=name,
                adapter=self._adapter,
                user=shown,
                outcome=outcome or watch.outcome or "unknown",
                seconds=seconds,
                message_id=analysed.message_id if analysed else None,
                digest=analysed.digest if analysed else None,
                form=analysed.form if analysed else None,
                sender=analysed.sender if analysed else None,
                subject=analysed.subject if analysed else None,
                tokens=analysed.tokens if analysed else None,
                **(details if outcome else watch.details),
            )
            notify(self._observers, event)


def _shown_user(user: str | None) -> str | None:
    """The user as the models name it; a name that cannot name one is not repeated."""
    try:
        return normalise_user(user)
    except InvalidUserName:
        return "(invalid)"
