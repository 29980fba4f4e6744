"""The filter's byte contract, checked on one input and its output.

The output is the input without the X-Spam-* fields it came with, and with ours inserted at
the top of the header block (after an mbox ``From `` line): every other original byte is
there, in order, and the added lines use the message's own line ending.
"""

from __future__ import annotations

import email
import re
from email import policy

from app.domain.rewrite import CRLF, LF, drop_spam_headers, header_start, line_ending


def added_fields(raw: bytes, output: bytes) -> bytes:
    """The bytes the filter inserted; asserts that everything else is ``raw`` unchanged."""
    start = header_start(raw)
    assert len(output) > len(raw)
    added = output[start : start + len(output) - len(raw)]
    assert output[:start] == raw[:start]
    assert output[start + len(added) :] == raw[start:]
    return added


def check_round_trip(raw: bytes, output: bytes) -> dict[str, str]:
    """Assert the byte contract; the added fields as a dict (unfolded values)."""
    raw = drop_spam_headers(raw)
    added = added_fields(raw, output)
    eol = line_ending(raw, header_start(raw))
    assert added.endswith(eol)
    lines = added[: -len(eol)].split(eol)
    for line in lines:
        assert line.startswith((b"X-Spam-", b"\t")), line
        assert len(line) <= 78 or b" " not in line.strip(), line
        if eol == CRLF:
            assert LF not in line and b"\r" not in line
    assert _body(output) == _body(raw[header_start(raw) :])
    parsed = email.message_from_bytes(added + eol, policy=policy.compat32)
    return {name: " ".join(str(value).split()) for name, value in parsed.items()}


def _body(raw: bytes) -> bytes | None:
    """Everything after the first empty line (None for a message without one)."""
    match = re.search(rb"\n\r?\n", raw)
    return raw[match.end() :] if match else None
