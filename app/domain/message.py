"""Raw bytes to a parsed message: digest, size caps, MIME walk and charset-safe text.

Header fields are read by the stdlib ``email`` package with ``policy=compat32``: it is the
fastest policy (~1,900 msg/s here, 3.7x the default policy) and it never raises on malformed
mail. The MIME tree is walked here, not by the stdlib parser, which recurses once per nesting
level (a thousand nested parts raised RecursionError) and checks every line against every
open boundary (time with the square of the depth): see ``mime_parts``.
"""

from __future__ import annotations

import email
import email.errors
import email.header
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from email import policy
from email.message import Message
from email.parser import Parser
from typing import Any, Literal, NamedTuple

from app.domain.html import looks_like_html

_MBOX_FROM = re.compile(rb"\AFrom [^\n]*\n")
# A header line: a field name of printable ASCII (no colon or space), then a colon.
_FIELD_NAME = re.compile(rb"[!-9;-~]+[ \t]*:")
# Every X-Spam-* field of a header block, with its folded lines and line end: ours, another
# filter's, or a sender's forgery. The milter, spamd and the pipe filter remove them all, so
# the digest ignores them all. Linear: no run of the pattern can be matched in two ways.
_SPAM_FIELDS = re.compile(rb"(?im)^x-spam-[!-9;-~]*[ \t]*:[^\n]*(?:\n[ \t][^\n]*)*\n")
# The fields this filter adds. The digest once ignored only these, and messages learned then
# are still found by the digest of that older reading (``ParsedMessage.legacy_digest``).
_OUR_SPAM_FIELDS = re.compile(
    rb"(?im)^x-spam-(?:flag|status|level|verdict)[ \t]*:[^\n]*(?:\n[ \t][^\n]*)*\n"
)
# C0 controls but tab, LF, VT, FF and CR; and DEL.
_CONTROL_BYTES = bytes([*range(0, 9), *range(14, 32), 127])
_FALLBACK_CHARSETS = ("utf-8", "cp1252", "latin-1")


class _Index(NamedTuple):
    """The header fields of a ``_Fields`` by lower-cased name, for the field list ``fields``
    of ``size`` fields, with the parameters read from them (lower-cased field name ->
    ``_get_params_preserve``'s pairs, or ``_NO_FIELD``)."""

    fields: list[tuple[str, Any]]
    size: int
    by_name: dict[str, list[tuple[str, Any]]]
    params: dict[str, tuple[tuple[str, Any], ...] | object]


_NO_FIELD = object()


