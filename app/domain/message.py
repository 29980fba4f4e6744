"""Raw bytes to a parsed message: digest, size caps, MIME walk and charset-safe text.

Parsing uses the stdlib ``email`` package with ``policy=compat32``: it is the fastest policy
(~1,900 msg/s here, 3.7x the default policy) and it never raises on malformed mail.
"""

from __future__ import annotations

import email
import email.errors
import email.header
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from email import policy
from email.message import Message

from app.domain.html import looks_like_html

_MBOX_FROM = re.compile(rb"\AFrom [^\n]*\n")
# A header line: a field name of printable ASCII (no colon or space), then a colon.
_HEADER_LINE = re.compile(rb"\A[!-9;-~]+[ \t]*:")
_SPAM_HEADER = re.compile(rb"(?i)x-spam-(?:flag|status|level|verdict)[ \t]*:")
_FALLBACK_CHARSETS = ("utf-8", "cp1252", "latin-1")


class NotAMessage(ValueError):
    """The bytes do not start with an RFC 822 header block."""


@dataclass(frozen=True, slots=True)
class TextPart:
    """The decoded text of one MIME part and its content type (e.g. ``text/html``)."""

    content_type: str
    text: str


@dataclass(frozen=True, slots=True)
class ParsedMessage:
    """A parsed message and facts about its bytes.

    ``digest`` is the hex SHA-256 of the whole message (line endings normalised to LF, mbox
    ``From `` line removed), so the same message learned twice is recognised.
    ``truncated`` is true when only the first ``scan_limit`` bytes were parsed.
    """

    digest: str
    size: int
    truncated: bool
    message: Message


def normalise(raw: bytes) -> bytes:
    """The message bytes with LF line endings, without an mbox ``From `` line, leading blank
    lines (which would otherwise make the parser read every header as body text), or the
    X-Spam-* headers a classification adds — so a message learned after it went through
    the milter, spamd PROCESS or the pipe filter has the digest of the original."""
    body = _MBOX_FROM.sub(b"", raw.replace(b"\r\n", b"\n"), count=1).lstrip(b"\n")
    head, separator, rest = body.partition(b"\n\n")
    if b"x-spam-" not in head.lower():
        return body
    return strip_spam_headers(head) + separator + rest


def strip_spam_headers(head: bytes) -> bytes:
    """A header block without X-Spam-Flag/Status/Level/Verdict (and their folded lines)."""
    kept: list[bytes] = []
    dropping = False
    for line in head.split(b"\n"):
        if line[:1] in (b" ", b"\t"):
            if not dropping:
                kept.append(line)
            continue
        dropping = _SPAM_HEADER.match(line) is not None
        if not dropping:
            kept.append(line)
    return b"\n".join(kept)


def digest_of(raw: bytes) -> str:
    """Hex SHA-256 of the normalised message bytes."""
    return hashlib.sha256(normalise(raw)).hexdigest()


def parse(raw: bytes, scan_limit: int) -> ParsedMessage:
    """Parse ``raw``; only its first ``scan_limit`` bytes are parsed for tokens.

    Raises NotAMessage for empty input or input whose first line is not a header.
    """
    data = normalise(raw)
    if not _HEADER_LINE.match(data):
        raise NotAMessage("input does not start with an RFC 822 header")
    truncated = len(data) > scan_limit
    head = data[:scan_limit] if truncated else data
    parsed = email.message_from_bytes(head.replace(b"\x00", b""), policy=policy.compat32)
    return ParsedMessage(hashlib.sha256(data).hexdigest(), len(data), truncated, parsed)


def decode_bytes(payload: bytes, charset: str | None) -> str:
    """Decode with the declared charset, falling back to utf-8, cp1252, latin-1; never raises.

    A charset name with a NUL byte raises ValueError in the codec lookup, an unknown one
    LookupError: both fall back.
    """
    if charset:
        try:
            return payload.decode(charset.strip().strip('"'), errors="replace")
        except (LookupError, ValueError, TypeError):
            pass
    for candidate in _FALLBACK_CHARSETS:
        try:
            return payload.decode(candidate)
        except UnicodeDecodeError:
            continue
    return payload.decode("latin-1", errors="replace")  # pragma: no cover - latin-1 never fails


def part_charset(part: Message) -> str | None:
    """The part's declared charset, or None when it is missing or unreadable."""
    try:
        return part.get_content_charset()
    except (LookupError, ValueError, TypeError):
        return None


def text_parts(message: Message) -> Iterator[TextPart]:
    """Decoded text/* parts (plain, html, ...) in MIME order; other parts are skipped.

    A multipart whose boundary never appears in its body (a malformed or mis-declared message)
    is kept by the parser as one block of text: that block is read as text too, as HTML when it
    holds HTML tags, so its words are not lost.
    """
    for part in message.walk():
        if part.is_multipart():
            continue
        maintype = part.get_content_maintype()
        if maintype not in ("text", "multipart"):
            continue
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):
            continue
        text = decode_bytes(payload, part_charset(part))
        if maintype == "text":
            yield TextPart(part.get_content_type(), text)
        else:
            yield TextPart("text/html" if looks_like_html(text) else "text/plain", text)


def header_text(message: Message, name: str) -> str:
    """A header's value with RFC 2047 encoded-words decoded; "" when absent or unreadable.

    Raw 8-bit header bytes (RFC 6532 UTF-8, or a legacy charset) come back from compat32 as a
    Header of unknown-8bit bytes: they are decoded with the body fallbacks, not replaced.
    """
    value = message.get(name)
    if value is None:
        return ""
    if isinstance(value, email.header.Header):
        value = "".join(
            decode_bytes(fragment, None) if isinstance(fragment, bytes) else fragment
            for fragment, _charset in email.header.decode_header(value)
        )
    return decode_encoded_words(str(value))


def decode_encoded_words(value: str) -> str:
    """RFC 2047 ``=?charset?b|q?...?=`` words decoded; the raw text when they are broken."""
    if "=?" not in value:
        return value
    try:
        fragments = email.header.decode_header(value)
    except (email.errors.MessageError, ValueError, LookupError, TypeError, AssertionError):
        return value
    pieces = []
    for fragment, charset in fragments:
        if isinstance(fragment, bytes):
            pieces.append(decode_bytes(fragment, charset))
        else:
            pieces.append(fragment)
    return " ".join(p.strip() for p in pieces if p.strip())


def header_values(message: Message, name: str) -> list[str]:
    """Every value of a repeatable header (Received, ...) as plain strings."""
    return [str(v) for v in message.get_all(name, [])]
