"""Header fields added to raw message bytes: a pure codec, no parsing of the message.

The new fields go at the very top of the header block (after an mbox ``From `` line, if the
message has one), written with the message's own line ending and folded at 78 columns where
possible. Every original byte is kept, in order, after them: the original header fields and
everything after the blank line that ends them.
"""

from __future__ import annotations

from collections.abc import Sequence

CRLF = b"\r\n"
LF = b"\n"
_MBOX_FROM = b"From "
# RFC 5322 2.1.1: lines SHOULD be at most 78 characters (the hard limit, 998, is never
# approached: clue names are capped at 40 characters and the status shows five of them).
_WIDTH = 78


def add_headers(raw: bytes, headers: Sequence[tuple[str, str]]) -> bytes:
    """``raw`` with ``headers`` (name, value) inserted at the top of its header block."""
    start = header_start(raw)
    eol = line_ending(raw, start)
    fields = b"".join(render_field(name, value, eol) for name, value in headers)
    return raw[:start] + fields + raw[start:]


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
