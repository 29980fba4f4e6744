"""Running one command over many messages: each read, then worked on (one at a time, or
in batches: ``apply_batches``), its outcome counted, and the counts printed at the end.

A message that fails is one line on stderr (``error: PATH: code: description``), is counted
as ``failed`` and skipped, and the command goes on to the next: whether it cannot be read,
is not a message, is too large (a file over ``server.max_message_bytes`` is not even read),
or makes the service raise anything else (a RecursionError or MemoryError from a deeply
nested message, a bug). At the end the counts are printed (by classify on stderr, and only
when a message failed: its stdout is the verdicts), and the exit status is 1 when any
message failed.

An error of the run rather than of one message (``RUN_ERRORS``: the database is down,
locked or not migrated, the settings are wrong) stops the command at once, after printing
the counts so far: every message after it would fail the same way. The group maps it to an
exit status (75 for the database, 2 for configuration; see ``app.cli.context.exit_code``).
Learning and forgetting are idempotent per message, so the whole command can simply be run
again.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from app.cli.context import EXIT_PROCESSING
from app.cli.mailboxes import Found, Unreadable
from app.cli.progress import Bar, progress_bar
from app.errors import (
    ConfigurationError,
    InvalidLabel,
    InvalidUser,
    Overloaded,
    StorageConflict,
    StorageUnavailable,
    describe,
)

if TYPE_CHECKING:
    from app.service import Analysed

Work = Callable[[str, "bytes | Analysed"], str]
ErrorSink = Callable[[str, str], None]

FAILED = "failed"
# Errors of the whole run, not of the message: the next message meets the same database,
# settings and load. (StorageConflict is raised only after the service's own retries.)
RUN_ERRORS = (
    StorageUnavailable,
    StorageConflict,
    Overloaded,
    ConfigurationError,
    InvalidLabel,
    InvalidUser,
)


@dataclass(frozen=True, slots=True)
class Loaded:
    """A message found and what reading it gave: its bytes, or (read ahead, see ``ahead``)
    its analysis, or why it could not be read."""

    item: Found
    content: bytes | Analysed = b""
    problem: str | None = None


Loader = Callable[[Sequence[Found]], Generator[Loaded, None, None]]


def load(found: Iterable[Found]) -> Generator[Loaded, None, None]:
    """Each message read when its turn comes.

    Anything reading raises is caught on purpose (see ``attempt``): a message that cannot
    be read is one failure, not the end of the run."""
    for item in found:
        if isinstance(item, Unreadable):
            yield Loaded(item, problem=item.detail)
            continue
        try:
            yield Loaded(item, item.read())
        except OSError as error:
            yield Loaded(item, problem=error.strerror or describe(error))
        except Exception as error:
            yield Loaded(item, problem=describe(error))


def apply(
    loaded: Iterable[Loaded],
    bar: Bar,
    work: Work,
    counts: Counter[str],
    on_error: ErrorSink | None = None,
) -> None:
    """Run ``work(name, content)`` on every message and count the outcome it returns.

    A message that fails is noted on stderr as one line (and passed to ``on_error``),
    counted as ``failed`` and skipped. RUN_ERRORS, a closed stdout and KeyboardInterrupt
    propagate at once, the messages counted so far left in ``counts``.
    """
    for entry in loaded:
        problem = attempt(entry, work, counts)
        if problem is not None:
            _failed(entry, problem, bar, counts, on_error)
        bar.advance()


@dataclass(frozen=True, slots=True)
class Batches:
    """Work done on ``size`` messages at a time (bulk learning): ``prepare`` reads one
    message (its errors are that message's), ``run`` does the work on several, yielding
    their outcomes in order as it has done them (a few at a time, or all at once)."""

    prepare: Callable[[bytes | Analysed], Analysed]
    run: Callable[[Sequence[Analysed]], Iterable[list[str]]]
    size: int


def apply_batches(
    loaded: Iterable[Loaded],
    bar: Bar,
    batches: Batches,
    counts: Counter[str],
    on_error: ErrorSink | None = None,
) -> None:
    """``apply``, with the work done ``batches.size`` messages at a time.

    A message that cannot be read or prepared fails alone, as under ``apply``, after the
    messages before it are done (so failures are reported in the order found). When a batch
    fails with anything but RUN_ERRORS, its messages not yet done are tried again one at a
    time, so that only the one to blame fails. RUN_ERRORS stop it as under ``apply``; the
    messages of the call under way are then not counted (nor done).
    """
    pending: list[Loaded] = []
    for entry in loaded:
        prepared = _prepared(entry, batches)
        if prepared.problem is not None or len(pending) >= batches.size:
            _run_batch(pending, bar, batches, counts, on_error)
            pending.clear()
        if prepared.problem is not None:
            _failed(prepared, prepared.problem, bar, counts, on_error)
            bar.advance()
        else:
            pending.append(prepared)
    _run_batch(pending, bar, batches, counts, on_error)


def _prepared(entry: Loaded, batches: Batches) -> Loaded:
    """``entry`` with its content prepared, or with the problem preparing it met."""
    if entry.problem is not None:
        return entry
    try:
        return Loaded(entry.item, batches.prepare(entry.content))
    except (*RUN_ERRORS, BrokenPipeError):
        raise
    except Exception as error:
        return Loaded(entry.item, problem=describe(error))


def _run_batch(
    pending: Sequence[Loaded],
    bar: Bar,
    batches: Batches,
    counts: Counter[str],
    on_error: ErrorSink | None,
) -> None:
    """Run one batch of prepared messages, counting outcomes as ``run`` yields them. On a
    failure, what it had not done is tried one message at a time."""
    done = 0
    try:
        for outcomes in batches.run([_read(entry.content) for entry in pending]):
            for outcome in outcomes:
                counts[outcome] += 1
                bar.advance()
            done += len(outcomes)
    except (*RUN_ERRORS, BrokenPipeError):
        raise
    except Exception:
        apply(pending[done:], bar, functools.partial(_one, batches), counts, on_error)


def _one(batches: Batches, _name: str, content: bytes | Analysed) -> str:
    """``batches.run`` on one message: its outcome."""
    ((outcome,),) = batches.run([_read(content)])
    return outcome


def _read(content: bytes | Analysed) -> Analysed:
    assert not isinstance(content, bytes), "a batch holds prepared messages"
    return content


def _failed(
    entry: Loaded, problem: str, bar: Bar, counts: Counter[str], on_error: ErrorSink | None
) -> None:
    """Count and report a message that failed."""
    counts[FAILED] += 1
    bar.note(f"error: {entry.item.name}: {problem}")
    if on_error is not None:
        on_error(entry.item.name, problem)


def attempt(entry: Loaded, work: Work, counts: Counter[str]) -> str | None:
    """Run ``work`` on one message read; None when it ran, else what went wrong.

    Anything the message makes the code raise is caught on purpose, RecursionError and
    MemoryError included: by the time they arrive here the stack and memory that raised them
    are released, and one hostile message must not cost the rest of a folder.
    """
    if entry.problem is not None:
        return entry.problem
    try:
        counts[work(entry.item.name, entry.content)] += 1
    except (*RUN_ERRORS, BrokenPipeError):
        raise
    except Exception as error:
        return describe(error)
    return None


def summary(
    counts: Counter[str], names: Sequence[str], seconds: float, total: int | None = None
) -> str:
    """``learned 3, unchanged 1, failed 0: 4 messages in 0.2 s (1,200 msg/min)``; when the
    run stopped early, ``...: 4 of 10 messages in 0.2 s (...), stopped``."""
    parts = [f"{name} {counts[name]}" for name in (*names, FAILED)]
    done = sum(counts.values())
    rate = f" ({60 * done / seconds:,.0f} msg/min)" if seconds > 0 and done else ""
    if total is None:
        return f"{', '.join(parts)}: {done} messages in {seconds:.1f} s{rate}"
    return f"{', '.join(parts)}: {done} of {total} messages in {seconds:.1f} s{rate}, stopped"


@dataclass(frozen=True, slots=True)
class Task:
    """One bulk command: its progress-bar text, the outcomes it counts, where they go."""

    description: str
    names: tuple[str, ...]
    show_bar: bool
    to_stderr: bool = False
    only_failures: bool = False  # print the counts only when a message failed or it stopped
    # outcome -> what it means, printed as ``OUTCOME N: MEANING`` below the counts when N > 0
    meanings: tuple[tuple[str, str], ...] = ()

    def report(self, line: str, counts: Counter[str], failed: bool) -> None:
        """Print the counts line and the meaning of each outcome that occurred (see
        ``meanings``), unless ``only_failures`` and nothing failed."""
        if failed or not self.only_failures:
            click.echo(line, err=self.to_stderr)
            for name, meaning in self.meanings:
                if counts[name]:
                    click.echo(f"{name} {counts[name]}: {meaning}", err=self.to_stderr)


def run_task(
    task: Task,
    found: Sequence[Found],
    work: Work | Batches,
    on_error: ErrorSink | None = None,
    loader: Loader = load,
) -> None:
    """``apply`` (or ``apply_batches``) under a progress bar, then the counts; exit 1 when
    a message failed.

    When one of RUN_ERRORS stops the run, the counts so far are printed and it propagates.
    """
    counts: Counter[str] = Counter()
    started = time.perf_counter()
    # Closed here when the run stops early: a loader reading ahead in other processes ends
    # them now, not at interpreter exit, where that printed a traceback.
    entries = loader(found)
    try:
        with progress_bar(len(found), task.description, task.show_bar) as bar, closing(entries):
            if isinstance(work, Batches):
                apply_batches(entries, bar, work, counts, on_error)
            else:
                apply(entries, bar, work, counts, on_error)
    except RUN_ERRORS:
        seconds = time.perf_counter() - started
        task.report(summary(counts, task.names, seconds, len(found)), counts, failed=True)
        raise
    seconds = time.perf_counter() - started
    task.report(summary(counts, task.names, seconds), counts, failed=counts[FAILED] > 0)
    if counts[FAILED]:
        raise click.exceptions.Exit(EXIT_PROCESSING)
