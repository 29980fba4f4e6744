"""Where the command line finds messages: files, folders, Maildirs, mbox files and stdin.

A PATH argument is one of

* ``-``: one message read from standard input;
* a file: one message, or an mbox when its first line starts with ``From `` (split with
  the stdlib ``mailbox.mbox``; a file with a single ``From `` envelope line, as most saved
  messages and the SpamAssassin corpus have, is the same one message either way);
* a Maildir (a folder holding ``cur/``, ``new/`` and ``tmp/``): the files in ``cur/`` and
  ``new/`` and nothing else. ``tmp/`` (deliveries in progress) and the files beside those
  folders (index and keyword files of IMAP servers) are skipped, and so are its Maildir++
  subfolders (``.Sent/``, ``.Junk/``...) unless ``recursive`` (``--recursive``) is given;
* any other folder: every regular file below it, at any depth, in sorted order (a Maildir
  met on the way is read as above).

Walking down, a folder named as junk or trash (``JUNK_NAMES``, case-insensitive: the whole
name of a plain folder, the last dot-component of a Maildir++ name, so ``.Junk`` and
``.Archive.Spam`` both are) is skipped and reported once through ``on_skip``: a user's
``learn --label ham ~/Maildir --recursive`` must not learn their Junk folder as ham. A
folder named on the command line is always read, whatever its name.

Sources are listed first (so a progress bar knows the total) and read one at a time. With
``max_bytes`` (the service's ``server.max_message_bytes``), a file or stdin larger than that
is never read into memory: its read raises MessageTooLarge, as the service would, so a
stray disk image in a folder costs nothing and fails as one line. (An mbox message is read
whole by ``mailbox``; the service rejects it after.)
"""

from __future__ import annotations

import mailbox
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import BinaryIO

from app.errors import MessageTooLarge

STDIN = "-"
_CHUNK = 1 << 16
_MAILDIR_PARTS = ("cur", "new", "tmp")
_MBOX_MARK = b"From "
# Folder names mail clients and servers give to junk and trash (Dovecot, Thunderbird,
# Outlook, Apple Mail, Roundcube defaults): their messages are not what the user keeps.
JUNK_NAMES = frozenset(
    {"junk", "spam", "trash", "deleted", "deleted items", "deleted messages", "bin"}
)

SkipSink = Callable[[str], None]


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


def find_messages(
    paths: Iterable[str],
    stdin: BinaryIO,
    max_bytes: int | None = None,
    *,
    recursive: bool = False,
    on_skip: SkipSink | None = None,
) -> list[Found]:
    """Every message under ``paths``, in argument order, then sorted within folders.

    ``recursive`` walks the Maildir++ subfolders of a Maildir too. A junk or trash folder
    met on the way (not named in ``paths``) is skipped and passed to ``on_skip`` once.
    A file or stdin over ``max_bytes`` raises MessageTooLarge when read, unread (see above).
    """
    paths = list(paths)
    named = frozenset(Path(arg).resolve() for arg in paths if arg != STDIN)
    walk = _Walk(max_bytes, recursive, on_skip, named)
    found: list[Found] = []
    for arg in paths:
        if arg == STDIN:
            found.append(Source(STDIN, partial(read_stream, stdin, max_bytes)))
        else:
            found.extend(walk.path(Path(arg)))
    return found


def is_junk_folder(name: str) -> bool:
    """True when a folder called ``name`` holds junk or trash (``JUNK_NAMES``).

    A Maildir++ name (``.Archive.Spam``) is judged by its last dot-component.
    """
    if name.startswith("."):
        name = name.rsplit(".", 1)[-1]
    return name.strip().lower() in JUNK_NAMES


def read_stream(stream: BinaryIO, max_bytes: int | None) -> bytes:
    """All of ``stream``; past ``max_bytes`` the rest is read and dropped (so the writer of a
    pipe is not cut off) and MessageTooLarge raised with the whole size."""
    if max_bytes is None:
        return stream.read()
    raw = stream.read(max_bytes + 1)
    if len(raw) <= max_bytes:
        return raw
    size = len(raw)
    while chunk := stream.read(_CHUNK):
        size += len(chunk)
    raise MessageTooLarge(_too_large(size, max_bytes))


def read_file(path: Path, max_bytes: int | None) -> bytes:
    """The bytes of ``path``; MessageTooLarge, reading nothing, when it is over ``max_bytes``."""
    with path.open("rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if max_bytes is not None and size > max_bytes:
            raise MessageTooLarge(_too_large(size, max_bytes))
        return read_stream(fh, max_bytes)  # a pipe's or a growing file's size is no guide


def _too_large(size: int, max_bytes: int) -> str:
    """The service's own wording (app.service), so every path says it the same way."""
    return f"message is {size} bytes; the limit is {max_bytes}"


def is_maildir(folder: Path) -> bool:
    """True when ``folder`` has the ``cur``, ``new`` and ``tmp`` subfolders of a Maildir."""
    return all((folder / part).is_dir() for part in _MAILDIR_PARTS)


@dataclass(slots=True)
class _Walk:
    """One listing of PATH arguments: its options and the junk folders skipped so far."""

    max_bytes: int | None
    recursive: bool
    on_skip: SkipSink | None
    named: frozenset[Path]
    skipped: set[str] = field(default_factory=set)

    def path(self, path: Path) -> Iterator[Found]:
        """The messages of one argument (never skipped, whatever its name)."""
        if path.is_dir():
            yield from self._folder(path)
        else:
            yield from _from_file(path, self.max_bytes)

    def _folder(self, folder: Path) -> Iterator[Found]:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as error:
            yield Unreadable(str(folder), error.strerror or str(error))
            return
        maildir = is_maildir(folder)
        for entry in entries:
            if entry.is_dir():
                if self._wanted(entry.name, maildir):
                    yield from self._below(Path(entry.path))
            elif entry.is_file() and not maildir:
                yield from _from_file(Path(entry.path), self.max_bytes)

    def _wanted(self, name: str, maildir: bool) -> bool:
        """Walk into subfolder ``name``? In a Maildir: ``cur``, ``new``, and with
        ``recursive`` the Maildir++ subfolders (``.Name``); elsewhere every subfolder."""
        if not maildir:
            return True
        if name in ("cur", "new"):
            return True
        return self.recursive and name.startswith(".")

    def _below(self, folder: Path) -> Iterator[Found]:
        """A subfolder met while walking: skipped (and reported) when junk or trash."""
        if is_junk_folder(folder.name):
            self._skip(folder)
            return
        yield from self._folder(folder)

    def _skip(self, folder: Path) -> None:
        """Report ``folder`` once, unless it is an argument too (it is read as one)."""
        name = str(folder)
        if name not in self.skipped and folder.resolve() not in self.named:
            self.skipped.add(name)
            if self.on_skip is not None:
                self.on_skip(name)


def _from_file(path: Path, max_bytes: int | None) -> Iterator[Found]:
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_MBOX_MARK))
    except OSError as error:
        yield Unreadable(str(path), error.strerror or str(error))
        return
    if head == _MBOX_MARK:
        yield from _from_mbox(path, max_bytes)
    else:
        yield Source(str(path), partial(read_file, path, max_bytes))


def _from_mbox(path: Path, max_bytes: int | None) -> Iterator[Found]:
    """The messages of an mbox file (``name#N``, N from 1); one message keeps its plain name."""
    try:
        if _envelope_lines(path) <= 1:
            yield Source(str(path), partial(read_file, path, max_bytes))
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
