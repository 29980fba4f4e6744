"""Messages built the way an attacker builds them, at any size: the shapes that once crashed,
froze or exhausted the filter, and a few more of the same families.

``spamfilter bench hostile`` times each shape at growing sizes; the test suites of every
adapter send the same shapes through the real clients. Each builder takes a target size in
bytes and returns a whole RFC 822 message of about that size (never much less), with forged
``X-Spam-*`` headers so that a front end that lets a message pass unjudged is seen to do so.
"""

from __future__ import annotations

import base64
import random
from collections.abc import Callable
from dataclasses import dataclass

FORGED = b"X-Spam-Flag: NO\r\nX-Spam-Status: No, score=-100.0 required=5.0\r\n"
_HEAD = b"To: victim@example.org\r\nSubject: hello\r\nMessage-ID: <x@example.net>\r\n" + FORGED


@dataclass(frozen=True, slots=True)
class Shape:
    """One attack shape: a name, what it does, and its builder (target bytes -> message)."""

    name: str
    what: str
    build: Callable[[int], bytes]


def _repeat(unit: bytes, size: int) -> bytes:
    return unit * max(1, size // max(1, len(unit)))


def nested_comments(size: int) -> bytes:
    """A From: header whose display part is ``(((...)))``: nested address comments."""
    depth = max(1, size // 2)
    return (
        b"From: "
        + b"(" * depth
        + b"x"
        + b")" * depth
        + b" <a@example.com>\r\n"
        + _HEAD
        + b"\r\nhi\r\n"
    )


def unclosed_comments(size: int) -> bytes:
    """A From: header of ``(`` only: comments that never close."""
    return b"From: " + _repeat(b"(", size) + b"\r\n" + _HEAD + b"\r\nhi\r\n"


def nested_multipart(size: int) -> bytes:
    """multipart/mixed inside multipart/mixed ..., each level its own boundary."""
    depth = _count(size, lambda n: len(_opening(n) + _closing(n)))
    opening = b"".join(_opening(i) for i in range(depth))
    closing = b"".join(_closing(i) for i in reversed(range(depth + 1)))
    inner = b"--b%d\r\nContent-Type: text/plain\r\n\r\nfree money\r\n" % depth
    return (
        b"From: a@example.com\r\n"
        + _HEAD
        + b'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b0"\r\n\r\n'
        + opening
        + inner
        + closing
    )


def _opening(level: int) -> bytes:
    return b'--b%d\r\nContent-Type: multipart/mixed; boundary="b%d"\r\n\r\n' % (level, level + 1)


def _closing(level: int) -> bytes:
    return b"--b%d--\r\n" % level


def _count(size: int, unit: Callable[[int], int]) -> int:
    """How many numbered units fill ``size`` bytes when unit ``n`` is ``unit(n)`` bytes long
    (the numbers' digits grow the units): sized at the largest number, so never over."""
    count = max(1, size // unit(1))
    for _ in range(3):
        count = max(1, size // unit(count))
    return count


def nested_rfc822(size: int) -> bytes:
    """message/rfc822 attached inside message/rfc822 ...: forwarded as attachment, deeply."""
    level = b"Content-Type: message/rfc822\r\n\r\nSubject: fwd\r\n"
    head = level * max(1, size // len(level))
    return b"From: a@example.com\r\n" + _HEAD + head + b"\r\nfree money\r\n"


def long_received(size: int) -> bytes:
    """One Received header made of one long run of host-name characters."""
    return (
        b"Received: from "
        + _repeat(b"a", size)
        + b" by mx.example.org;\r\n Mon, 1 Jan 2024 00:00:00 +0000\r\n"
        + b"From: a@example.com\r\n"
        + _HEAD
        + b"\r\nhi\r\n"
    )


def dotted_received(size: int) -> bytes:
    """One Received header of ``a.a.a.a...`` and ``1.1.1.1.1...`` runs."""
    run = _repeat(b"a.", size // 2) + b" " + _repeat(b"1.", size // 2)
    return b"Received: from " + run + b"\r\nFrom: a@example.com\r\n" + _HEAD + b"\r\nhi\r\n"


def many_headers(size: int) -> bytes:
    """Thousands of short header fields."""
    count = _count(size, lambda n: len(b"X-H%d: v\r\n" % n))
    fields = b"".join(b"X-H%d: v\r\n" % i for i in range(count))
    return fields + b"From: a@example.com\r\n" + _HEAD + b"\r\nhi\r\n"


def long_line(size: int) -> bytes:
    """A body of one line without a space: one huge word."""
    return b"From: a@example.com\r\n" + _HEAD + b"\r\n" + _repeat(b"x", size) + b"\r\n"


def word_soup(size: int) -> bytes:
    """A body of apostrophes, dots and dashes between word characters."""
    return b"From: a@example.com\r\n" + _HEAD + b"\r\n" + _repeat(b"a'.-", size) + b"\r\n"


def nested_div(size: int) -> bytes:
    """An HTML part of ``<div>`` nested 100,000 deep (at 500 KB)."""
    body = _repeat(b"<div>", size) + b"free money"
    return _html(body)


def unclosed_font(size: int) -> bytes:
    """An HTML part of ``<font>`` tags that never close."""
    return _html(_repeat(b"<font color=red>", size) + b"free money")


def nested_table(size: int) -> bytes:
    """Links around tables around links: the shape that made unwrapping quadratic."""
    return _html(_repeat(b"<a><table><tr><td>", size) + b"free money")


def many_parts(size: int) -> bytes:
    """A flat multipart with thousands of tiny parts."""
    part = b"--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n"
    return (
        b"From: a@example.com\r\n"
        + _HEAD
        + b'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n'
        + _repeat(part, size)
        + b"--b--\r\n"
    )


def encoded_words(size: int) -> bytes:
    """A Subject of RFC 2047 encoded-words, some never closed."""
    subject = _repeat(b"=?utf-8?q?free=20money?= =?utf-8?b?", size)
    return b"From: a@example.com\r\nSubject: " + subject + b"\r\n" + _HEAD + b"\r\nhi\r\n"


def base64_junk(size: int) -> bytes:
    """A text part declared base64 whose body is random bytes, itself base64-encoded."""
    noise = random.Random(size).randbytes(max(1, size * 3 // 4))
    encoded = base64.encodebytes(noise)
    return (
        b"From: a@example.com\r\n"
        + _HEAD
        + b"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n"
        + b"Content-Transfer-Encoding: base64\r\n\r\n"
        + encoded
    )


def binary_junk(size: int) -> bytes:
    """A header line, then random bytes (NULs, bare CRs, 8-bit) to the end."""
    noise = random.Random(size).randbytes(max(1, size))
    return b"From: a@example.com\r\n" + _HEAD + b"\r\n" + noise


def _html(body: bytes) -> bytes:
    return (
        b"From: a@example.com\r\n"
        + _HEAD
        + b"MIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
        + body
        + b"\r\n"
    )


SHAPES: tuple[Shape, ...] = (
    Shape("nested-comments", "From: with nested ( ) address comments", nested_comments),
    Shape("unclosed-comments", "From: with ( that never close", unclosed_comments),
    Shape("nested-multipart", "multipart nested in multipart", nested_multipart),
    Shape("nested-rfc822", "message/rfc822 nested in message/rfc822", nested_rfc822),
    Shape("long-received", "one Received header of one long host-name run", long_received),
    Shape("dotted-received", "one Received header of a.a.a... and 1.1.1...", dotted_received),
    Shape("many-headers", "thousands of header fields", many_headers),
    Shape("long-line", "a body of one huge word", long_line),
    Shape("word-soup", "a body of a'.-a'.- runs", word_soup),
    Shape("nested-div", "HTML <div> nested deep", nested_div),
    Shape("unclosed-font", "HTML <font> never closed", unclosed_font),
    Shape("nested-table", "HTML <a><table><tr><td> repeated", nested_table),
    Shape("many-parts", "a multipart of thousands of tiny parts", many_parts),
    Shape("encoded-words", "a Subject of RFC 2047 words, some unclosed", encoded_words),
    Shape("base64-junk", "a base64 text part of random bytes", base64_junk),
    Shape("binary-junk", "random bytes after one header", binary_junk),
)


def shape(name: str) -> Shape:
    """The shape called ``name``; raises KeyError."""
    for candidate in SHAPES:
        if candidate.name == name:
            return candidate
    raise KeyError(name)
