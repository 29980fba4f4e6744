"""Parsing, digests, size caps and charset-safe decoding of raw message bytes."""

from __future__ import annotations

import email
import email.errors
import hashlib
import random
import re
from email import policy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.message import (
    NotAMessage,
    Part,
    decode_bytes,
    digest_of,
    header_text,
    header_values,
    looks_like_text,
    normalise,
    parse,
    parse_text,
    part_charset,
    text_parts,
)
from app.domain.tokenizer import TokenizerOptions, tokenize
from tests.domain.builders import SCAN_LIMIT, message, tokens_of

PNG_HEADER = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06"


# ---- what is not a message -------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\n\n\n",
        PNG_HEADER + bytes(range(256)),
        b"\x00" * 100,
        b"just a line of text without a colon\n\nand a body\n",
        b" Subject: indented first line\n\nbody\n",
        b"Subject\n\nno colon after the name\n",
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n",
        b"From sender@example.org Tue May 14 08:12:44 2024\n",
    ],
    ids=[
        "empty",
        "blank-lines",
        "png",
        "nul-bytes",
        "no-colon",
        "leading-space",
        "name-without-colon",
        "pdf",
        "mbox-line-only",
    ],
)
def test_not_a_message(raw: bytes) -> None:
    with pytest.raises(NotAMessage):
        parse(raw, SCAN_LIMIT)


def test_not_a_message_is_a_value_error() -> None:
    assert issubclass(NotAMessage, ValueError)


def test_random_binary_bytes_either_parse_or_are_refused() -> None:
    rng = random.Random(1234)
    for _ in range(200):
        raw = rng.randbytes(rng.randint(0, 2000))
        try:
            parsed = parse(raw, SCAN_LIMIT)
        except NotAMessage:
            continue
        tokenize(parsed, TokenizerOptions())


# ---- minimal and malformed messages ----------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [b"Subject: only headers", b"Subject: only headers\n", b"Subject: only headers\n\n"],
    ids=["no-newline", "no-blank-line", "empty-body"],
)
def test_headers_without_a_body_parse(raw: bytes) -> None:
    parsed = parse(raw, SCAN_LIMIT)
    assert parsed.message["subject"] == "only headers"
    assert not parsed.truncated
    assert {"subject:only", "subject:headers"} <= set(tokenize(parsed, TokenizerOptions()))


def test_truncated_multipart_without_closing_boundary() -> None:
    raw = message(
        "--b1\nContent-Type: text/plain\n\nfirst part words\n"
        "--b1\nContent-Type: text/html\n\n<p>second part never closed",
        subject="cut short",
        content_type='multipart/alternative; boundary="b1"',
    )
    tokens = tokens_of(raw)
    assert {"first", "part", "words"} <= set(tokens)
    assert "mime:type:multipart/alternative" in tokens


def test_multipart_without_any_boundary_line_keeps_its_words() -> None:
    raw = message(
        "no boundary ever appears here\n",
        content_type='multipart/mixed; boundary="missing"',
    )
    assert {"boundary", "ever", "appears", "here"} <= set(tokens_of(raw))


def test_multipart_whose_boundary_lines_differ_is_read_as_html() -> None:
    # The declared boundary and the delimiter lines differ by a space, as in real spam: the
    # parser finds no part, and the whole body would otherwise give no words at all.
    raw = message(
        "--= Split 0925\nContent-Type: text/plain\n\n"
        '<html><body><p align="center">Cheap cartridges <a href="http://deals.example/x">here'
        "</a></p></body></html>\n--= Split 0925--\n",
        content_type='multipart/alternative; boundary="=Split 0925"',
    )
    tokens = tokens_of(raw)
    assert {"cheap", "cartridges", "here", "url:host:deals.example"} <= set(tokens)
    assert not {"align", "center", "href"} & set(tokens)  # markup is not text


def test_multipart_without_boundary_lines_holding_an_address_is_plain_text() -> None:
    raw = message(
        "Write to <a.b@example.com> or <br.team@example.org> today\n",
        content_type='multipart/mixed; boundary="missing"',
    )
    assert {"a.b", "example.com", "br.team", "example.org", "today"} <= set(tokens_of(raw))


def test_bad_base64_payload_does_not_raise() -> None:
    raw = message(
        "--b\nContent-Type: text/plain\nContent-Transfer-Encoding: base64\n\n"
        "!!!this is *not* base64 at all@@@\n===\n"
        "--b\nContent-Type: text/plain\n\nreadable neighbour\n--b--\n",
        content_type='multipart/mixed; boundary="b"',
    )
    tokens = tokens_of(raw)
    assert {"readable", "neighbour"} <= set(tokens)


