"""Property tests of the whole message path: ``SpamFilter.analyse``, ``classify``, ``learn``
and ``forget`` on a real SQLite service, fed arbitrary bytes and random hostile messages.

Whatever the bytes, the service answers or refuses them with InvalidMessage (not a message)
or MessageTooLarge (over the cap): nothing else escapes, RecursionError included. Tokens
respect their caps, a limit that was hit leaves its ``meta:limit:*`` token, and learning a
message then forgetting it leaves every row of the database as it was.

Inputs: arbitrary bytes; random MIME trees (multipart and message/rfc822 nested 0-60 deep,
siblings, missing or reused boundaries, every charset and transfer encoding of
``tests.domain.test_fuzz``); nesting 0-3,000 deep built cheaply from a repeated pattern;
hostile headers (nested and unclosed comments, headers of up to 300 KB, thousands of fields,
RFC 2047 words); deep or unclosed HTML; huge lines and binary junk around the size cap.

One service per module, on a SQLite file in a temporary folder, trained on a few dozen
messages so classify gives real verdicts. Its size cap is 1 MiB (the default is 25 MiB) so
that the too-large path is reached without building 25 MB examples; every other limit is
the default. By default each property runs a bounded number of examples (the module takes
well under a minute on two cores); for a long run set the count for every property::

    SPAMFILTER_TEST_FUZZ_EXAMPLES=5000 .venv/bin/pytest tests/domain/test_fuzz_service.py
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from app.bootstrap import build_service
from app.domain.tokenizer import TokenizerOptions
from app.domain.verdict import Verdict
from app.errors import InvalidMessage, MessageTooLarge
from app.service import Analysed, SpamFilter
from app.settings.schema import KIB, MIB, Settings, TokenizerSettings
from tests.builders import ham_message, spam_message
from tests.domain.test_fuzz import (
    HEADER_NAMES,
    check_caps,
    fuzz_settings,
    header_values,
    headers,
    leaf_parts,
)
from tests.environment import drop_settings
from tests.storage.snapshot import snapshot

CAP = MIB
LIMITS = TokenizerSettings()
# Light properties (a message of a few KB) and heavy ones (up to the cap, or 3,000 deep).
LIGHT = fuzz_settings(150)
HEAVY = fuzz_settings(40)
MIME = fuzz_settings(100)


@pytest.fixture(scope="module")
def fuzz_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SpamFilter, str]]:
    """The module's trained service and its database URL."""
    url = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'fuzz.db'}"
    with pytest.MonkeyPatch.context() as monkeypatch:
        drop_settings(monkeypatch)
        settings = Settings(
            _env_file=None,
            database_url=url,
            training_mode="everything",
            server={"max_message_bytes": CAP},
        )
    service = build_service(settings)
    rng = random.Random(7)
    for serial in range(12):
        service.learn(ham_message(rng, serial), "ham")
        service.learn(spam_message(rng, serial), "spam")
    yield service, url
    service.close()


@pytest.fixture(scope="module")
def service(fuzz_service: tuple[SpamFilter, str]) -> SpamFilter:
    return fuzz_service[0]


@pytest.fixture(scope="module")
def database_url(fuzz_service: tuple[SpamFilter, str]) -> str:
    return fuzz_service[1]


OPTIONS = TokenizerOptions(max_token_length=LIMITS.max_token_length, max_tokens=LIMITS.max_tokens)


def judge(service: SpamFilter, raw: bytes) -> Analysed | None:
    """analyse + classify; None when the service refused the bytes as it may."""
    try:
        analysed = service.analyse(raw)
    except MessageTooLarge:
        assert len(raw) > CAP
        return None
    except InvalidMessage:
        return None
    assert len(raw) <= CAP
    check_tokens(analysed)
    result = service.classify(analysed)
    assert result.verdict in set(Verdict)
    assert result.tokens == sum(analysed.tokens.values())
    return analysed


