"""learn, classify and forget: one service call per message found under the PATH arguments.

A message that cannot be read or parsed is reported on stderr and counted, and the command
goes on; the exit status is 1 when any message failed. Errors of the database itself
(StorageUnavailable...) stop the command (see ``app.cli.context.exit_code``).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

import click

from app.cli.context import EXIT_PROCESSING, CliState, build, pass_state
from app.cli.mailboxes import Found, Unreadable, find_messages
from app.cli.progress import Bar, progress_bar, wanted
from app.domain.labels import LABELS
from app.errors import InvalidMessage, MessageTooLarge, describe

if TYPE_CHECKING:
    from app.service import Classification

Work = Callable[[str, bytes], None]
ErrorSink = Callable[[str, str], None]

_paths = click.argument(
    "paths", nargs=-1, required=True, type=click.Path(exists=True, allow_dash=True)
)
_quiet = click.option("--quiet", "-q", is_flag=True, help="Do not show a progress bar.")


def apply(found: Sequence[Found], bar: Bar, work: Work, on_error: ErrorSink) -> int:
    """Run ``work(name, raw)`` on every message; per-message failures are reported, counted."""
    errors = 0
    for item in found:
        problem: str | None = None
        if isinstance(item, Unreadable):
            problem = item.detail
        else:
            try:
                raw = item.read()
            except OSError as error:
                problem = error.strerror or str(error)
            else:
                try:
                    work(item.name, raw)
                except (InvalidMessage, MessageTooLarge) as error:
                    problem = describe(error)
        if problem is not None:
            errors += 1
            on_error(item.name, problem)
        bar.advance()
    return errors


def summary(counts: Counter[str], names: Sequence[str], errors: int, seconds: float) -> str:
    """``learned 3, unchanged 1, errors 0: 4 messages in 0.2 s (1,200 msg/min)``."""
    parts = [f"{name} {counts[name]}" for name in names] + [f"errors {errors}"]
    total = sum(counts.values()) + errors
    rate = f" ({60 * total / seconds:,.0f} msg/min)" if seconds > 0 and total else ""
    return f"{', '.join(parts)}: {total} messages in {seconds:.1f} s{rate}"


def _stdin() -> BinaryIO:
    return sys.stdin.buffer


@click.command()
@click.option(
    "--label",
    "-l",
    required=True,
    type=click.Choice(LABELS, case_sensitive=False),
    help="The gold label of every message given.",
)
@_quiet
@_paths
@pass_state
def learn(state: CliState, label: str, quiet: bool, paths: tuple[str, ...]) -> None:
    """Learn messages as spam or ham (PATH: file, folder, Maildir, mbox, or - for stdin).

    A message learned before is unchanged; learned before with the other label, its counts
    move to the new one (relabelled).
    """
    found = find_messages(paths, _stdin())
    service = build(state.settings)
    counts: Counter[str] = Counter()

    def work(_name: str, raw: bytes) -> None:
        counts[service.learn(raw, label).outcome.value] += 1

    started = time.perf_counter()
    with progress_bar(len(found), f"learn {label.lower()}", wanted(quiet)) as bar:
        errors = apply(found, bar, work, _note(bar))
    names = ("learned", "relabelled", "unchanged", "skipped")
    click.echo(summary(counts, names, errors, time.perf_counter() - started))
    if errors:
        raise click.exceptions.Exit(EXIT_PROCESSING)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line, with clues.")
@_quiet
@_paths
@pass_state
def classify(state: CliState, as_json: bool, quiet: bool, paths: tuple[str, ...]) -> None:
    """Print a verdict per message: verdict, log-odds (nats), P(spam), path."""
    found = find_messages(paths, _stdin())
    service = build(state.settings)

    def work(name: str, raw: bytes) -> None:
        result = service.classify(raw)
        if as_json:
            click.echo(json.dumps(classification_json(name, result)))
        else:
            click.echo(classification_line(name, result))

    def on_error(name: str, problem: str) -> None:
        if as_json:
            click.echo(json.dumps({"path": name, "error": problem}))
        bar.note(f"error: {name}: {problem}")

    with progress_bar(len(found), "classify", wanted(quiet, stdout_busy=True)) as bar:
        errors = apply(found, bar, work, on_error)
    if errors:
        raise click.exceptions.Exit(EXIT_PROCESSING)


@click.command()
@_quiet
@_paths
@pass_state
def forget(state: CliState, quiet: bool, paths: tuple[str, ...]) -> None:
    """Remove learned messages from the model (their counts are restored exactly)."""
    found = find_messages(paths, _stdin())
    service = build(state.settings)
    counts: Counter[str] = Counter()

    def work(_name: str, raw: bytes) -> None:
        counts[service.forget(raw).outcome.value] += 1

    started = time.perf_counter()
    with progress_bar(len(found), "forget", wanted(quiet)) as bar:
        errors = apply(found, bar, work, _note(bar))
    click.echo(summary(counts, ("forgotten", "unknown"), errors, time.perf_counter() - started))
    if errors:
        raise click.exceptions.Exit(EXIT_PROCESSING)


def classification_line(name: str, result: Classification) -> str:
    """``spam    +12.345 0.999994  path`` (log-odds in nats)."""
    return (
        f"{result.verdict.value:<6} {result.log_odds:+10.3f} {result.spam_probability:.6f}  {name}"
    )


def classification_json(name: str, result: Classification) -> dict[str, Any]:
    """The JSON-lines form of one classification (log values in nats)."""
    return {
        "path": name,
        "verdict": result.verdict.value,
        "reason": None if result.reason is None else result.reason.value,
        "log_odds": result.log_odds,
        "spam_probability": result.spam_probability,
        "log_posteriors": result.log_posteriors,
        "digest": result.digest,
        "tokens": result.tokens,
        "truncated": result.truncated,
        "clues": [{"token": clue.token, "weight": clue.weight} for clue in result.clues],
    }


def _note(bar: Bar) -> ErrorSink:
    def on_error(name: str, problem: str) -> None:
        bar.note(f"error: {name}: {problem}")

    return on_error