def test_nul_bytes_in_the_body() -> None:
    raw = message(b"hello\x00 wor\x00ld \x00\x00\x00 friend\n", subject="nul")
    parsed = parse(raw, SCAN_LIMIT)
    tokens = tokenize(parsed, TokenizerOptions())
    assert {"hello", "friend"} <= set(tokens)
    assert not [t for t in tokens if "\x00" in t]
    assert parsed.digest == hashlib.sha256(raw).hexdigest()  # the digest keeps every byte


def test_nul_byte_in_a_charset_name() -> None:
    raw = message(b"caf\xc3\xa9 ol\xc3\xa9\n", content_type='text/plain; charset="utf\x00-8"')
    assert {"café", "olé"} <= set(tokens_of(raw))


def test_nul_byte_charset_on_an_already_parsed_part() -> None:
    part = email.message_from_string(
        'Content-Type: text/plain; charset="utf\x00-8"\n\ncaf\xe9\n', policy=policy.compat32
    )
    assert part_charset(part) in (None, "utf\x00-8")
    assert [p.text.strip() for p in text_parts([Part(part, "leaf")])] == ["café"]


@pytest.mark.parametrize("charset", ["x-no-such-charset", "utf-99", '"', "   ", "../../etc"])
def test_unknown_charset_does_not_raise(charset: str) -> None:
    raw = message(b"plain na\xefve words\n", content_type=f'text/plain; charset="{charset}"')
    assert {"plain", "naïve", "words"} <= set(tokens_of(raw))


def test_unknown_charset_in_an_encoded_word() -> None:
    raw = message("body\n", subject="=?x-martian?q?Hello_there?=")
    parsed = parse(raw, SCAN_LIMIT)
    assert header_text(parsed.message, "subject") == "Hello there"


@pytest.mark.parametrize(
    "subject",
    [
        "=?utf-8?q?unfinished",
        "=?=?=?",
        "=??q?x?=",
        "=?utf-8?q?=ZZ=?=",
        "=?utf-8?b?!!!notbase64?=",
        "=?utf-8?b?a?=",
    ],
)
def test_malformed_encoded_words_do_not_raise(subject: str) -> None:
    parsed = parse(message("body\n", subject=subject), SCAN_LIMIT)
    assert isinstance(header_text(parsed.message, "subject"), str)
    tokenize(parsed, TokenizerOptions())


def test_header_text_and_values() -> None:
    raw = message(
        "x\n",
        subject="=?utf-8?q?Caf=C3=A9?= =?iso-8859-1?q?_cr=E8me?=",
        received="from a.example by b.example",
    )
    raw = raw.replace(b"\n\n", b"\nReceived: from c.example by d.example\n\n", 1)
    parsed = parse(raw, SCAN_LIMIT).message
    assert header_text(parsed, "subject") == "Café crème"
    assert header_text(parsed, "x-absent") == ""
    assert header_values(parsed, "received") == [
        "from a.example by b.example",
        "from c.example by d.example",
    ]
    assert header_values(parsed, "x-absent") == []


# ---- size caps and digests -------------------------------------------------------------------


