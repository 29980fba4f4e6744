"""Reading a message: its bytes parsed and tokenised under the settings' limits, no database.

``Reader`` is how the judge reads every message; ``read_ahead`` runs readers in other
processes for a bulk learn.
"""

from __future__ import annotations

from app.domain.message import MimeLimits, NotAMessage, header_field, parse, parse_text
from app.domain.tokenizer import TokenizerOptions, tokenize
from app.errors import InvalidMessage, MessageTooLarge
from app.service.results import Analysed, Form
from app.settings.schema import Settings

# A Message-ID is kept for logs only: at most this many characters, printable ASCII.
_MESSAGE_ID_LIMIT = 250


class Reader:
    """Parses and tokenises messages under the limits of ``settings``."""

    def __init__(self, settings: Settings) -> None:
        limits = settings.tokenizer
        self._max_bytes = settings.server.max_message_bytes
        self._scan = limits.scan_bytes
        self._options = TokenizerOptions(
            max_token_length=limits.max_token_length,
            max_tokens=limits.max_tokens,
            max_header_bytes=limits.max_header_bytes,
            max_header_tokens=limits.max_header_tokens,
            max_comment_depth=limits.max_comment_depth,
            max_html_depth=limits.max_html_depth,
        )
        self._mime_limits = MimeLimits(limits.max_mime_depth, limits.max_mime_parts)

    def analyse(self, raw: bytes, legacy: bool = False, form: Form = "rfc822") -> Analysed:
        """Parse and tokenise ``raw`` read as ``form``; raises MessageTooLarge or
        InvalidMessage. With ``legacy``, the digest an older version gave the same bytes too
        (learning needs it)."""
        if len(raw) > self._max_bytes:
            raise MessageTooLarge(f"message is {len(raw)} bytes; the limit is {self._max_bytes}")
        read_as = "rfc822"
        try:
            if form == "text":
                read_as, parsed = "text", parse_text(raw, self._scan)
            else:
                parsed = parse(raw, self._scan, self._mime_limits, legacy)
        except NotAMessage as error:
            if form != "auto":
                raise InvalidMessage(str(error)) from error
            try:
                read_as, parsed = "text", parse_text(raw, self._scan)
            except NotAMessage as text_error:
                raise InvalidMessage(str(text_error)) from text_error
        tokens = tokenize(parsed, self._options)
        message_id = header_field(parsed.message, "Message-ID", _MESSAGE_ID_LIMIT)[0].strip()
        sender = header_field(parsed.message, "From", _MESSAGE_ID_LIMIT)[0].strip()
        subject = header_field(parsed.message, "Subject", _MESSAGE_ID_LIMIT)[0].strip()
        return Analysed(
            parsed.digest,
            tokens,
            parsed.truncated,
            parsed.legacy_digest,
            read_as,
            _printable(message_id) or None,
            _shown(sender),
            _shown(subject),
        )


# Space, the C0 controls and DEL, which a Message-ID loses (as it loses every non-ASCII
# character).
_UNPRINTED = dict.fromkeys([*range(33), 127])


def _printable(text: str) -> str:
    """``text``'s printable ASCII characters but space."""
    # why: most values are ASCII, where one translate does what a generator a character
    # does (docs/benchmarks.md, "Measurements behind the design").
    if text.isascii():
        return text.translate(_UNPRINTED)
    return "".join(c for c in text if " " < c < "\x7f")


def _shown(text: str) -> str | None:
    """A header value fit for a history line: control characters become spaces."""
    if not text.isprintable():
        text = "".join(c if c.isprintable() else " " for c in text)
    return " ".join(text.split()) or None
