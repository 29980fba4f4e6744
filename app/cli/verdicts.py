"""How ``spamfilter classify`` shows a verdict: one line, a detailed view, or JSON.

The detailed view gives the verdict and its reason, the log-odds with the thresholds that
turn it into a verdict, the score on SpamAssassin's scale, and the clues that decided it:
each token, the learned messages holding it in each label, and its weight in nats. On a
terminal it is drawn with rich; piped, it is the same content as plain text.
"""

from __future__ import annotations

import sys
from typing import Any

from app.service import Classification
from app.settings.schema import Settings


def thresholds(settings: Settings, result: Classification) -> dict[str, float | int | bool]:
    """The cut-offs that turned ``result``'s log-odds into its verdict; ``calibrated`` says
    whether the spam cut-off follows the model's ham scores (app.service.cutoffs)."""
    decision = settings.decision
    return {
        "ham_below": decision.ham_log_odds,
        "spam_above": result.spam_cutoff,
        "calibrated": decision.calibrate,
        "min_messages": decision.min_messages,
    }


def classification_line(name: str, result: Classification) -> str:
    """``spam    +12.345 0.999994  path`` (log-odds in nats)."""
    return (
        f"{result.verdict.value:<6} {result.log_odds:+10.3f} {result.spam_probability:.6f}  {name}"
    )


def classification_json(name: str, result: Classification, settings: Settings) -> dict[str, Any]:
    """The JSON-lines form of one classification (log values in nats)."""
    mail = result.mail_report
    return {
        "path": name,
        "verdict": result.verdict.value,
        "reason": None if result.reason is None else result.reason.value,
        "log_odds": result.log_odds,
        "spam_probability": result.spam_probability,
        "class": result.class_name,
        "log_posteriors": result.log_posteriors,
        "score": mail.score,
        "required": mail.required,
        "thresholds": thresholds(settings, result),
        "digest": result.digest,
        "tokens": result.tokens,
        "truncated": result.truncated,
        "form": result.form,
        "clues": [
            {
                "token": clue.token,
                "weight": clue.weight,
                "counts": result.clue_counts.get(clue.token, {}),
            }
            for clue in result.clues
        ],
    }


def show_classification(name: str, result: Classification, settings: Settings) -> None:
    """The detailed view of one classification on stdout (rich on a terminal)."""
    # rich only here: a learn-on-move or `classify -q` process runs once per message.
    from rich.console import Console
    from rich.table import Table

    mail = result.mail_report
    console = Console(
        force_terminal=None, no_color=None, highlight=False, soft_wrap=False, width=_width()
    )
    limits = thresholds(settings, result)
    reason = "" if result.reason is None else f" ({result.reason.value})"
    console.print(f"[bold]{name}[/bold]: [bold]{result.verdict.value.upper()}[/bold]{reason}")
    console.print(
        f"log-odds {result.log_odds:+.3f} nats: ham below {limits['ham_below']:g}, "
        f"spam above {limits['spam_above']:g}"
        + (" (calibrated)" if limits["calibrated"] else "")
        + f" (verdicts after {limits['min_messages']} messages per label)"
    )
    console.print(
        f"score {mail.score:.1f}/{mail.required:.1f} on SpamAssassin's scale; "
        f"P(spam) {result.spam_probability:.6f}; {result.tokens} tokens"
        + ("; head only (size cap)" if result.truncated else "")
    )
    if not result.clues:
        if result.reason is not None:
            console.print("no clues: tokens are scored once every label has learned messages")
        else:
            console.print("no clues: none of this message's tokens has been learned")
        return
    table = Table(title="clues (weight: nats towards spam)", title_justify="left")
    table.add_column("token", overflow="fold")
    labels = list(settings.model.classes)
    for label in labels:
        table.add_column(label, justify="right")
    table.add_column("weight", justify="right")
    for clue in result.clues:
        counts = result.clue_counts.get(clue.token, {})
        style = "red" if clue.weight > 0 else "green"
        table.add_row(
            clue.token,
            *(str(counts.get(label, 0)) for label in labels),
            f"[{style}]{clue.weight:+.3f}[/{style}]",
        )
    console.print(table)


def _width() -> int | None:
    """The terminal's width; 100 columns when stdout is not a terminal."""
    return None if sys.stdout.isatty() else 100
