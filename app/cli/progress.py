"""A rich progress bar on stderr, shown only when stderr is a terminal and not --quiet.

Lines printed while the bar is live (per-message errors) go through its console so the bar
is redrawn below them; without a bar they are plain ``click.echo`` lines on stderr. rich is
imported only for a bar that shows: a process that learns or classifies one message (Dovecot's
learn-on-move runs one per message moved) has no bar, and rich costs it ~30 ms.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.progress import Progress, ProgressColumn, TaskID


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


def _rate_column(unit: str) -> ProgressColumn:
    """A column of units (messages, rows, bytes) per second over rich's recent-speed window."""
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.speed
            text = "" if speed is None else f"{speed:,.0f} {unit}/s"
            return Text(text, style="progress.data.speed")

    return RateColumn()


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
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _rate_column(unit),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        redirect_stdout=False,
        redirect_stderr=False,
        transient=True,
    )
    with progress:
        yield Bar(progress, total, description)
