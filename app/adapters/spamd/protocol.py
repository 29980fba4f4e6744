"""The spamd protocol as a pure codec: request bytes in, typed request out; response in, bytes out.

No sockets, clocks or service calls here; the transport (``server``) reads the lines and the
body, enforces the size cap and the timeouts, and calls the service. Replies follow
SpamAssassin 4.0's spamd byte for byte (spamd/spamd.raw; spamd/PROTOCOL):

* request: ``METHOD SPAMC/1.x`` CRLF, ``Name: value`` CRLF lines, a blank line, the body.
* CHECK: ``SPAMD/1.1 0 EX_OK``, ``Spam: True ; 7.3 / 5.0``, a blank line.
* SYMBOLS, REPORT, REPORT_IFSPAM: from 1.3 ``Content-length`` then ``Spam`` and the body;
  to 1.2 ``Spam`` only (no length; Exim sends ``REPORT SPAMC/1.2``), SYMBOLS adding a CRLF.
* PROCESS, HEADERS: from 1.3 ``Content-length`` and ``Spam``; to 1.2 ``Content-length`` only;
  the message's own X-Spam-* fields are dropped and ours added at the top.
* TELL: ``DidSet: local`` / ``DidRemove: local`` when something changed, then two CRLF
  (spamd writes one more than the blank line; clients stop at the blank line). The protocol
  has no word for "not learned on purpose", so such a reply adds our own
  ``X-Spamfilter-Outcome: skipped`` line, which spamc (like any client) ignores.
  ``Message-class`` is ``spam`` or ``ham`` only, as in spamd; a class of a site that declares
  more (``newsletter``, ``phishing``) comes in our own request field
  ``X-Spamfilter-Class: CLASS``, which spamd and this codec's older versions pass over. With
  both fields, Message-class must name the class's side (``spam`` for a junk class).
* PING: ``SPAMD/1.5 0 PONG``; from 1.5 the request carries a header block (usually empty).
  SKIP: no reply at all.
* refusals: ``SPAMD/1.0 <sysexits code> <title>: <detail>``, then the connection closes.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import IntEnum, StrEnum

from app.adapters.spamd.report import CheckResult, format_report, wire_score
from app.domain.labels import CLASS_NAME
from app.domain.rewrite import add_headers, drop_spam_headers, header_block
from app.domain.spam_headers import clue_symbol
from app.errors import (
    ConfigurationError,
    InvalidLabel,
    InvalidMessage,
    InvalidUser,
    MessageTooLarge,
    Overloaded,
    SpamFilterError,
    StorageConflict,
    StorageUnavailable,
)

CRLF = b"\r\n"
# Our own TELL reply field: spamc's libspamc reads DidSet/DidRemove and passes over the rest.
OUTCOME_FIELD = b"X-Spamfilter-Outcome"
# Our own TELL request field X-Spamfilter-Class: the class to learn as, beyond spam and ham.
MIN_VERSION = (1, 2)  # spamc 4 sends 1.5, Exim 1.2; 1.0/1.1 framing is not served
MAX_HEADER_FIELDS = 255  # as spamd: more is refused (too-many-headers denial of service)
_DETAIL_LENGTH = 200


class ExitCode(IntEnum):
    """sysexits.h codes as spamd puts them on its status line."""

    OK = 0
    USAGE = 64
    DATAERR = 65
    UNAVAILABLE = 69
    SOFTWARE = 70
    TEMPFAIL = 75
    PROTOCOL = 76
    NOPERM = 77
    CONFIG = 78
    TIMEOUT = 79


# The text after the code; 69, 76 and 79 are spamd's own words.
_TITLES: Mapping[ExitCode, str] = {
    ExitCode.USAGE: "Usage error",
    ExitCode.DATAERR: "Data error",
    ExitCode.UNAVAILABLE: "Service Unavailable",
    ExitCode.SOFTWARE: "Internal error",
    ExitCode.TEMPFAIL: "Temporary failure",
    ExitCode.PROTOCOL: "Bad header line",
    ExitCode.NOPERM: "Permission denied",
    ExitCode.CONFIG: "Configuration error",
    ExitCode.TIMEOUT: "Timeout",
}

# The error hierarchy on the spamd edge, mapped here and nowhere else. Errors a request causes
# (65, 64) show their detail; the others show only their code, never driver messages.
EXIT_CODES: Mapping[type[SpamFilterError], ExitCode] = {
    InvalidMessage: ExitCode.DATAERR,
    MessageTooLarge: ExitCode.DATAERR,
    InvalidLabel: ExitCode.USAGE,
    InvalidUser: ExitCode.USAGE,  # a User header that cannot name a model
    StorageUnavailable: ExitCode.TEMPFAIL,
    StorageConflict: ExitCode.TEMPFAIL,  # raised only once the service's retries are used up
    Overloaded: ExitCode.TEMPFAIL,  # the process's buffered-bytes budget is full
    ConfigurationError: ExitCode.CONFIG,
}
_DETAILED = frozenset({ExitCode.USAGE, ExitCode.DATAERR, ExitCode.PROTOCOL})


class Method(StrEnum):
    """The commands of protocol 1.5."""

    CHECK = "CHECK"
    SYMBOLS = "SYMBOLS"
    REPORT = "REPORT"
    REPORT_IFSPAM = "REPORT_IFSPAM"
    PROCESS = "PROCESS"
    HEADERS = "HEADERS"
    TELL = "TELL"
    PING = "PING"
    SKIP = "SKIP"


_NO_BODY = frozenset({Method.PING, Method.SKIP})


class SpamdError(SpamFilterError):
    """A request refused at the spamd edge: one status line with ``status``, then close."""

    code = "spamd_refused"

    def __init__(self, status: ExitCode, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def bad_request(detail: str) -> SpamdError:
    """EX_PROTOCOL, answered as spamd does: ``Bad header line: <detail>``."""
    return SpamdError(ExitCode.PROTOCOL, detail)


@dataclass(frozen=True, slots=True)
class RequestLine:
    """``METHOD SPAMC/major.minor``."""

    method: Method
    version: tuple[int, int]

    @property
    def has_body(self) -> bool:
        """False for PING and SKIP, which send no message."""
        return self.method not in _NO_BODY

    @property
    def has_headers(self) -> bool:
        """PING and SKIP send a header block only from 1.5 on (SpamAssassin bug 6187)."""
        return self.has_body or self.version >= (1, 5)


@dataclass(frozen=True, slots=True)
class RequestHead:
    """The request line and the header fields we understand (others are ignored)."""

    line: RequestLine
    content_length: int | None = None
    user: str | None = None
    compressed: bool = False
    message_class: str | None = None  # "spam" or "ham"
    class_name: str | None = None  # X-Spamfilter-Class: any class the site declares
    set_local: bool = False
    set_remote: bool = False
    remove_local: bool = False
    remove_remote: bool = False


@dataclass(frozen=True, slots=True)
class Request:
    """A whole request: head and (decompressed) message bytes."""

    head: RequestHead
    body: bytes


@dataclass(frozen=True, slots=True)
class TellAction:
    """What a TELL asks of the local database: learn as ``learn``, or forget."""

    learn: str | None = None
    forget: bool = False


def parse_request_line(line: bytes) -> RequestLine:
    """The first line of a request (``b""`` means the client closed before sending one)."""
    if not line:
        raise bad_request("(closed before headers)")
    text = _strip_eol(line)
    match = re.fullmatch(rb"([A-Z_]{1,20}) SPAMC/(\d{1,3})\.(\d{1,3})", text)
    if match is None or match[1].decode() not in Method.__members__:
        raise bad_request(text.decode("latin-1"))
    method = Method(match[1].decode())
    version = (int(match[2]), int(match[3]))
    if version[0] != 1 or (method not in _NO_BODY and version < MIN_VERSION):
        raise bad_request(f"(unsupported protocol version SPAMC/{version[0]}.{version[1]})")
    return RequestLine(method, version)


def is_end_of_head(line: bytes) -> bool:
    """True for the blank line (CRLF or a bare LF) that ends the header block.

    ``line`` is what a line read returned: one without its LF means the client closed first.
    """
    if not line.endswith(b"\n"):
        raise bad_request("(EOF during headers)")
    return line in (CRLF, b"\n")


def parse_head(line: RequestLine, fields: Sequence[bytes]) -> RequestHead:
    """The head from the request line and the header lines (without the closing blank line).

    Names are matched without regard to case; unknown fields are ignored, as the protocol
    asks. Like spamd, a later Content-length, Set or Remove replaces an earlier one.
    """
    if len(fields) > MAX_HEADER_FIELDS:
        raise bad_request("(too many headers)")
    head = RequestHead(line)
    for field in fields:
        name, value = _split_field(field)
        head = _apply_field(head, name.lower(), value)
    if head.compressed and head.content_length is None and line.has_body:
        raise SpamdError(ExitCode.UNAVAILABLE, "Compress requires Content-length header")
    return head


def decode_body(head: RequestHead, raw: bytes, max_bytes: int) -> bytes:
    """The message: ``raw`` checked against Content-length, inflated when compressed.

    Raises MessageTooLarge when the message exceeds ``max_bytes`` (a compressed one is
    inflated no further than that), and spamd's refusals for a short or corrupt body.
    """
    expected = head.content_length
    if expected is not None:
        if len(raw) < expected:
            raise bad_request(
                f"(Content-Length mismatch: Expected {expected} bytes, got {len(raw)} bytes)"
            )
        raw = raw[:expected]
    if len(raw) > max_bytes:
        raise MessageTooLarge(f"message is over the limit of {max_bytes} bytes")
    return _inflate(raw, max_bytes) if head.compressed else raw


def parse_request(data: bytes, max_bytes: int) -> Request:
    """A whole request held in memory (the transport reads the same parts incrementally)."""
    first, pos = _next_line(data, 0)
    line = parse_request_line(first)
    fields: list[bytes] = []
    if line.has_headers:
        field, pos = _next_line(data, pos)
        while not is_end_of_head(field):
            fields.append(field)
            field, pos = _next_line(data, pos)
    head = parse_head(line, fields)
    body = decode_body(head, data[pos:], max_bytes) if line.has_body else b""
    return Request(head, body)


def tell_action(head: RequestHead, junk_classes: Sequence[str] = ("spam",)) -> TellAction:
    """What a TELL asks: ``Set: local`` learns as X-Spamfilter-Class, else as Message-class;
    ``Remove: local`` forgets. With both fields, Message-class must be ``spam`` exactly when
    the class is one of ``junk_classes``.

    Reporting to remote databases (``remote``) is not offered; like spamd with no reporter
    configured, the reply then simply lacks ``DidSet: remote``.
    """
    if head.set_local and head.remove_local:
        raise bad_request("Unable to set local and remove local in the same operation.")
    if head.set_remote and head.remove_remote:
        raise bad_request("Unable to set remote and remove remote in the same operation.")
    if head.set_local:
        if head.class_name is not None:
            junk = head.class_name in junk_classes
            if head.message_class not in (None, "spam" if junk else "ham"):
                raise bad_request(
                    f"(Message-class {head.message_class} disagrees with "
                    f"X-Spamfilter-Class {head.class_name})"
                )
            return TellAction(learn=head.class_name)
        if head.message_class is None:
            raise bad_request("(Set: local needs Message-class: spam or ham)")
        return TellAction(learn=head.message_class)
    return TellAction(forget=head.remove_local)


@dataclass(frozen=True, slots=True)
class CheckResponse:
    """The reply to CHECK, SYMBOLS, REPORT, REPORT_IFSPAM, PROCESS or HEADERS."""

    line: RequestLine
    result: CheckResult
    message: bytes


@dataclass(frozen=True, slots=True)
class TellResponse:
    """The reply to TELL: which databases changed (``local``), and, when nothing changed on
    purpose, why (``outcome``, e.g. ``skipped``: an ``X-Spamfilter-Outcome`` line)."""

    did_set: tuple[str, ...] = ()
    did_remove: tuple[str, ...] = ()
    outcome: str | None = None


@dataclass(frozen=True, slots=True)
class PongResponse:
    """The reply to PING."""


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """A refusal: one status line."""

    status: ExitCode
    detail: str


Response = CheckResponse | TellResponse | PongResponse | ErrorResponse


def render_response(response: Response) -> bytes:
    """The reply bytes, exactly as spamd writes them."""
    match response:
        case CheckResponse():
            return _render_check(response)
        case TellResponse(did_set=did_set, did_remove=did_remove, outcome=outcome):
            fields = b"".join(
                name + b": " + ",".join(values).encode("ascii") + CRLF
                for name, values in ((b"DidSet", did_set), (b"DidRemove", did_remove))
                if values
            )
            if outcome is not None:
                fields += OUTCOME_FIELD + b": " + _printable(outcome).encode("ascii") + CRLF
            return b"SPAMD/1.1 0 EX_OK\r\n" + fields + CRLF + CRLF
        case PongResponse():
            return b"SPAMD/1.5 0 PONG\r\n"
        case ErrorResponse(status=status, detail=detail):
            text = f"SPAMD/1.0 {int(status)} {_TITLES[status]}: {_printable(detail)}\r\n"
            return text.encode("ascii", "backslashreplace")


def error_response(error: Exception) -> ErrorResponse:
    """The refusal for ``error``: SpamdError as raised, the hierarchy through EXIT_CODES,
    MemoryError EX_TEMPFAIL (it may pass once other requests are done), anything else
    (a bug, RecursionError included) EX_SOFTWARE."""
    if isinstance(error, SpamdError):
        return ErrorResponse(error.status, error.detail)
    if isinstance(error, MemoryError):
        return ErrorResponse(ExitCode.TEMPFAIL, "out_of_memory")
    status = next(
        (EXIT_CODES[cls] for cls in type(error).__mro__ if cls in EXIT_CODES), ExitCode.SOFTWARE
    )
    if status in _DETAILED:
        return ErrorResponse(status, str(error))
    return ErrorResponse(status, error.code if isinstance(error, SpamFilterError) else "internal")


def _render_check(response: CheckResponse) -> bytes:
    method, version, result = response.line.method, response.line.version, response.result
    yes, no = ("Yes", "No") if method is Method.REPORT_IFSPAM else ("True", "False")
    score = wire_score(result.score, result.required, result.is_spam)
    spam = f"Spam: {yes if result.is_spam else no} ; {score} / {result.required:.1f}\r\n"
    status = b"SPAMD/1.1 0 EX_OK\r\n"
    if method is Method.CHECK:
        return status + spam.encode("ascii") + CRLF
    body = _check_body(response)
    length = b"Content-length: %d\r\n" % len(body)
    if version >= (1, 3):
        return status + length + spam.encode("ascii") + CRLF + body
    if method in (Method.PROCESS, Method.HEADERS):
        return status + length + CRLF + body
    return status + spam.encode("ascii") + CRLF + body


def _check_body(response: CheckResponse) -> bytes:
    result = response.result
    match response.line.method:
        case Method.PROCESS:
            return add_headers(drop_spam_headers(response.message), result.headers)
        case Method.HEADERS:
            return header_block(add_headers(drop_spam_headers(response.message), result.headers))
        case Method.SYMBOLS:
            names = ",".join(clue_symbol(clue.token) for clue in result.clues).encode("ascii")
            return names + CRLF if response.line.version < (1, 3) else names
        case Method.REPORT_IFSPAM if not result.is_spam:
            return b""
        case _:
            return format_report(result).encode("ascii", "backslashreplace")


def _apply_field(head: RequestHead, name: str, value: str) -> RequestHead:
    match name:
        case "content-length":
            if not (value.isascii() and value.isdigit() and len(value) <= 18):
                raise bad_request("(Content-Length contains non-numeric bytes)")
            return replace(head, content_length=int(value))
        case "user":
            if any(ord(ch) < 32 for ch in value):
                raise bad_request("(User header contains control chars)")
            return replace(head, user=value or None)
        case "message-class" | "x-spamfilter-class":
            return _with_class(head, name, value.lower())
        case "set" | "remove":
            local, remote = "local" in value.lower(), "remote" in value.lower()
            if name == "set":
                return replace(head, set_local=local, set_remote=remote)
            return replace(head, remove_local=local, remove_remote=remote)
        case "compress":
            if "zlib" not in value.lower():
                raise bad_request(f"(compression type not supported: {value})")
            return replace(head, compressed=True)
    return head


def _with_class(head: RequestHead, name: str, value: str) -> RequestHead:
    """Message-class (spam or ham), or X-Spamfilter-Class (a class name), set on ``head``."""
    if name == "message-class":
        if value not in ("spam", "ham"):
            raise bad_request("(Message-class header contains invalid class)")
        return replace(head, message_class=value)
    if CLASS_NAME.fullmatch(value) is None:
        raise bad_request("(X-Spamfilter-Class header contains invalid class)")
    return replace(head, class_name=value)


def _split_field(field: bytes) -> tuple[str, str]:
    name, colon, value = _strip_eol(field).decode("utf-8", "replace").partition(":")
    if not colon or not name or any(ch.isspace() for ch in name):
        raise bad_request("(header not in 'Name: value' format)")
    return name, value.strip(" \t")


def _inflate(raw: bytes, max_bytes: int) -> bytes:
    """zlib-inflate at most ``max_bytes`` + 1 bytes, so a small bomb cannot grow unchecked."""
    inflater = zlib.decompressobj()
    try:
        message = inflater.decompress(raw, max_bytes + 1)
    except zlib.error as error:
        raise SpamdError(ExitCode.UNAVAILABLE, f"zlib: {error}") from error
    if len(message) > max_bytes:
        raise MessageTooLarge(f"message inflates to over the limit of {max_bytes} bytes")
    if not inflater.eof:
        raise SpamdError(ExitCode.UNAVAILABLE, "zlib: failed to find end of zlib stream")
    return message


def _next_line(data: bytes, start: int) -> tuple[bytes, int]:
    end = data.find(b"\n", start)
    stop = len(data) if end < 0 else end + 1
    return data[start:stop], stop


def _strip_eol(line: bytes) -> bytes:
    return line[:-1].removesuffix(b"\r") if line.endswith(b"\n") else line


def _printable(text: str) -> str:
    return "".join(ch if ch.isprintable() else "?" for ch in text)[:_DETAIL_LENGTH]
