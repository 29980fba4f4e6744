"""Where the command line finds messages: files, folders, Maildirs, mbox files and stdin.

A PATH argument is one of

* ``-``: one message read from standard input;
* a file: one message, or an mbox when its first line starts with ``From `` (split with
  the stdlib ``mailbox.mbox``; a file with a single ``From `` envelope line, as most saved
  messages and the SpamAssassin corpus have, is the same one message either way);
* a folder: every regular file below it, at any depth, in sorted order. A folder holding
  ``cur/``, ``new/`` and ``tmp/`` is a Maildir: its messages are the files in ``cur/`` and
  ``new/``; ``tmp/`` (deliveries in progress) and the files beside those folders (index and
  keyword files of IMAP servers) are skipped. Maildir++ subfolders (``.Sent/``...) are
  walked the same way.

Sources are listed first (so a progress bar knows the total) and read one at a time.
"""

from __future__ import annotations

import mailbox
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

STDIN = "-"
_MAILDIR_PARTS = ("cur", "new", "tmp")
_MBOX_MARK = b"From "


@dataclass(frozen=True, slots=True)
class Source:
    """One message to read: a display name (path, ``mbox#3`` or ``-``) and its reader."""

    name: str
    read: Callable[[], bytes]


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A path that could not be listed (permission denied, broken mbox...)."""

    name: str
    detail: str


Found = Source | Unreadable


def find_messages(paths: Iterable[str], stdin: BinaryIO) -> list[Found]:
    """Every message under ``paths``, in argument order, then sorted within folders."""
    found: list[Found] = []
    for arg in paths:
        if arg == STDIN:
            found.append(Source(STDIN, stdin.read))
        else:
            found.extend(_from_path(Path(arg)))
    return found


def _from_path(path: Path) -> Iterator[Found]:
    if path.is_dir():
        yield from _from_folder(path)
    else:
        yield from _from_file(path)


def is_maildir(folder: Path) -> bool:
    """True when ``folder`` has the ``cur``, ``new`` and ``tmp`` subfolders of a Maildir."""
    return all((folder / part).is_dir() for part in _MAILDIR_PARTS)


def _from_folder(folder: Path) -> Iterator[Found]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as error:
        yield Unreadable(str(folder), error.strerror or str(error))
        return
    maildir = is_maildir(folder)
    for entry in entries:
        path = Path(entry.path)
        if entry.is_dir():
            if maildir and entry.name == "tmp":
                continue
            yield from _from_folder(path)
        elif entry.is_file() and not maildir:
            yield from _from_file(path)


def _from_file(path: Path) -> Iterator[Found]:
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_MBOX_MARK))
    except OSError as error:
        yield Unreadable(str(path), error.strerror or str(error))
        return
    if head == _MBOX_MARK:
        yield from _from_mbox(path)
    else:
        yield Source(str(path), path.read_bytes)


def _from_mbox(path: Path) -> Iterator[Found]:
    """The messages of an mbox file (``name#N``, N from 1); one message keeps its plain name."""
    try:
        if _envelope_lines(path) <= 1:
            yield Source(str(path), path.read_bytes)
            return
        box = mailbox.mbox(path, create=False)
        keys = box.keys()
    except (OSError, mailbox.Error) as error:
        yield Unreadable(str(path), str(error))
        return
    for number, key in enumerate(keys, start=1):
        yield Source(f"{path}#{number}", _mbox_reader(box, key))


def _envelope_lines(path: Path) -> int:
    """How many lines start with ``From `` (mbox separators), counting at most two."""
    seen = 0
    with path.open("rb") as fh:
        for line in fh:
            if line.startswith(_MBOX_MARK):
                seen += 1
                if seen > 1:
                    break
    return seen


def _mbox_reader(box: mailbox.mbox, key: str) -> Callable[[], bytes]:
    def read() -> bytes:
        return box.get_bytes(key)

    return read
