"""What check replies present: the score as spamd shows it, symbols, the report text, and
the message with the X-Spam headers added (and those it came with dropped). Pure functions of
a CheckResult and bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.domain.naive_bayes import Clue
from app.domain.spam_headers import clue_symbol, shown_score


@dataclass(frozen=True, slots=True)
class CheckResult:
    """A classification as the spamd replies present it (scores on SpamAssassin's scale)."""

    is_spam: bool
    score: float
    required: float
    headers: Sequence[tuple[str, str]]
    clues: Sequence[Clue]
    verdict: str
    reason: str | None
    log_odds: float
    spam_probability: float


def wire_score(score: float, required: float, is_spam: bool) -> str:
    """The score as spamd shows it: one decimal, and below ``required`` when not spam.

    The rule itself is app.domain.spam_headers.shown_score, shared with the X-Spam headers.
    """
    return f"{shown_score(score, is_spam, required):.1f}"


def format_report(result: CheckResult) -> str:
    """A short human-readable report: the verdict, the score and each clue's weight (nats)."""
    reason = f" ({result.reason})" if result.reason else ""
    score = wire_score(result.score, result.required, result.is_spam)
    lines = [
        f"Spam filter verdict: {result.verdict}{reason}, log-odds {result.log_odds:+.2f}"
        f" nats, P(spam) {result.spam_probability:.6f}",
        "",
        f"Content analysis details:   ({score} points, {result.required:.1f} required)",
        "",
        " log-odds clue",
        "--------- " + "-" * 60,
        *(f"{clue.weight:+9.2f} {clue_symbol(clue.token)}" for clue in result.clues),
    ]
    if not result.clues:
        lines.append("          (none: the model knows none of the message's tokens)")
    lines += ["", "A clue's log-odds (nats) above 0 point to spam, below 0 to ham."]
    return "\n".join(lines) + "\n"


def header_block(message: bytes) -> bytes:
    """The header block up to and including the blank line (all of it when there is none)."""
    match = re.search(rb"\r?\n\r?\n", message)
    return message[: match.end()] if match else message


_OWN_PREFIX = b"x-spam-"
_LINES = re.compile(rb"[^\n]*\n|[^\n]+")


def drop_spam_headers(message: bytes) -> bytes:
    """``message`` without the X-Spam-* fields of its header block (folded lines included).

    SpamAssassin drops them too before it adds its own: a sender's forged ``X-Spam-Flag: NO``
    must not reach a Sieve or procmail rule under ours. Every other byte is kept.
    """
    head = header_block(message)
    if _OWN_PREFIX not in head.lower():
        return message
    kept: list[bytes] = []
    dropping = False
    for line in _LINES.findall(head):
        if line[:1] not in (b" ", b"\t"):  # a new field (or the blank line): not a fold
            dropping = line[: len(_OWN_PREFIX)].lower() == _OWN_PREFIX
        if not dropping:
            kept.append(line)
    return b"".join(kept) + message[len(head) :]
