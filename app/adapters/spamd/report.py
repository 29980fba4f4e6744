"""What check replies present: the score as spamd shows it, symbols and the report text.
Pure functions of a CheckResult. The message with the X-Spam headers added (and those it came
with dropped) is app.domain.rewrite's, shared with the pipe filter.
"""

from __future__ import annotations

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
