"""Bounded parsing: depth, width and size limits on the message path, and the tokens that
record them. Every attack shape gets tokens; none needs Python's stack to grow with it."""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.html import bound_depth, html_text_and_urls
from app.domain.message import MimeLimits, parse, split_multipart
from app.domain.tokenizer import TokenizerOptions, bound_comments, host_names, tokenize
from benchmarks.hostile import SHAPES, shape
from tests.domain.builders import SCAN_LIMIT, message, tokens_of

# The limits each shape trips when built at 256 KiB (shapes not listed trip none).
EXPECTED_LIMITS = {
    "nested-comments": {"comment-depth", "header-bytes"},
    "unclosed-comments": {"comment-depth", "header-bytes"},
    "nested-multipart": {"mime-depth"},
    "nested-rfc822": {"mime-depth"},
    "many-parts": {"mime-parts"},
    "long-received": {"header-bytes"},
    "dotted-received": {"header-bytes"},
    "encoded-words": {"header-bytes"},
    "nested-div": {"html-depth"},
    "unclosed-font": {"html-depth"},
    "nested-table": {"html-depth"},
}


@pytest.fixture
def shallow_stack() -> Iterator[None]:
    """Python's recursion limit a little above the current depth: any code that recursed once
    per nesting level of a message would raise RecursionError here."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 120)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@pytest.mark.parametrize("name", [s.name for s in SHAPES])
def test_every_hostile_shape_gives_tokens_and_records_its_limit(
    name: str, shallow_stack: None
) -> None:
    raw = shape(name).build(256 * 1024)
    tokens = tokenize(parse(raw, SCAN_LIMIT), TokenizerOptions())
    assert 0 < sum(tokens.values()) <= TokenizerOptions().max_tokens
    limits = {token.removeprefix("meta:limit:") for token in tokens if "limit:" in token}
    assert limits == EXPECTED_LIMITS.get(name, set())


# ---- MIME depth and width -------------------------------------------------------------------


def nested(depth: int, inner: str = "innermost words") -> bytes:
    """A multipart nested ``depth`` levels below the message, text/plain at the bottom."""
    opening = "".join(
        f'--b{i}\nContent-Type: multipart/mixed; boundary="b{i + 1}"\n\n' for i in range(depth)
    )
    closing = "".join(f"--b{i}--\n" for i in reversed(range(depth + 1)))
    body = opening + f"--b{depth}\nContent-Type: text/plain\n\n{inner}\n" + closing
    return message(body, subject="deep", content_type='multipart/mixed; boundary="b0"')


def test_nesting_up_to_the_depth_limit_is_read_as_parts() -> None:
    tokens = tokenize(parse(nested(3), SCAN_LIMIT, MimeLimits(max_depth=4)), TokenizerOptions())
    assert {"innermost", "words"} <= set(tokens)
    assert tokens["mime:type:multipart/mixed"] == 4
    assert not [t for t in tokens if t.startswith("meta:limit:")]


def test_nesting_past_the_depth_limit_is_read_as_opaque_text() -> None:
    parsed = parse(nested(6), SCAN_LIMIT, MimeLimits(max_depth=2))
    assert parsed.limits == {"mime-depth"}
    assert [p.kind for p in parsed.parts] == ["container", "container", "opaque"]
    tokens = tokenize(parsed, TokenizerOptions())
    # The words below the limit still count, as text of the opaque part.
    assert {"innermost", "words", "meta:limit:mime-depth"} <= set(tokens)


def test_a_thousand_nested_attached_messages_need_no_deep_stack(shallow_stack: None) -> None:
    raw = b"Subject: fwd\nContent-Type: message/rfc822\n\n" * 1000 + b"Subject: x\n\nbottom\n"
    parsed = parse(raw, SCAN_LIMIT)
    assert len(parsed.parts) == MimeLimits().max_depth + 1
    assert "mime-depth" in parsed.limits


def test_parts_past_the_width_limit_are_not_read() -> None:
    body = "".join(f"--b\nContent-Type: text/plain\n\nword{i:03d}\n" for i in range(30))
    raw = message(body + "--b--\n", content_type='multipart/mixed; boundary="b"')
    parsed = parse(raw, SCAN_LIMIT, MimeLimits(max_parts=10))
    assert len(parsed.parts) == 10 and parsed.limits == {"mime-parts"}
    tokens = tokenize(parsed, TokenizerOptions())
    assert "word008" in tokens and "word009" not in tokens


def test_a_digest_defaults_its_parts_to_attached_messages() -> None:
    body = "--d\n\nSubject: inner\n\ndigest words\n--d--\n"
    raw = message(body, content_type='multipart/digest; boundary="d"')
    parsed = parse(raw, SCAN_LIMIT)
    types = [p.fields.get_content_type() for p in parsed.parts]
    assert types == ["multipart/digest", "message/rfc822", "text/plain"]
    assert {"digest", "words"} <= set(tokenize(parsed, TokenizerOptions()))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("--b\nA\n--b\nB\n--b--\n", ["A", "B"]),
        ("preamble\n--b\nA\n\n--b--\nepilogue\n--b\nnot a part\n", ["A\n"]),
        ("--b  \t\nA\n--b--", ["A"]),  # spaces after a delimiter
        ("--b\nA\n--bX\nstill A\n--b--\n", ["A\n--bX\nstill A"]),  # not a delimiter line
        ("--b\nnever closed\n", ["never closed\n"]),
        ("--b\n--b\nA\n--b--\n", ["", "A"]),
        ("no delimiter at all\n", None),
        (" --b\nindented is no delimiter\n", None),
    ],
)
def test_split_multipart(body: str, expected: list[str] | None) -> None:
    assert split_multipart(body, "b") == expected


def test_a_boundary_with_pattern_characters_is_literal() -> None:
    assert split_multipart("--a.b*c\nA\n--a.b*c--\n", "a.b*c") == ["A"]
    assert split_multipart("--aXb\nA\n", "a.b") is None


# ---- address comments -----------------------------------------------------------------------


def test_comments_within_the_limit_are_kept_for_the_address_parser() -> None:
    value = "Bob (((work))) <bob@example.com>"
    assert bound_comments(value, 3) == (value, False)
    tokens = tokens_of(message("hi\n", from_=value))
    assert "from:addr:bob@example.com" in tokens
    assert "meta:limit:comment-depth" not in tokens


@pytest.mark.parametrize(
    "value",
    [
        "(" * 600 + "x" + ")" * 600 + " <bob@example.com>",
        "Bob <bob@example.com> " + "(" * 5000,
        "Bob " + "((((((((((a)))))))))) " * 50 + "<bob@example.com>",
    ],
    ids=["nested", "unclosed", "many-deep"],
)
def test_comments_past_the_limit_are_dropped_and_the_address_still_counts(
    value: str, shallow_stack: None
) -> None:
    tokens = tokens_of(message("hi\n", from_=value))
    assert {"from:addr:bob@example.com", "meta:limit:comment-depth"} <= set(tokens)


def test_quoted_and_escaped_parentheses_are_not_comments() -> None:
    value = '"((((((((((" \\( \\( (a) <bob@example.com>'
    assert bound_comments(value, 1) == (value, False)
    assert bound_comments("x (((a))) y", 2) == ("x  y", True)


# ---- headers ----------------------------------------------------------------------------------


def test_a_header_gives_at_most_its_token_budget() -> None:
    subject = " ".join(f"w{i:04d}" for i in range(500))
    tokens = tokens_of(message("hi\n", subject=subject), TokenizerOptions(max_header_tokens=50))
    assert sum(1 for t in tokens if t.startswith("subject:")) == 50
    assert "subject:w0049" in tokens and "subject:w0050" not in tokens
    assert tokens["meta:limit:header-tokens"] == 1


def test_only_the_first_bytes_of_a_header_are_read() -> None:
    subject = "early " + "x" * 5000 + " late"
    tokens = tokens_of(message("hi\n", subject=subject), TokenizerOptions(max_header_bytes=1000))
    assert "subject:early" in tokens and "subject:late" not in tokens
    assert tokens["meta:limit:header-bytes"] == 1


def test_each_received_line_has_its_own_budget() -> None:
    long = "from " + "a." * 20_000 + "example.com"
    raw = message("hi\n", received="from mx.example.org by mx.example.net")
    raw = raw.replace(b"\n\n", f"\nReceived: {long}\n\n".encode(), 1)
    tokens = tokens_of(raw, TokenizerOptions(max_header_bytes=1000))
    assert {"received:host:mx.example.org", "meta:limit:header-bytes"} <= set(tokens)


# The pattern host_names replaces: right, but quadratic on a run of "a.a.a...".
_BACKTRACKING_HOST = re.compile(r"(?i)\b((?:[a-z0-9-]+\.)+[a-z]{2,})\b")


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="ab1-. c;[]()", max_size=30))
def test_host_names_find_what_the_backtracking_pattern_found(text: str) -> None:
    assert list(host_names(text)) == _BACKTRACKING_HOST.findall(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "from mail.example.com ([1.2.3.4]) by mx.example.org",
            ["mail.example.com", "mx.example.org"],
        ),
        ("1.2.3.4", []),
        ("mail.example.com-relay", ["mail.example.com"]),
        ("mail_server.example.com", ["example.com"]),  # "_" is no place for a name to start
        ("-mail.example.com", ["mail.example.com"]),
        ("a.a.a.a.a.a.a", []),
    ],
)
def test_host_names(text: str, expected: list[str]) -> None:
    assert list(host_names(text)) == expected


# ---- HTML depth -------------------------------------------------------------------------------


def test_html_within_the_depth_limit_is_untouched() -> None:
    html = "<div>" * 10 + "deep words" + "</div>" * 10
    assert bound_depth(html, 10) == (html, False)


def test_html_past_the_depth_limit_is_flattened_and_keeps_its_text() -> None:
    html = "<div>" * 5000 + "deep <b>wo</b>rds" + "</div>" * 5000 + "<p>after</p>"
    content = html_text_and_urls(html, max_depth=50)
    assert content.too_deep
    assert content.text.split() == ["deep", "words", "after"]


def test_unclosed_paragraphs_and_void_elements_are_not_depth() -> None:
    html = "<p>line<br><img src=x>" * 1000
    assert bound_depth(html, 10) == (html, False)


def test_deep_html_in_a_message_records_the_limit() -> None:
    raw = message("<div>" * 400 + "hidden offer", content_type="text/html")
    tokens = tokens_of(raw, TokenizerOptions(max_html_depth=100))
    assert {"hidden", "offer", "meta:limit:html-depth"} <= set(tokens)
