"""What the service tells observers after each call: a verdict, a piece of feedback, a failure.

Observers (the verdict log, the Prometheus collectors; see ``app.telemetry``) are given one
event per public call, after it has finished, from the thread that made it. An event carries
what identifies the message and the answer — never the message's content — so it can be
written to a log as it is. An observer that raises is logged and otherwise ignored: watching
the service never changes what it answers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Event:
    """One finished call.

    ``call`` is classify, learn or forget; ``adapter`` the entry point that made it (http,
    spamd, milter, pipe, cli); ``user`` the normalised user (None: site-wide model);
    ``outcome`` the verdict of a classify, the outcome of a learn or forget, or ``error``;
    ``error`` the error code when the call failed; ``seconds`` its duration.

    ``anonymous`` is True for a classify by a caller that proved nothing (HTTP without a
    valid token while tokens are configured): the console's history keeps such entries
    apart, so that a flood of them cannot push out the others.

    ``sender``, ``subject``, ``tokens`` and ``clues`` (a classify's (token, weight) pairs) are
    for observers that keep a bounded history (the console's recorder); the verdict log
    leaves them out.
    """

    time: datetime
    call: str
    adapter: str
    user: str | None
    outcome: str
    seconds: float
    message_id: str | None = None
    digest: str | None = None
    label: str | None = None
    log_odds: float | None = None
    form: str | None = None
    error: str | None = None
    sender: str | None = None
    subject: str | None = None
    tokens: Mapping[str, int] | None = field(default=None, repr=False)
    clues: tuple[tuple[str, float], ...] = field(default=(), repr=False)
    anonymous: bool = False


class Observer(Protocol):
    """Something told of every finished call."""

    def observe(self, event: Event) -> None:
        """Take note of ``event`` (must not block for long: it runs on the caller's thread)."""


def notify(observers: Sequence[Observer], event: Event) -> None:
    """Give ``event`` to every observer; one that fails is logged and skipped."""
    for observer in observers:
        try:
            observer.observe(event)
        except Exception:
            log.exception("observer %r failed on a %s event", observer, event.call)