class _Fields(Message):
    """A compat32 message that also gives its body back exactly as parsed: ``get_payload()``
    decodes 8-bit bytes with the declared charset, or with ASCII and U+FFFD for each.

    Its fields are looked up by name in an index, and each field's parameters are parsed once.
    why: ``Message.get`` lower-cases every field name on every lookup and ``get_param``
    parses the whole Content-Type again on every call; a message is asked ~20 times for a
    field and ~3 times for a parameter while it is read (docs/benchmarks.md, "Measurements
    behind the design"). Answers and their types are ``Message``'s own: the index holds the
    raw (name, value) pairs, which the policy turns into values on each lookup as before.
    The index is built on the first lookup and again whenever the field list is no longer
    the one it was built on, or has another length (fields added, deleted, or the list
    replaced, as ``set_boundary`` does); ``replace_header``, which changes a field in place,
    drops it.
    """

    _payload: Any
    _headers: list[tuple[str, Any]]
    _index: _Index | None = None

    def raw_body(self) -> str:
        """The body as the parser kept it (bytes past ASCII as surrogate escapes)."""
        body = self._payload
        return body if isinstance(body, str) else ""

    def _indexed(self) -> _Index:
        fields = self._headers
        index = self._index
        if index is None or index.fields is not fields or index.size != len(fields):
            by_name: dict[str, list[tuple[str, Any]]] = {}
            for field in fields:
                name = field[0].lower()
                same = by_name.get(name)
                if same is None:
                    by_name[name] = [field]
                else:
                    same.append(field)
            index = self._index = _Index(fields, len(fields), by_name, {})
        return index

    def get(self, name: str, failobj: Any = None) -> Any:
        """``Message.get``: the first field ``name`` (any case), or ``failobj``."""
        same = self._indexed().by_name.get(name.lower())
        if same is None:
            return failobj
        field, value = same[0]
        # Typed as what compat32 returns, a str or a Header (see ``field_value``).
        fetch: Callable[[str, Any], object] = self.policy.header_fetch_parse
        return fetch(field, value)

    def get_all(self, name: str, failobj: Any = None) -> Any:
        """``Message.get_all``: every field ``name`` (any case), in order, or ``failobj``."""
        same = self._indexed().by_name.get(name.lower())
        if same is None:
            return failobj
        fetch: Callable[[str, Any], object] = self.policy.header_fetch_parse
        return [fetch(field, value) for field, value in same]

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._indexed().by_name

    def replace_header(self, _name: str, _value: Any) -> None:
        """``Message.replace_header``, which changes a field in place: the index is dropped."""
        self._index = None
        super().replace_header(_name, _value)

    def _get_params_preserve(self, failobj: Any, header: str) -> Any:
        """``Message._get_params_preserve`` (a field's parameters, quoting kept), parsed once
        per field name; a new list each call, as before."""
        params = self._indexed().params
        key = header.lower()
        found = params.get(key)
        if found is None:
            found = super()._get_params_preserve(_NO_FIELD, header)  # type: ignore[misc]
            params[key] = found = found if found is _NO_FIELD else tuple(found)
        return failobj if found is _NO_FIELD else list(found)  # type: ignore[call-overload]


_PARSER = Parser(_Fields, policy=policy.compat32)
# A line end as the parser counts them, and two in a row: the end of a header block. Atomic,
# so the CR of a CRLF never counts as a line end of its own.
_LINE_END = re.compile(r"\r\n|\r|\n")
_BLANK_LINE = re.compile(r"(?>\r\n|\r|\n)(?>\r\n|\r|\n)")

# A part's place in the tree: a container whose sub-parts follow it (multipart/*,
# message/rfc822), a leaf, or a container past the depth limit, read as one block of text.
PartKind = Literal["container", "leaf", "opaque"]


class NotAMessage(ValueError):
    """The bytes do not start with an RFC 822 header block."""


@dataclass(frozen=True, slots=True)
class MimeLimits:
    """How deep and how wide a MIME tree is read as parts.

    ``max_depth``: nested multipart / message/rfc822 levels read as parts; a container below
    that is read as opaque text. ``max_parts``: parts read per message; the rest is not read.
    """

    max_depth: int = 20
    max_parts: int = 500


