"""A verdict as SpamAssassin-style headers and score, shared by every mail adapter.

Score mapping. Mail servers compare a SpamAssassin score with ``required_score`` (5.0 by
default). Our decision is on the log-odds L (nats) against the spam cut-off S (10 by default),
so the score is L scaled linearly to put S at 5.0:

    score = 5.0 · L / S      (S = 10: score = L / 2; clamped to ±999, one decimal)

so that ``score >= required_score`` with the default 5.0 is the same decision as ours. A
``required_score`` of 5.0 · T / S corresponds to a log-odds cut-off of T nats.

Classes. A site that declares more than ham and spam gets ``X-Spam-Class: <class>``, the most
likely class, for Sieve or procmail to file on; the other headers keep their junk-vs-not-junk
meaning. A site with only ham and spam gets the headers it always had.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.domain.naive_bayes import Clue
from app.domain.verdict import Verdict

REQUIRED_SCORE = 5.0
_SCORE_LIMIT = 999.0
_CLUES_IN_STATUS = 5
_VERSION = "spamfilter"
_SYMBOL_LENGTH = 40
# What a clue symbol replaces: anything but printable ASCII (! to ~), and , ; " \.
_UNSAFE = re.compile(r'[^!-~]|[,;"\\]')


@dataclass(frozen=True, slots=True)
class SpamReport:
    """What a mail adapter needs to report a classification."""

    verdict: Verdict
    log_odds: float
    spam_probability: float
    clues: Sequence[Clue]
    class_name: str | None = None  # the most likely class, shown as X-Spam-Class


def shown_class(class_name: str, classes: Sequence[str]) -> str | None:
    """The class for X-Spam-Class: ``class_name`` when more than two classes are declared,
    else None (no header), so a ham/spam site's headers stay as they were."""
    return class_name if len(classes) > 2 and class_name else None


def spam_score(log_odds: float, spam_log_odds: float) -> float:
    """The log-odds on SpamAssassin's scale: ``REQUIRED_SCORE`` at the spam cut-off."""
    scale = REQUIRED_SCORE / spam_log_odds if spam_log_odds > 0 else REQUIRED_SCORE
    score = max(-_SCORE_LIMIT, min(_SCORE_LIMIT, log_odds * scale))
    return round(score, 1)


def shown_score(score: float, spam: bool, required: float = REQUIRED_SCORE) -> float:
    """``score`` to one decimal, kept below ``required`` unless the verdict is spam.

    A non-spam score that rounds up to the threshold is shown 0.1 under it, so that clients
    deciding by ``score >= required`` (Exim) agree with the verdict, as spamd does
    (SpamAssassin bugs 2607 and 6419).
    """
    shown = round(score, 1)
    if spam or shown < round(required, 1):
        return shown
    return round(required - 0.1, 1)


def is_spam(report: SpamReport) -> bool:
    """True only for a spam verdict (unsure is not spam to a mail server)."""
    return report.verdict is Verdict.SPAM


def spam_headers(report: SpamReport, spam_log_odds: float) -> list[tuple[str, str]]:
    """``X-Spam-Flag`` (spam only), ``X-Spam-Status``, ``X-Spam-Level``, ``X-Spam-Verdict`` and,
    when the report names a class, ``X-Spam-Class``.

    X-Spam-Status follows SpamAssassin's ``Yes|No, score=S required=R tests=... version=V``
    with our top clues in place of rule names; X-Spam-Level has one ``*`` per score point
    (at most 50), as SpamAssassin writes it.
    """
    score = shown_score(spam_score(report.log_odds, spam_log_odds), is_spam(report))
    flag = "Yes" if is_spam(report) else "No"
    tests = ",".join(_clue_name(c) for c in report.clues[:_CLUES_IN_STATUS]) or "none"
    headers: list[tuple[str, str]] = []
    if is_spam(report):
        headers.append(("X-Spam-Flag", "YES"))
    headers.append(
        (
            "X-Spam-Status",
            f"{flag}, score={score:.1f} required={REQUIRED_SCORE:.1f} tests={tests} "
            f"version={_VERSION}",
        )
    )
    headers.append(("X-Spam-Level", "*" * min(50, max(0, int(score)))))
    headers.append(
        (
            "X-Spam-Verdict",
            f"{report.verdict.value}; log-odds={report.log_odds:.2f}; "
            f"probability={report.spam_probability:.6f}",
        )
    )
    if report.class_name:
        headers.append(("X-Spam-Class", clue_symbol(report.class_name)))
    return headers


def clue_symbol(token: str) -> str:
    """A clue token as a rule-like name, safe in a header field and in a spamd reply: printable
    ASCII without ``,;"\\`` (anything else becomes ``_``), at most 40 characters."""
    # One character for one: cut first, then replace. A regular expression, since a loop over
    # the characters took most of a mail report, and every classify builds one.
    return _UNSAFE.sub("_", token[:_SYMBOL_LENGTH])


def _clue_name(clue: Clue) -> str:
    """A clue as it appears in X-Spam-Status: ``token(+1.23)``."""
    return f"{clue_symbol(clue.token)}({clue.weight:+.2f})"
