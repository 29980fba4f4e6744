"""A rich progress bar on stderr, shown only when stderr is a terminal and not --quiet.

Lines printed while the bar is live (per-message errors) go through its console so the bar
is redrawn below them; without a bar they are plain ``click.echo`` lines on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class Bar:
    """One task of a progress bar, or nothing when the bar is off."""

    def __init__(self, progress: Progress | None, total: int | None, description: str) -> None:
        self._progress = progress
        self._task: TaskID | None = None
        if progress is not None:
            self._task = progress.add_task(description, total=total)

    def advance(self, steps: int = 1) -> None:
        """Move the bar on by ``steps`` (messages, rows or bytes: the bar's unit)."""
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, steps)

    def update(self, done: int, total: int, description: str) -> None:
        """Set the bar to ``done`` of ``total`` with a new description."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=done, total=total, description=description)

    def note(self, line: str) -> None:
        """Print one line on stderr above the bar."""
        if self._progress is not None:
            self._progress.console.print(
                line, markup=False, highlight=False, emoji=False, soft_wrap=True
            )
        else:
            click.echo(line, err=True)


class _RateColumn(ProgressColumn):
    """Units (messages, rows, bytes) per second over rich's recent-speed window."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self._unit = unit

    def render(self, task: Task) -> Text:
        speed = task.speed
        text = "" if speed is None else f"{speed:,.0f} {self._unit}/s"
        return Text(text, style="progress.data.speed")


def wanted(quiet: bool, stdout_busy: bool = False) -> bool:
    """Show a bar? Only on a terminal, and not when stdout shares it line by line."""
    if quiet or not sys.stderr.isatty():
        return False
    return not (stdout_busy and sys.stdout.isatty())


@contextmanager
def progress_bar(
    total: int | None, description: str, show: bool, unit: str = "msg"
) -> Iterator[Bar]:
    """A bar of ``total`` ``unit`` on stderr (None: a count without an end), or a silent
    stand-in when ``show`` is false."""
    if not show:
        yield Bar(None, total, description)
        return
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _RateColumn(unit),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        redirect_stdout=False,
        redirect_stderr=False,
        transient=True,
    )
    with progress:
        yield Bar(progress, total, description)
