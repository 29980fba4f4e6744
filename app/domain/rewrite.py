"""Header fields added to and removed from raw message bytes: a pure codec, no parsing.

The new fields go at the very top of the header block (after an mbox ``From `` line, if the
message has one), written with the message's own line ending and folded at 78 columns where
possible. Every original byte is kept, in order, after them: the original header fields and
everything after the blank line that ends them.

``drop_spam_headers`` takes out the X-Spam-* fields a message arrives with, so that a
sender's forged ``X-Spam-Flag: NO`` never reaches a Sieve or procmail rule beside ours or in
their place; spamd PROCESS/HEADERS and the pipe filter (on success and on error) both use it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

CRLF = b"\r\n"
LF = b"\n"
_MBOX_FROM = b"From "
_OWN_PREFIX = b"x-spam-"
_BLANK_LINE = re.compile(rb"\r?\n\r?\n")
_LEADING_BLANKS = re.compile(rb"(?:\r?\n)*")
_LINES = re.compile(rb"[^\n]*\n|[^\n]+")
# RFC 5322 2.1.1: lines SHOULD be at most 78 characters (the hard limit, 998, is never
# approached: clue names are capped at 40 characters and the status shows five of them).
_WIDTH = 78


def add_headers(raw: bytes, headers: Sequence[tuple[str, str]]) -> bytes:
    """``raw`` with ``headers`` (name, value) inserted at the top of its header block."""
    start = header_start(raw)
    eol = line_ending(raw, start)
    fields = b"".join(render_field(name, value, eol) for name, value in headers)
    return raw[:start] + fields + raw[start:]


def header_block(message: bytes) -> bytes:
    """The header block up to and including the blank line (all of it when there is none)."""
    match = _BLANK_LINE.search(message)
    return message[: match.end()] if match else message


def drop_spam_headers(message: bytes) -> bytes:
    """``message`` without the X-Spam-* fields of its header block (folded lines included).

    SpamAssassin drops them too before it adds its own. Every other byte is kept, in order:
    an mbox ``From `` line, the other fields, the blank line and the body (where an
    ``X-Spam-`` line is text, not a field). ``message`` itself is returned when it has none.

    Blank lines before the first field are skipped, as this project's parser and other
    lenient readers skip them. For the same reason a header block of nothing but X-Spam
    fields does not end the search: once they are gone the output starts with a blank line,
    and such a reader takes the next paragraph for the header block, so its X-Spam lines go
    too. One pass over the header lines; the body is copied once.
    """
    start = header_start(message)
    if _OWN_PREFIX not in message[start : _first_block_end(message, start)].lower():
        return message
    kept: list[bytes] = []
    dropping = False
    fields_kept = False  # a line other than a blank one or an X-Spam field is kept
    end = len(message)
    for match in _LINES.finditer(message, start):
        line = match.group()
        if line in (LF, CRLF):
            kept.append(line)
            dropping = False
            if fields_kept:
                end = match.end()
                break
            continue
        if line[:1] not in (b" ", b"\t"):  # a new field, not a fold
            dropping = line[: len(_OWN_PREFIX)].lower() == _OWN_PREFIX
        if not dropping:
            kept.append(line)
            fields_kept = True
    return message[:start] + b"".join(kept) + message[end:]


def _first_block_end(message: bytes, start: int) -> int:
    """The end of the first header block after ``start``, leading blank lines skipped."""
    skipped = _LEADING_BLANKS.match(message, start)
    match = _BLANK_LINE.search(message, skipped.end() if skipped else start)
    return match.end() if match else len(message)


def header_start(raw: bytes) -> int:
    """Where the header block starts: 0, or just after an mbox ``From `` envelope line."""
    if not raw.startswith(_MBOX_FROM):
        return 0
    end = raw.find(LF)
    return len(raw) if end < 0 else end + 1


def line_ending(raw: bytes, start: int = 0) -> bytes:
    """CRLF or LF: the ending of the first header line (of the ``From`` line, of LF if none)."""
    end = raw.find(LF, start)
    if end < 0:
        end = raw.find(LF)
    if end > 0 and raw[end - 1 : end] == b"\r":
        return CRLF
    return LF


def render_field(name: str, value: str, eol: bytes = CRLF) -> bytes:
    """One header field, folded before a word that would pass column 78, ending in ``eol``.

    A word longer than a line (the ``tests=`` list of X-Spam-Status) is broken after its
    commas, as SpamAssassin folds it. Values are written as UTF-8 (ours are ASCII).
    """
    lines = fold(f"{name}:", value.split())
    return eol.join(line.encode("utf-8") for line in lines) + eol


def fold(first: str, words: Sequence[str], width: int = _WIDTH) -> list[str]:
    """``first`` then ``words`` joined by spaces; a continuation line starts with a tab."""
    lines: list[str] = []
    line = first
    for glue, piece in _pieces(words, width):
        if len(line) + len(glue) + len(piece) <= width or line == first:
            line = f"{line}{glue}{piece}"
        else:
            lines.append(line)
            line = f"\t{piece}"
    lines.append(line)
    return lines


def _pieces(words: Sequence[str], width: int) -> list[tuple[str, str]]:
    """(separator, text) pairs: each word after a space; a long word's parts after commas."""
    pieces: list[tuple[str, str]] = []
    for word in words:
        if len(word) < width or "," not in word:
            pieces.append((" ", word))
            continue
        parts = word.split(",")
        glue = " "
        for part in parts[:-1]:
            pieces.append((glue, f"{part},"))
            glue = ""
        if parts[-1]:
            pieces.append(("", parts[-1]))
    return pieces