@dataclass(frozen=True, slots=True)
class Part:
    """One MIME part: its header fields (a compat32 Message whose payload is the part's body,
    still transfer-encoded and never parsed as MIME) and its kind."""

    fields: Message
    kind: PartKind


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
    ``message`` holds the top-level header fields, ``parts`` every part in MIME order (the
    message itself first), ``limits`` the names of the parsing limits that were hit.
    ``legacy_digest`` is the digest an older version gave the same bytes, when it differs:
    it removed only this filter's own X-Spam-Flag/Status/Level/Verdict fields.
    """

    digest: str
    size: int
    truncated: bool
    message: Message
    parts: tuple[Part, ...] = ()
    limits: frozenset[str] = frozenset()
    legacy_digest: str | None = None


def normalise(raw: bytes) -> bytes:
    """The message bytes with LF line endings, without an mbox ``From `` line, leading blank
    lines (which would otherwise make the parser read every header as body text), or any
    X-Spam-* header field (ours, or forged ones the adapters remove) — so a message learned
    after it went through the milter, spamd PROCESS or the pipe filter has the digest of the
    original."""
    return _read(raw, len(raw)).start


@dataclass(frozen=True, slots=True)
class _Reading:
    """What ``_read`` makes of raw bytes: the digest and size of the normalised message, its
    first bytes, whether it starts with a header field, and (when asked for) the digest of
    the older reading where it differs."""

    digest: str
    size: int
    start: bytes
    has_header: bool
    legacy_digest: str | None = None


def _read(raw: bytes, scan_limit: int, legacy: bool = False) -> _Reading:
    """Normalise ``raw`` (see ``normalise``) without copying its body: the digest is fed the
    new header block and then a view of the body, and only the first ``scan_limit`` bytes are
    joined, so a 25 MiB message costs about one copy of itself (for its line endings).

    X-Spam fields are removed by one pattern run in C (two million of them took 5 s line by
    line in Python), and only where a cheap search finds the text ``x-spam-`` at all.
    """
    body = _MBOX_FROM.sub(b"", raw.replace(b"\r\n", b"\n"), count=1).lstrip(b"\n")
    end = body.find(b"\n\n")
    head_end = len(body) if end < 0 else end
    view = memoryview(body)
    rest = view[head_end:]
    if not _mentions_spam_fields(body, head_end):
        return _digested(view[:head_end], rest, scan_limit)
    head = _without(_SPAM_FIELDS, body, head_end)
    reading = _digested(head, rest, scan_limit)
    if not legacy:
        return reading
    older = _without(_OUR_SPAM_FIELDS, body, head_end)
    if older == head:
        return reading
    return _Reading(
        reading.digest, reading.size, reading.start, reading.has_header, _digest(older, rest)
    )


def _mentions_spam_fields(body: bytes, head_end: int) -> bool:
    """Whether ``x-spam-`` (any case) appears in ``body[:head_end]``; a lower-cased MiB at a
    time, so a huge header block is never copied whole."""
    step = 1 << 20
    overlap = len(b"x-spam-") - 1
    return any(
        b"x-spam-" in body[start : min(start + step + overlap, head_end)].lower()
        for start in range(0, head_end, step)
    )


def _without(fields: re.Pattern[bytes], body: bytes, head_end: int) -> bytes:
    """The header block ``body[:head_end]`` without the fields ``fields`` matches: the same
    bytes as joining the lines that stay with LF. Each match ends with its line end, so the
    block is read with one line end more (the first of the blank line, when there is one),
    which comes off again at the end."""
    if head_end < len(body):
        kept = fields.sub(b"", memoryview(body)[: head_end + 1])
    else:
        kept = fields.sub(b"", body + b"\n")
    return kept[:-1]


def _digest(head: bytes | memoryview, rest: memoryview) -> str:
    sha = hashlib.sha256(head)
    sha.update(rest)
    return sha.hexdigest()


def _digested(head: bytes | memoryview, rest: memoryview, scan_limit: int) -> _Reading:
    start = bytes(head[:scan_limit])
    if len(start) < scan_limit:
        start += rest[: scan_limit - len(start)].tobytes()
    has_header = _FIELD_NAME.match(head) is not None
    return _Reading(_digest(head, rest), len(head) + len(rest), start, has_header)


def digest_of(raw: bytes) -> str:
    """Hex SHA-256 of the normalised message bytes."""
    return _read(raw, 0).digest


def parse(
    raw: bytes, scan_limit: int, limits: MimeLimits | None = None, legacy: bool = False
) -> ParsedMessage:
    """Parse ``raw``; only its first ``scan_limit`` bytes are parsed for tokens.

    The MIME tree is walked without recursion and within ``limits`` (see ``mime_parts``).
    With ``legacy``, ``legacy_digest`` is worked out too (learning needs it; judging not).
    Raises NotAMessage for empty input or input whose first line is not a header.
    """
    reading = _read(raw, scan_limit, legacy)
    if not reading.has_header:
        raise NotAMessage("input does not start with an RFC 822 header")
    # compat32's own reading of bytes: ASCII, with every other byte kept as a surrogate.
    text = reading.start.replace(b"\x00", b"").decode("ascii", "surrogateescape")
    parts, hit = mime_parts(text, limits or MimeLimits())
    return ParsedMessage(
        reading.digest,
        reading.size,
        reading.size > scan_limit,
        parts[0].fields,
        tuple(parts),
        hit,
        reading.legacy_digest,
    )


def parse_text(raw: bytes, scan_limit: int) -> ParsedMessage:
    """Read ``raw`` as text without a header block (an SMS, a web form, a chat message): one
    text/plain part of its first ``scan_limit`` bytes, no header fields. The digest is taken
    as for a message. Raises NotAMessage when the bytes are not text (see ``looks_like_text``).
    """
    reading = _read(raw, scan_limit)
    if not looks_like_text(reading.start):
        raise NotAMessage("input is neither an RFC 822 message nor text")
    fields = _Fields()
    fields.set_payload(reading.start.decode("ascii", "surrogateescape"))
    part = Part(fields, "leaf")
    return ParsedMessage(
        reading.digest, reading.size, reading.size > scan_limit, fields, (part,), frozenset()
    )


def looks_like_text(data: bytes) -> bool:
    """Whether ``data`` reads as text: not empty or blank, and no NUL byte nor more than 1 in
    100 other control characters (tab, line ends and form feed aside) in its first 64 KiB.
    A picture, an archive or a PDF sent by mistake is refused rather than learned as words.
    """
    sample = data[: 64 * 1024]
    if not sample.strip() or b"\x00" in sample:
        return False
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    return controls * 100 <= len(sample)


def mime_parts(text: str, limits: MimeLimits) -> tuple[list[Part], frozenset[str]]:
    """Every part of the message ``text`` in MIME order (the message itself first), and the
    names of the limits that were hit.

    Each part is read by the stdlib parser for its header fields only, and its body is split
    here at the delimiter lines of its boundary: one pass over the bytes per level, with an
    explicit stack, so a message of a thousand nested parts neither overflows Python's stack
    (the stdlib parser recurses once per level) nor costs time with the square of its depth.
    A container deeper than ``limits.max_depth`` is read as one opaque block of text; after
    ``limits.max_parts`` parts the rest of the message is not read.
    """
    parts: list[Part] = []
    hit: set[str] = set()
    stack: list[tuple[str, int, str]] = [(text, 0, "text/plain")]
    while stack:
        if len(parts) >= limits.max_parts:
            hit.add("mime-parts")
            break
        source, depth, default_type = stack.pop()
        fields = read_fields(source)
        fields.set_default_type(default_type)
        children, kind = _children(fields, depth, limits)
        if kind == "opaque":
            hit.add("mime-depth")
        parts.append(Part(fields, kind))
        stack.extend(reversed(children))
    return parts, frozenset(hit)


def read_fields(source: str) -> _Fields:
    """The header fields of a message or part, with its body kept unparsed as the payload.

    Only the header block goes through the stdlib parser (which reads a body line by line
    even when asked for headers only: 20 levels of a 512 KiB message were 0.6 s of it); it
    ends at the first blank line, a bare CR counting as a line end as the parser counts it.
    Where the parser ends the fields sooner (at a line that is no header field), what it
    read as body comes first in the payload.
    """
    first = _LINE_END.match(source)
    blank = None if first else _BLANK_LINE.search(source)
    if first is not None:
        head, body = "", source[first.end() :]
    elif blank is None:
        head, body = source, ""
    else:
        head, body = source[: blank.start()], source[blank.end() :]
    fields = _PARSER.parsestr(head + "\n\n", headersonly=True)
    if not isinstance(fields, _Fields):  # pragma: no cover - _PARSER builds _Fields
        raise TypeError("the parser built the wrong message class")
    fields.set_payload(fields.raw_body() + body if head else body)
    return fields


def _children(
    fields: Message, depth: int, limits: MimeLimits
) -> tuple[list[tuple[str, int, str]], PartKind]:
    """The sources of a part's sub-parts (text, depth, default type) and the part's kind."""
    maintype = fields.get_content_maintype()
    if maintype not in ("multipart", "message"):
        return [], "leaf"
    content_type = fields.get_content_type()
    if maintype == "message" and content_type != "message/rfc822":
        return [], "leaf"
    if depth >= limits.max_depth:
        return [], "opaque"
    body = fields.raw_body() if isinstance(fields, _Fields) else ""
    if maintype == "message":
        return [(body, depth + 1, "text/plain")], "container"
    boundary = _boundary(fields)
    sources = split_multipart(body, boundary) if boundary else None
    if sources is None:
        # No boundary, or none of its delimiter lines: the block is read as text.
        return [], "leaf"
    default = "message/rfc822" if content_type == "multipart/digest" else "text/plain"
    return [(source, depth + 1, default) for source in sources], "container"


def _boundary(fields: Message) -> str | None:
    try:
        boundary = fields.get_boundary()
    except (LookupError, ValueError, TypeError):
        return None
    return boundary or None


def split_multipart(body: str, boundary: str) -> list[str] | None:
    """The sources of the parts between the delimiter lines ``--boundary`` of ``body`` (up to
    the closing ``--boundary--``); None when no delimiter line appears.

    As the stdlib parser reads them: a delimiter is a whole line, optionally followed by
    spaces or tabs; the line break before a delimiter belongs to it; text before the first
    delimiter (the preamble) and after the closing one (the epilogue) is no part.
    """
    delimiter = re.compile(r"^--" + re.escape(boundary) + r"(--)?[ \t]*(?:\n|\Z)", re.MULTILINE)
    sources: list[str] = []
    start: int | None = None
    for match in delimiter.finditer(body):
        if start is not None:
            end = match.start()
            sources.append(body[start : end - 1 if end > start and body[end - 1] == "\n" else end])
        if match.group(1):
            return sources
        start = match.end()
    if start is None:
        return None
    sources.append(body[start:])
    return sources


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


def text_parts(parts: Iterable[Part]) -> Iterator[TextPart]:
    """Decoded text/* parts (plain, html, ...) in MIME order; other parts are skipped.

    A multipart whose boundary never appears in its body (a malformed or mis-declared message),
    and a container past the depth limit, are read as one block of text, as HTML when it holds
    HTML tags, so their words are not lost.
    """
    for part in parts:
        if part.kind == "container":
            continue
        fields = part.fields
        maintype = fields.get_content_maintype()
        if part.kind == "leaf" and maintype not in ("text", "multipart"):
            continue
        payload = fields.get_payload(decode=True)
        if not isinstance(payload, bytes):
            continue
        text = decode_bytes(payload, part_charset(fields))
        if maintype == "text":
            yield TextPart(fields.get_content_type(), text)
        else:
            yield TextPart("text/html" if looks_like_html(text) else "text/plain", text)


def header_text(message: Message, name: str, limit: int | None = None) -> str:
    """A header's value with RFC 2047 encoded-words decoded; "" when absent or unreadable.

    Raw 8-bit header bytes (RFC 6532 UTF-8, or a legacy charset) come back from compat32 as a
    Header of unknown-8bit bytes: they are decoded with the body fallbacks, not replaced.
    With ``limit``, only the first ``limit`` characters of the value are decoded.
    """
    return header_field(message, name, limit)[0]


def header_field(message: Message, name: str, limit: int | None = None) -> tuple[str, bool]:
    """``header_text`` of the field, and whether its value was longer than ``limit``."""
    value = field_value(message, name)
    if value is None:
        return "", False
    if isinstance(value, email.header.Header):
        value = "".join(
            decode_bytes(fragment, None) if isinstance(fragment, bytes) else fragment
            for fragment, _charset in email.header.decode_header(value)
        )
    text = str(value)
    cut = limit is not None and len(text) > limit
    return decode_encoded_words(text[:limit]), cut


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
    get_all: Callable[[str, list[object]], Iterable[object]] = message.get_all
    return [str(v) for v in get_all(name, [])]


def field_value(message: Message, name: str) -> object:
    """The value of the field ``name``, or None: a str, or a Header for a value with 8-bit
    bytes (typeshed says str; the compiled build checks a declared type, so the getter is
    typed as what compat32 really returns)."""
    get: Callable[[str], object] = message.get
    return get(name)
