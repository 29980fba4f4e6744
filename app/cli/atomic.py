"""A file a command writes whole or not at all (``export -o``).

click's atomic files replace the target even when the block raised, so a failed export
overwrote the last good one with a partial file; they also replace a FIFO or a device with
a regular file. ``written`` writes a new file beside the target (beside a symbolic link's
destination, which it then replaces, keeping the link), puts it in place only once the block
has finished, and removes it when the block raised or the process was asked to stop
(SIGTERM, as from systemd or ``timeout``). An existing file's permissions are kept; a new
file is readable by its owner only. A target that exists but is not a regular file (a FIFO,
``/dev/stdout``) is written directly: there is nothing to replace.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import IO

import click


@contextmanager
def written(output: str) -> Iterator[IO[str]]:
    """UTF-8 text to ``output`` (``-``: standard output), in place only once complete."""
    if output == "-":
        with click.open_file(output, "w", encoding="utf-8") as stdout:
            yield stdout
        return
    target = Path(os.path.realpath(output))
    if target.is_dir():
        raise click.FileError(output, hint="it is a directory")
    if target.exists() and not target.is_file():
        with _opened(output) as direct:
            yield direct
        return
    try:
        descriptor, name = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
        )
    except OSError as error:
        raise click.FileError(output, hint=error.strerror or str(error)) from None
    try:
        with _stopping_as_exit(), os.fdopen(descriptor, "w", encoding="utf-8") as out:
            yield out
        with contextlib.suppress(FileNotFoundError):
            os.chmod(name, stat.S_IMODE(target.stat().st_mode))
        try:
            os.replace(name, target)
        except OSError as error:
            raise click.FileError(output, hint=error.strerror or str(error)) from None
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
        raise


@contextmanager
def _opened(output: str) -> Iterator[IO[str]]:
    try:
        stream = open(output, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as error:
        raise click.FileError(output, hint=error.strerror or str(error)) from None
    with stream:
        yield stream


@contextmanager
def _stopping_as_exit() -> Iterator[None]:
    """SIGTERM raises SystemExit(143) meanwhile (main thread only), so the ``finally``
    clauses run and the temporary file goes, instead of the process ending where it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