def check_tokens(analysed: Analysed) -> None:
    """The caps every message obeys, whatever its shape."""
    tokens = analysed.tokens
    check_caps(tokens, OPTIONS)
    assert sum(tokens.values()) <= LIMITS.max_tokens
    assert analysed.truncated == ("meta:truncated" in tokens)
    for field in ("subject:", "from:", "reply-to:", "return-path:"):
        assert sum(n for t, n in tokens.items() if t.startswith(field)) <= LIMITS.max_header_tokens


def learn_and_forget(service: SpamFilter, database_url: str, raw: bytes, labels: list[str]) -> None:
    """Learn ``raw`` under each label in turn (relabelling), then forget it: no row changes."""
    before = snapshot(database_url)
    stats = service.stats()
    try:
        for label in labels:
            assert service.learn(raw, label).outcome in {"learned", "relabelled", "unchanged"}
    finally:
        assert service.forget(raw).outcome == "forgotten"
    assert service.stats() == stats
    assert snapshot(database_url) == before


# ---- arbitrary bytes -------------------------------------------------------------------------


@LIGHT
@given(st.binary(max_size=4000))
@example(b"")
@example(b"\x00" * 100)
@example(b"From: (" * 2000)
def test_arbitrary_bytes_are_judged_or_refused(service: SpamFilter, raw: bytes) -> None:
    judge(service, raw)


@LIGHT
@given(st.binary(max_size=2000), st.sampled_from([b"\n", b"\r\n", b"\r", b"\n\n"]))
def test_junk_after_a_header_line_is_always_a_message(
    service: SpamFilter, junk: bytes, newline: bytes
) -> None:
    assert judge(service, b"Subject: fuzz" + newline + junk) is not None


# ---- random MIME trees -----------------------------------------------------------------------

CONTAINERS = ["multipart/mixed", "multipart/alternative", "multipart/related", "message/rfc822"]
# Headers of a forwarded message; generated ones (tests.domain.test_fuzz.headers) at each of
# 60 levels made this property take 20 s, mostly drawing.
FORWARDED = [
    b"From: (a (b (c))) <fwd@example.org>",
    b"To: =?utf-8?q?caf=C3=A9?= <x@example.net>",
    b"Received: from a.a.a.a.a.a.a by mx.example.org",
    b"Content-Transfer-Encoding: base64",
    b"X-Junk: \xff\x00\xfe",
]
# Parts beside each container level: usually none, so a 60-level tree stays cheap to draw.
SIBLINGS = st.sampled_from([0, 0, 0, 1, 2])
# Sizes and depths: anything in range, and the values either side of every default limit
# (hypothesis rarely draws the large end of a wide range on its own).
SIZES = st.one_of(
    st.integers(0, 300 * KIB),
    st.sampled_from([0, 1, 2 * LIMITS.max_header_bytes + 1, 100 * KIB, 300 * KIB]),
)
DEPTHS = st.one_of(
    st.integers(0, 3000),
    st.sampled_from(
        [3000, LIMITS.max_comment_depth + 1, LIMITS.max_mime_depth + 1, LIMITS.max_html_depth + 1]
    ),
)


@st.composite
def levels(draw: st.DrawFn, depth: int) -> tuple[list[bytes], list[bytes]]:
    """The lines that open and close one container level ``depth`` (its children between)."""
    kind = draw(st.sampled_from(CONTAINERS))
    if kind == "message/rfc822":
        inner = draw(st.lists(st.sampled_from(FORWARDED), max_size=2))
        return [b"Content-Type: message/rfc822", b"", b"Subject: fwd", *inner], []
    boundary = draw(st.sampled_from([b"b%d" % depth, b"b%d" % depth, b"same", b"=_x_="]))
    opening = [b"Content-Type: " + kind.encode() + b'; boundary="' + boundary + b'"', b""]
    opening += [b"preamble"] if draw(st.booleans()) else []
    for _ in range(draw(SIBLINGS)):
        opening += [b"--" + boundary, *draw(leaf_parts())]
    opening.append(b"--" + boundary)
    closing = []
    for _ in range(draw(SIBLINGS)):
        closing += [b"--" + boundary, *draw(leaf_parts())]
    if draw(st.booleans()):  # otherwise the closing boundary is missing
        closing.append(b"--" + boundary + b"--")
    return opening, closing