def test_fifty_megabyte_body_is_truncated_but_digested_whole() -> None:
    line = b"cheap meds online pharmacy discount\n"
    raw = message(line * (50 * 1024 * 1024 // len(line)), subject="huge")
    assert len(raw) > 50 * 1000 * 1000
    parsed = parse(raw, 512 * 1024)
    assert parsed.truncated
    assert parsed.size == len(raw)
    assert parsed.digest == hashlib.sha256(raw).hexdigest()
    assert parsed.digest != hashlib.sha256(raw[: 512 * 1024]).hexdigest()
    tokens = tokenize(parsed, TokenizerOptions())
    assert tokens["meta:truncated"] == 1
    assert tokens["pharmacy"] > 0


def test_scan_limit_boundary() -> None:
    raw = message("exactly\n", subject="edge")
    assert not parse(raw, len(raw)).truncated
    assert parse(raw, len(raw) - 1).truncated


def test_digest_ignores_line_endings_and_the_mbox_line() -> None:
    raw = message("line one\nline two\n", subject="digest")
    crlf = raw.replace(b"\n", b"\r\n")
    mbox = b"From someone@example.org Mon Jan  1 00:00:00 2024\r\n" + crlf
    expected = hashlib.sha256(raw).hexdigest()
    assert digest_of(raw) == digest_of(crlf) == digest_of(mbox) == expected
    assert parse(mbox, SCAN_LIMIT).digest == expected
    assert parse(mbox, SCAN_LIMIT).size == len(raw)


def test_digest_changes_with_the_content() -> None:
    a = message("one\n", subject="a")
    b = message("one\n", subject="b")
    assert digest_of(a) != digest_of(b)


def test_only_the_first_mbox_line_is_removed() -> None:
    raw = message("From the desk of the editor\n", subject="mbox")
    mbox = b"From a@example.org Mon Jan  1 00:00:00 2024\n" + raw
    assert normalise(mbox) == raw
    assert b"From the desk" in normalise(raw)


def test_leading_blank_lines_are_refused_or_skipped() -> None:
    raw = b"\n\nSubject: hello there\nFrom: a@example.org\n\nbody\n"
    try:
        parsed = parse(raw, SCAN_LIMIT)
    except NotAMessage:
        return
    assert parsed.message["subject"] == "hello there"


# ---- decode_bytes fallbacks ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "charset", "expected"),
    [
        ("café".encode(), "utf-8", "café"),
        ("café".encode(), None, "café"),  # no charset: utf-8 first
        (b"caf\xe9", None, "café"),  # not utf-8: cp1252
        (b"\x93quoted\x94", None, "\u201cquoted\u201d"),  # cp1252 curly quotes
        (b"\x81\x8d", None, "\x81\x8d"),  # undefined in cp1252: latin-1
        ("привет".encode("koi8-r"), "koi8-r", "привет"),
        ("新书".encode("gb2312"), "gb2312", "新书"),
        ("Grüße".encode("iso-8859-1"), '"ISO-8859-1"', "Grüße"),  # quoted, upper case
        ("Grüße".encode("iso-8859-1"), " latin-1 ", "Grüße"),
        (b"caf\xe9", "x-no-such-charset", "café"),  # unknown name: fallbacks
        (b"caf\xe9", "utf\x00-8", "café"),  # NUL in the name: fallbacks
        (b"caf\xe9", "", "café"),
        (b"", "utf-8", ""),
    ],
)
def test_decode_bytes(payload: bytes, charset: str | None, expected: str) -> None:
    assert decode_bytes(payload, charset) == expected


def test_decode_bytes_with_a_wrong_declared_charset_replaces() -> None:
    assert decode_bytes(b"caf\xe9 ok", "utf-8") == "caf\ufffd ok"


def test_decode_bytes_never_raises_on_random_bytes() -> None:
    rng = random.Random(99)
    charsets = [None, "utf-8", "ascii", "utf-16", "koi8-r", "gb2312", "bogus", "utf\x00-8"]
    for _ in range(300):
        payload = rng.randbytes(rng.randint(0, 64))
        assert isinstance(decode_bytes(payload, rng.choice(charsets)), str)


def test_our_spam_headers_do_not_change_the_digest() -> None:
    original = b"From: a@example.org\nSubject: hello\n\nbody\nX-Spam-Flag: YES in the body stays\n"
    marked = (
        b"X-Spam-Flag: YES\r\nX-Spam-Status: Yes, score=9.1 required=5.0\r\n"
        b"\ttests=folded(+1.00) version=spamfilter\r\nX-Spam-Level: *********\r\n"
        b"X-Spam-Verdict: spam; log-odds=27.30\r\n" + original.replace(b"\n", b"\r\n")
    )
    assert digest_of(marked) == digest_of(original)
    assert parse(marked, 1 << 20).digest == digest_of(original)
    assert parse(marked, 1 << 20, legacy=True).legacy_digest is None  # as an older version
    # Other headers, and X-Spam text in the body, still count.
    assert digest_of(b"X-Other: 1\n" + original) != digest_of(original)
    assert digest_of(original.replace(b"stays", b"changed")) != digest_of(original)


def test_every_x_spam_field_is_left_out_of_the_digest_as_the_adapters_remove_them() -> None:
    original = b"From: a@example.org\nSubject: hello\n\nbody\n"
    forged = b"X-Spam-Checker-Version: SpamAssassin 3.4\nX-Spam-Score:\n 9.9\n" + original
    assert digest_of(forged) == digest_of(original)
    parsed = parse(forged, 1 << 20, legacy=True)
    # Before, only our four fields were left out: that digest finds messages learned then.
    older = b"X-Spam-Checker-Version: SpamAssassin 3.4\nX-Spam-Score:\n 9.9\n" + original
    assert parsed.legacy_digest == hashlib.sha256(older).hexdigest()


# ---- the digest against a plain reading ------------------------------------------------------

_ANY_SPAM_FIELD = re.compile(rb"(?i)x-spam-[!-9;-~]*[ \t]*:")
_OUR_SPAM_FIELD = re.compile(rb"(?i)x-spam-(?:flag|status|level|verdict)[ \t]*:")


def plainly_normalised(raw: bytes, fields: re.Pattern[bytes]) -> bytes:
    """What ``normalise`` means, written the slow, obvious way: line by line."""
    body = raw.replace(b"\r\n", b"\n")
    if body.startswith(b"From "):
        body = body.partition(b"\n")[2]
    head, separator, rest = body.lstrip(b"\n").partition(b"\n\n")
    kept: list[bytes] = []
    dropping = False
    for line in head.split(b"\n"):
        if line[:1] in (b" ", b"\t"):
            if not dropping:
                kept.append(line)
            continue
        dropping = fields.match(line) is not None
        if not dropping:
            kept.append(line)
    return b"\n".join(kept) + separator + rest


header_lines = st.lists(
    st.sampled_from(
        [
            b"X-Spam-Flag: YES",
            b"x-spam-status: No, score=1",
            b"X-Spam-Checker-Version: SA 3.4",
            b"X-Spam-Level:",
            b"X-Spam-Odd : spaced",
            b"X-Spammy: not ours",
            b"  folded line",
            b"\tfolded tab",
            b"Subject: hi",
            b"From: a@example.org",
            b"",
            b"body X-Spam-Flag: NO",
        ]
    ),
    max_size=12,
)


@settings(max_examples=400, deadline=None)
@given(lines=header_lines, crlf=st.booleans(), mbox=st.booleans())
def test_the_streamed_digest_equals_the_plain_reading(
    lines: list[bytes], crlf: bool, mbox: bool
) -> None:
    raw = b"\n".join(lines) + b"\n\nbody\nX-Spam-Flag: YES\n"
    if mbox:
        raw = b"From a@example.org Mon Jan  1 00:00:00 2024\n" + raw
    if crlf:
        raw = raw.replace(b"\n", b"\r\n")
    plain = plainly_normalised(raw, _ANY_SPAM_FIELD)
    assert normalise(raw) == plain
    assert digest_of(raw) == hashlib.sha256(plain).hexdigest()
    older = plainly_normalised(raw, _OUR_SPAM_FIELD)
    try:
        parsed = parse(raw, 64, legacy=True)
    except NotAMessage:
        return
    assert parsed.digest == hashlib.sha256(plain).hexdigest()
    assert parsed.size == len(plain)
    expected_legacy = None if older == plain else hashlib.sha256(older).hexdigest()
    assert parsed.legacy_digest == expected_legacy


# ---- text without a header block ---------------------------------------------------------------


def test_text_is_one_plain_part_without_header_fields() -> None:
    sms = "Free entry in a weekly draw! Text WIN to 80086 \u00a3100 prize\n".encode()
    parsed = parse_text(sms, SCAN_LIMIT)
    assert parsed.digest == digest_of(sms)
    assert list(parsed.message.keys()) == []
    assert [p.kind for p in parsed.parts] == ["leaf"]
    tokens = tokenize(parsed, TokenizerOptions())
    assert {"free", "entry", "weekly", "80086", "100", "prize"} <= set(tokens)
    assert not [t for t in tokens if t.startswith(("subject:", "from:"))]


def test_long_text_is_cut_at_the_scan_limit() -> None:
    parsed = parse_text(b"word " * 1000, 100)
    assert parsed.truncated and parsed.size == 5000


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"  \n\t\n",
        b"text with a \x00 NUL",
        PNG_HEADER + bytes(range(256)),
        bytes(range(32)) * 4,
    ],
    ids=["empty", "blank", "nul", "png", "controls"],
)
def test_what_is_not_text_is_refused(raw: bytes) -> None:
    assert not looks_like_text(raw)
    with pytest.raises(NotAMessage):
        parse_text(raw, SCAN_LIMIT)


def test_text_in_any_charset_and_a_stray_control_character_is_text() -> None:
    assert looks_like_text("Привет, как дела? \x1b".encode("koi8-r") + b" ok" * 40)
    assert looks_like_text("caf\u00e9 cr\u00e8me".encode("cp1252"))
