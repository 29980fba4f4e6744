"""The verdict log: one JSON object per line for every classify, learn and forget.

Each line holds the time, the entry point (adapter), the call, the user, the Message-ID and
digest, the verdict or outcome, the log-odds, the milliseconds the call took, and the error
code of a failed call — never a word of the message. Lines go to their own logger
(``spamfilter.verdicts``), not mixed into the server log, to standard error or to a file
(reopened when logrotate moves it).
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import sys
from typing import Any

from app.service.events import Event

LOGGER = "spamfilter.verdicts"


def line(event: Event) -> str:
    """The JSON line of ``event``: keys in a fixed order; absent values are left out."""
    fields: dict[str, Any] = {
        "time": event.time.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "adapter": event.adapter,
        "call": event.call,
        "user": event.user,
        "message_id": event.message_id,
        "digest": event.digest,
        "outcome": event.outcome,
        "label": event.label,
        "log_odds": None if event.log_odds is None else round(event.log_odds, 3),
        "ms": round(event.seconds * 1000, 2),
        "form": event.form,
        "error": event.error,
    }
    return json.dumps({k: v for k, v in fields.items() if v is not None}, ensure_ascii=True)


class Journal:
    """An observer that writes ``line(event)`` for every event to its logger."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger

    def observe(self, event: Event) -> None:
        """Write the event's line."""
        self._logger.info(line(event))


def open_journal(target: str) -> Journal:
    """A journal writing to ``target``: ``stderr`` or a file path (appended to)."""
    logger = logging.getLogger(LOGGER)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    for old in list(logger.handlers):
        logger.removeHandler(old)
        old.close()
    handler: logging.Handler
    if target == "stderr":
        handler = logging.StreamHandler(sys.stderr)
    else:
        handler = logging.handlers.WatchedFileHandler(target, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    return Journal(logger)