@st.composite
def mime_trees(draw: st.DrawFn, max_depth: int = 60) -> tuple[bytes, int]:
    """A message whose MIME tree is ``depth`` containers deep (siblings beside each level)."""
    depth = draw(st.integers(0, max_depth))
    openings: list[bytes] = []
    closings: list[list[bytes]] = []
    for level in range(depth):
        opening, closing = draw(levels(level))
        openings += opening
        closings.append(closing)
    lines = [b"Subject: start", *draw(headers()), b"MIME-Version: 1.0", *openings]
    lines += draw(leaf_parts())
    for closing in reversed(closings):
        lines += closing
    newline = draw(st.sampled_from([b"\n", b"\r\n"]))
    return newline.join(lines) + newline, depth


@MIME
@given(mime_trees(), st.lists(st.sampled_from(["ham", "spam"]), min_size=1, max_size=3))
def test_random_mime_trees_through_the_whole_path(
    service: SpamFilter, database_url: str, tree: tuple[bytes, int], labels: list[str]
) -> None:
    raw, _ = tree
    assert judge(service, raw) is not None
    learn_and_forget(service, database_url, raw, labels)


# ---- deep nesting, built cheaply -------------------------------------------------------------

PATTERNS = {
    "multipart": [b'Content-Type: multipart/mixed; boundary="b%d"', b"", b"--b%d"],
    "rfc822": [b"Content-Type: message/rfc822", b"", b"Subject: fwd %d"],
}


def nested(kinds: list[str], depth: int) -> bytes:
    """``depth`` containers, each of the kind ``kinds`` names in turn, then a text part, then
    every multipart closed: a message of about 50 bytes per level."""
    lines = [b"Subject: deep", b"MIME-Version: 1.0"]
    closings = []
    for level in range(depth):
        kind = kinds[level % len(kinds)]
        lines += [line % level if b"%d" in line else line for line in PATTERNS[kind]]
        if kind == "multipart":
            closings.append(b"--b%d--" % level)
    lines += [b"Content-Type: text/plain", b"", b"free money"]
    return b"\r\n".join(lines + closings[::-1]) + b"\r\n"


deep_kinds = st.lists(st.sampled_from(sorted(PATTERNS)), min_size=1, max_size=4)


@HEAVY
@given(deep_kinds, DEPTHS)
@example(["multipart"], 3000)
@example(["rfc822"], 3000)
@example(["multipart", "rfc822"], 1000)
def test_deep_mime_nesting_is_read_to_the_limit(
    service: SpamFilter, kinds: list[str], depth: int
) -> None:
    analysed = judge(service, nested(kinds, depth))
    assert analysed is not None
    if depth > LIMITS.max_mime_depth:
        assert "meta:limit:mime-depth" in analysed.tokens


@HEAVY
@given(
    deep_kinds,
    st.integers(0, 3000),
    st.lists(st.sampled_from(["ham", "spam"]), min_size=1, max_size=3),
)
def test_deep_messages_are_learned_and_forgotten_exactly(
    service: SpamFilter, database_url: str, kinds: list[str], depth: int, labels: list[str]
) -> None:
    learn_and_forget(service, database_url, nested(kinds, depth), labels)


# ---- hostile headers -------------------------------------------------------------------------

ADDRESS_FIELDS = [b"From", b"To", b"Cc", b"Reply-To", b"Return-Path", b"Sender"]
RUNS = [b"a", b"a.", b"1.", b"x ", b"=?utf-8?q?free?= ", b"=?utf-8?b?", b"(a) ", b"<a@b.example>, "]


