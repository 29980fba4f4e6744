"""Small builders for test messages: RFC 822 bytes written out by hand, no corpus files.

``make_message("Lunch?", "Are we still on for noon")`` gives a complete single-part message;
``html=`` turns it into multipart/alternative (text/plain + text/html). Non-ASCII subjects are
RFC 2047 encoded and non-ASCII bodies sent as 8-bit UTF-8, so a test can check charset handling
without writing MIME by hand.
"""

from __future__ import annotations

import base64
import random
from collections.abc import Iterable, Mapping, Sequence

CRLF = "\r\n"
BOUNDARY = "=_spamfilter_test_boundary_0"
DATE = "Tue, 03 Mar 2026 10:15:00 +0000"

HeaderPairs = Mapping[str, str] | Iterable[tuple[str, str]]

# Made-up word pools for generated training mail: the spammy and hammy pools do not overlap;
# COMMON words appear in both, as real mail shares most of its words.
SPAMMY_WORDS = (
    "winner", "prize", "cash", "lottery", "claim", "urgent", "offer", "discount", "casino",
    "bonus", "credit", "loan", "guaranteed", "million", "pills", "unsubscribe", "limited",
    "exclusive", "bitcoin", "refund",
)  # fmt: skip
HAMMY_WORDS = (
    "meeting", "agenda", "minutes", "project", "review", "deadline", "lunch", "report",
    "draft", "schedule", "budget", "colleagues", "regards", "attached", "quarterly", "team",
    "release", "notes", "invoice", "tomorrow",
)  # fmt: skip
COMMON_WORDS = (
    "the", "and", "you", "your", "this", "for", "with", "today", "please", "time", "new", "all",
)  # fmt: skip
SPAM_SENDERS = ("Prize Desk <desk@winners.example>", "offers@deals.example")
HAM_SENDERS = ("Carol <carol@example.org>", "Dave Example <dave@example.net>")


def make_message(
    subject: str,
    body: str,
    sender: str = "Alice Example <alice@example.org>",
    html: str | None = None,
    headers: HeaderPairs = (),
    recipient: str = "bob@example.net",
    message_id: str | None = None,
) -> bytes:
    """A message as bytes with CRLF line endings.

    ``headers`` are extra header fields (a mapping or ``(name, value)`` pairs, so a field such
    as ``Received`` can repeat); they come before the standard fields, as relays prepend them.
    ``message_id`` defaults to none at all, so two calls with the same arguments give the same
    bytes (and the same digest).
    """
    extra = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    fields = [
        *extra,
        ("From", sender),
        ("To", recipient),
        ("Subject", encode_header(subject)),
        ("Date", DATE),
    ]
    if message_id is not None:
        fields.append(("Message-ID", message_id))
    fields.append(("MIME-Version", "1.0"))
    if html is None:
        fields += _text_headers("text/plain", body)
        content = body
    else:
        fields.append(("Content-Type", f'multipart/alternative; boundary="{BOUNDARY}"'))
        content = _alternative(body, html)
    head = "".join(f"{name}: {value}{CRLF}" for name, value in fields)
    return (head + CRLF + _crlf(content)).encode("utf-8")


def encode_header(value: str) -> str:
    """``value`` as is when ASCII, else one RFC 2047 base64 encoded-word in UTF-8."""
    if value.isascii():
        return value
    return f"=?utf-8?b?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


def _text_headers(content_type: str, text: str) -> list[tuple[str, str]]:
    charset = "us-ascii" if text.isascii() else "utf-8"
    encoding = "7bit" if text.isascii() else "8bit"
    return [
        ("Content-Type", f"{content_type}; charset={charset}"),
        ("Content-Transfer-Encoding", encoding),
    ]


def _alternative(text: str, html: str) -> str:
    parts = []
    for content_type, content in (("text/plain", text), ("text/html", html)):
        head = "".join(f"{n}: {v}\n" for n, v in _text_headers(content_type, content))
        parts.append(f"--{BOUNDARY}\n{head}\n{content}\n")
    return "This is a multi-part message in MIME format.\n" + "".join(parts) + f"--{BOUNDARY}--\n"


def _crlf(text: str) -> str:
    lines = text.replace(CRLF, "\n").split("\n")
    return CRLF.join(lines) if text.endswith("\n") else CRLF.join(lines) + CRLF


def word_message(
    rng: random.Random,
    words: Sequence[str],
    serial: int,
    length: int = 30,
    senders: Sequence[str] = HAM_SENDERS,
) -> bytes:
    """A generated message of ``length`` words drawn from ``words`` (and COMMON_WORDS).

    ``serial`` goes into the subject, so every serial gives a distinct message (digest) with
    one token of its own (``subject:<serial>``) while the words overlap with its siblings.
    """
    pool = [*words, *COMMON_WORDS]
    body = " ".join(rng.choice(pool) for _ in range(length))
    subject = f"{rng.choice(words)} {rng.choice(words)} {serial:05d}"
    return make_message(subject, body + "\n", sender=rng.choice(senders))


def spam_message(rng: random.Random, serial: int, length: int = 30) -> bytes:
    """A generated message of spammy words from a spammy sender."""
    return word_message(rng, SPAMMY_WORDS, serial, length, SPAM_SENDERS)


def ham_message(rng: random.Random, serial: int, length: int = 30) -> bytes:
    """A generated message of hammy words from a colleague."""
    return word_message(rng, HAMMY_WORDS, serial, length, HAM_SENDERS)
