"""The messages that decide a run's ranking: each one's share of 1-ROCA%.

1-ROCA% counts the spam/ham pairs a run ranks the wrong way round. A ham scored above most of
the spam, or a spam below most of the ham, takes part in many of them, and on a large corpus
a handful of such messages can be most of the figure. Mislabelled mail shows up here first (a
stock promotion filed as ham); a change of model that moves only these messages has moved the
metric, not the filter. ``eval --decisive N`` lists them (docs/evaluation.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.evaluation.metrics import HAM, SPAM, misordered_pairs
from app.evaluation.resultfile import Scored


@dataclass(frozen=True, slots=True)
class Decisive:
    """A message, its gold label and log-odds, its misordered pairs, their share of all the
    run's misordered pairs (0-1), and the run's 1-ROCA% without this message."""

    path: str
    label: str
    log_odds: float
    pairs: float
    share: float
    roca_without_pct: float


def decisive(messages: Mapping[str, Scored], count: int) -> list[Decisive]:
    """The ``count`` messages of ``messages`` (by path) with the most misordered pairs, most
    first (ties by path), leaving out those with none; none when the run ranks every pair
    right or lacks a class."""
    spam = [(path, m) for path, m in messages.items() if m.label == SPAM]
    ham = [(path, m) for path, m in messages.items() if m.label == HAM]
    if not spam or not ham or count <= 0:
        return []
    by_spam, by_ham = misordered_pairs([m.log_odds for _, m in spam], [m.log_odds for _, m in ham])
    total = sum(by_spam)
    if total == 0:
        return []
    ranked = sorted(
        [*zip(by_spam, spam, strict=True), *zip(by_ham, ham, strict=True)],
        key=lambda entry: (-entry[0], entry[1][0]),
    )
    found = []
    for pairs, (path, message) in ranked[:count]:
        if pairs == 0:
            break
        # Without it, its pairs go and its class has one message fewer.
        n_spam = len(spam) - (message.label == SPAM)
        n_ham = len(ham) - (message.label == HAM)
        without = 100 * (total - pairs) / (n_spam * n_ham) if n_spam and n_ham else float("nan")
        found.append(Decisive(path, message.label, message.log_odds, pairs, pairs / total, without))
    return found


def table(title: str, found: list[Decisive]) -> str:
    """Text lines: the run's title, then one line per message."""
    lines = [f"decisive   {title}: the messages with the largest share of 1-ROCA%"]
    if not found:
        return lines[0] + "\n           none: every spam/ham pair is ranked right"
    lines.append(
        f"           {'label':<6}{'log-odds':>10}{'share':>8}{'1-ROCA% without':>17}  path"
    )
    for item in found:
        lines.append(
            f"           {item.label:<6}{item.log_odds:>10.1f}{100 * item.share:>7.1f}%"
            f"{item.roca_without_pct:>17.4f}  {item.path}"
        )
    return "\n".join(lines)