@st.composite
def hostile_header(draw: st.DrawFn) -> list[bytes]:
    """One attack on the header block, as header lines."""
    kind = draw(st.sampled_from(["nested", "unclosed", "long", "folded", "many", "encoded"]))
    size = draw(SIZES)
    name = draw(st.sampled_from(ADDRESS_FIELDS))
    if kind == "nested":
        depth = draw(DEPTHS)
        return [name + b": " + b"(" * depth + b"x" + b")" * depth + b" <a@b.example>"]
    if kind == "unclosed":
        return [name + b": " + draw(st.sampled_from([b"(", b"a (", b'"(', b"\\("])) * (size // 2)]
    unit = draw(st.sampled_from(RUNS))
    field = draw(st.sampled_from([*HEADER_NAMES, "Received"])).encode()
    if kind == "long":
        return [field + b": " + unit * (size // len(unit))]
    if kind == "folded":
        return [field + b": " + (unit + b"\r\n ") * (size // (len(unit) + 3)) + b"end"]
    if kind == "many":
        return [field + b": " + unit for _ in range(1 + size // 40)]
    return [
        b"Subject: " + b" ".join(draw(header_values()) for _ in range(draw(st.integers(1, 20))))
    ]


@HEAVY
@given(st.lists(hostile_header(), min_size=1, max_size=3), st.binary(max_size=200))
@example([[b"From: " + b"(" * 3000 + b"x" + b")" * 3000 + b" <a@b.example>"]], b"")
@example([[b"Received: from " + b"a." * 150_000]], b"")
@example([[b"Subject: " + b"x " * 100_000]], b"")
def test_hostile_headers_are_bounded(
    service: SpamFilter, attacks: list[list[bytes]], body: bytes
) -> None:
    lines = [line for attack in attacks for line in attack]
    raw = b"\r\n".join([*lines, b"Subject: start", b"", body])
    analysed = judge(service, raw)
    if analysed is None:
        return
    first = lines[0]
    if first.startswith(b"Subject: ") and len(first) > 2 * LIMITS.max_header_bytes:
        assert "meta:limit:header-bytes" in analysed.tokens
    nesting = re.fullmatch(rb"From: (\(*)x\)* <a@b\.example>", first)
    if nesting is not None:
        deep = len(nesting.group(1)) > LIMITS.max_comment_depth
        assert ("meta:limit:comment-depth" in analysed.tokens) == deep


# ---- HTML, huge lines, junk ------------------------------------------------------------------

TAGS = [b"<div>", b"<span>", b"<font color=red>", b"<a><table><tr><td>", b"<b>", b"<!--", b"<p>"]


@HEAVY
@given(st.sampled_from(TAGS), st.integers(0, 100_000), st.booleans())
@example(b"<div>", 100_000, False)
@example(b"<a><table><tr><td>", 20_000, True)
def test_deep_html_is_flattened_past_the_limit(
    service: SpamFilter, tag: bytes, depth: int, closed: bool
) -> None:
    end = b"</" + tag[1:].split(b" ")[0].rstrip(b">") + b">" if closed else b""
    html = tag * depth + b"free money" + end * depth
    raw = (
        b"Subject: html\r\nMIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
        + html
    )
    analysed = judge(service, raw)
    assert analysed is not None or len(raw) > CAP
    scanned = LIMITS.scan_bytes // len(tag)  # the tags before the scan limit
    if analysed is not None and tag == b"<div>" and min(depth, scanned) > 1000:
        assert "meta:limit:html-depth" in analysed.tokens


@HEAVY
@given(
    st.sampled_from([b"x", b"a'.-", b"\x00", b"\xff\xfe", b"=\r\n", b"http://a.example/"]),
    st.integers(0, CAP + 4 * KIB),
    st.sampled_from(["7bit", "8bit", "base64", "quoted-printable", "bogus"]),
    st.sampled_from(["utf-8", "x-unknown", "utf\x00-8", "gb2312", ""]),
)
@example(b"x", CAP, "7bit", "utf-8")
@example(b"x", CAP + 1, "7bit", "utf-8")
def test_huge_lines_are_judged_truncated_or_refused(
    service: SpamFilter, unit: bytes, size: int, encoding: str, charset: str
) -> None:
    head = (
        f"Subject: huge\r\nContent-Type: text/plain; charset={charset}\r\n"
        f"Content-Transfer-Encoding: {encoding}\r\n\r\n"
    ).encode()
    raw = head + unit * (size // len(unit))
    analysed = judge(service, raw)
    if len(raw) > CAP:
        assert analysed is None
    else:
        assert analysed is not None
        assert analysed.truncated == (len(raw.replace(b"\r\n", b"\n")) > LIMITS.scan_bytes)
