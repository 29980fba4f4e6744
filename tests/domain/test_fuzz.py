"""Property tests: whatever the bytes, ``parse`` either refuses them with NotAMessage or
returns, and ``tokenize`` then never raises and respects its caps.

Two sources of input: arbitrary bytes, and structured random messages (random headers,
RFC 2047 words, nested MIME parts, charsets, transfer encodings, HTML, truncation).

Each property runs 200 examples; ``SPAMFILTER_TEST_FUZZ_EXAMPLES=5000`` runs that many instead
(here and in ``test_fuzz_service.py``, which drives the same inputs through the service).
"""

from __future__ import annotations

import base64
import os
import quopri
from collections import Counter
from email import base64mime, quoprimime

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from app.domain.message import NotAMessage, ParsedMessage, digest_of, parse
from app.domain.tokenizer import TokenizerOptions, tokenize
from tests.domain.builders import SCAN_LIMIT

EXAMPLES_ENV = "SPAMFILTER_TEST_FUZZ_EXAMPLES"


def fuzz_settings(examples: int) -> settings:
    """Hypothesis settings for ``examples`` examples (or SPAMFILTER_TEST_FUZZ_EXAMPLES), no
    deadline: a slow example is a finding for the hostile benchmark, not a flaky failure."""
    return settings(
        max_examples=int(os.environ.get(EXAMPLES_ENV) or examples),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


FUZZ = fuzz_settings(200)

# Namespaces whose value is a word of the text (so max_token_length applies to it).
WORD_PREFIXES = (
    "subject:",
    "from:name:",
    "reply-to:name:",
    "return-path:name:",
    "x-mailer:",
    "user-agent:",
    "content-transfer-encoding:",
)
# Namespaces with a fixed cap on the value.
CAPPED = {"mime:charset:": 30, "mime:ext:": 10, "mime:encoding:": 20, "url:path:": 30}


def check_caps(tokens: Counter[str], options: TokenizerOptions) -> None:
    """Counts positive; words between the length limits; skip tokens short."""
    assert all(count > 0 for count in tokens.values())
    assert all(tokens)
    for token in tokens:
        prefix = next((p for p in WORD_PREFIXES if token.startswith(p)), "")
        value = token[len(prefix) :]
        if value.startswith("skip:"):
            assert len(value) <= len("skip:x:") + 10
        elif prefix or ":" not in token:
            assert options.min_token_length <= len(value) <= options.max_token_length, token
        for namespace, cap in CAPPED.items():
            if token.startswith(namespace):
                assert len(token) - len(namespace) <= cap, token


def check_total(parsed: ParsedMessage, tokens: Counter[str], options: TokenizerOptions) -> None:
    assert sum(tokens.values()) <= options.max_tokens
    if parsed.truncated:
        assert tokens["meta:truncated"] == 1


def parse_or_refuse(raw: bytes, scan_limit: int = SCAN_LIMIT) -> ParsedMessage | None:
    try:
        return parse(raw, scan_limit)
    except NotAMessage:
        return None


options_strategy = st.builds(
    TokenizerOptions,
    max_token_length=st.integers(4, 60),
    min_token_length=st.integers(1, 4),
    max_tokens=st.integers(1, 400),
)


# ---- arbitrary bytes -------------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=4000), options_strategy)
@example(b"", TokenizerOptions())
@example(b"\x00" * 100, TokenizerOptions())
@example(b"A:\n\n" + bytes(range(256)), TokenizerOptions())
def test_arbitrary_bytes(raw: bytes, options: TokenizerOptions) -> None:
    parsed = parse_or_refuse(raw)
    if parsed is None:
        return
    tokens = tokenize(parsed, options)
    check_caps(tokens, options)
    check_total(parsed, tokens, options)


@FUZZ
@given(st.binary(max_size=2000), options_strategy)
def test_arbitrary_bytes_after_a_header_line(raw: bytes, options: TokenizerOptions) -> None:
    parsed = parse_or_refuse(b"Subject: fuzz\n" + raw)
    assert parsed is not None
    tokens = tokenize(parsed, options)
    check_caps(tokens, options)
    check_total(parsed, tokens, options)


# ---- structured random messages --------------------------------------------------------------

CHARSETS = [
    "utf-8",
    "us-ascii",
    "iso-8859-1",
    "windows-1252",
    "koi8-r",
    "gb2312",
    "shift_jis",
    "utf-16",
    "x-unknown-charset",
    "utf\x00-8",
    "",
]
ENCODINGS = ["7bit", "8bit", "base64", "quoted-printable", "binary", "x-uuencode", "bogus"]
TEXT_TYPES = ["text/plain", "text/html", "text/enriched", "text/x-unknown"]
OTHER_TYPES = ["application/octet-stream", "image/png", "application/pdf", "message/rfc822"]

HTML_BITS = [
    "<p>",
    "</p>",
    "<script>var hidden = 1;</script>",
    "<style>p { x: y }</style>",
    "<!-- comment -->",
    "&amp;",
    "&#8364;",
    "&nosuch;",
    '<a href="http://example.com/a?b=c">',
    '<img src="https://img.example.net/x.png">',
    "<div",
    "</html>",
    "<",
    ">",
]
WORDS = ["free", "viagra", "meeting", "café", "привет", "新书", "x" * 80, "http://e.example/p"]

texts = st.lists(
    st.one_of(st.text(max_size=40), st.sampled_from(HTML_BITS), st.sampled_from(WORDS)),
    max_size=15,
).map(" ".join)


def encode_text(text: str, charset: str) -> bytes:
    try:
        return text.encode(charset.replace("\x00", "") or "utf-8", errors="replace")
    except LookupError:
        return text.encode("utf-8")


@st.composite
def header_values(draw: st.DrawFn) -> bytes:
    text = draw(texts).replace("\r", " ").replace("\n", " ")
    style = draw(st.sampled_from(["plain", "utf8", "encoded", "broken", "junk"]))
    if style == "plain":
        return text.encode("ascii", errors="replace")
    if style == "utf8":
        return text.encode("utf-8")
    if style == "junk":
        return draw(st.binary(max_size=60)).replace(b"\n", b" ").replace(b"\r", b" ")
    if style == "broken":
        junk = draw(st.text(alphabet="abc=!?*_", max_size=12))
        return f"=?utf-8?{draw(st.sampled_from('bqBQx'))}?{junk}?=".encode("ascii")
    charset = draw(st.sampled_from(["utf-8", "iso-8859-1", "koi8-r", "gb2312", "x-unknown"]))
    data = encode_text(text, charset)
    encode = draw(st.sampled_from([base64mime.header_encode, quoprimime.header_encode]))
    return encode(data, charset).encode("ascii")


HEADER_NAMES = [
    "Subject",
    "From",
    "To",
    "Reply-To",
    "Return-Path",
    "Message-ID",
    "Received",
    "X-Mailer",
    "User-Agent",
    "Content-Disposition",
    "X-Random",
]


@st.composite
def headers(draw: st.DrawFn) -> list[bytes]:
    lines = []
    for name in draw(st.lists(st.sampled_from(HEADER_NAMES), max_size=8)):
        value = draw(header_values())
        if name in ("From", "Reply-To", "Return-Path") and draw(st.booleans()):
            value += b" <" + draw(st.sampled_from([b"a@b.example", b"x@", b"@", b"<>"])) + b">"
        if name == "Received" and draw(st.booleans()):
            value += b" from mx.example.net [192.0.2.1] by relay.example.org; Mon, 1 Jan 2024"
        lines.append(name.encode() + b": " + value)
    return lines


@st.composite
def leaf_parts(draw: st.DrawFn) -> list[bytes]:
    content_type = draw(st.sampled_from(TEXT_TYPES + OTHER_TYPES))
    charset = draw(st.sampled_from(CHARSETS))
    encoding = draw(st.sampled_from(ENCODINGS))
    body = encode_text(draw(texts), charset)
    if encoding == "base64":
        body = base64.encodebytes(body)
        if draw(st.booleans()):  # corrupt it
            body = body[: draw(st.integers(0, len(body)))] + b"!*\n"
    elif encoding == "quoted-printable":
        body = quopri.encodestring(body) + draw(st.sampled_from([b"", b"=", b"=Z", b"=\n"]))
    lines = [b"Content-Type: " + content_type.encode() + b'; charset="' + charset.encode() + b'"']
    if draw(st.booleans()):
        name = draw(st.sampled_from(["a.pdf", "x.EXE", "noext", "a." + "z" * 30, ""]))
        lines.append(b'Content-Disposition: attachment; filename="' + name.encode() + b'"')
    lines.append(b"Content-Transfer-Encoding: " + encoding.encode())
    return [*lines, b"", body]


@st.composite
def parts(draw: st.DrawFn, depth: int = 0) -> list[bytes]:
    if depth >= 2 or draw(st.integers(0, 2)) > 0:
        return draw(leaf_parts())
    boundary = draw(st.sampled_from([b"b1", b"==x==", b"a" * 70, b""])) + str(depth).encode()
    subtype = draw(st.sampled_from([b"mixed", b"alternative", b"related", b"x-weird"]))
    lines = [
        b"Content-Type: multipart/" + subtype + b'; boundary="' + boundary + b'"',
        b"",
        b"preamble",
    ]
    for _ in range(draw(st.integers(0, 3))):
        lines.append(b"--" + boundary)
        lines.extend(draw(parts(depth + 1)))
    if draw(st.booleans()):  # otherwise the closing boundary is missing
        lines.append(b"--" + boundary + b"--")
    return lines


@st.composite
def messages(draw: st.DrawFn) -> bytes:
    lines = [b"Subject: start", *draw(headers()), *draw(parts())]
    raw = b"\n".join(lines) + b"\n"
    if draw(st.booleans()):
        raw = raw.replace(b"\n", b"\r\n")
    if draw(st.booleans()):
        raw = raw[: draw(st.integers(len(b"Subject:"), len(raw)))]
    return raw


@FUZZ
@given(messages(), options_strategy)
def test_structured_messages(raw: bytes, options: TokenizerOptions) -> None:
    parsed = parse(raw, SCAN_LIMIT)  # starts with a header line: never refused
    tokens = tokenize(parsed, options)
    check_caps(tokens, options)
    check_total(parsed, tokens, options)
    assert tokenize(parse(raw, SCAN_LIMIT), options) == tokens


@FUZZ
@given(messages(), options_strategy, st.integers(1, 4000))
def test_structured_messages_cut_at_any_scan_limit(
    raw: bytes, options: TokenizerOptions, scan_limit: int
) -> None:
    parsed = parse(raw, scan_limit)
    assert parsed.truncated == (len(raw.replace(b"\r\n", b"\n")) > scan_limit)
    assert parsed.digest == digest_of(raw)
    tokens = tokenize(parsed, options)
    check_caps(tokens, options)
    check_total(parsed, tokens, options)


@FUZZ
@given(messages())
def test_line_endings_and_mbox_line_do_not_change_the_digest(raw: bytes) -> None:
    lf = raw.replace(b"\r\n", b"\n").replace(b"\r", b"")
    crlf = lf.replace(b"\n", b"\r\n")
    mbox = b"From fuzz@example.org Mon Jan  1 00:00:00 2024\n" + lf
    assert digest_of(lf) == digest_of(crlf) == digest_of(mbox)
    assert tokenize(parse(lf, SCAN_LIMIT), TokenizerOptions()) == tokenize(
        parse(crlf, SCAN_LIMIT), TokenizerOptions()
    )
