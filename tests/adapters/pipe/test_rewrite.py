"""Inserting header fields into raw bytes: line endings, mbox lines, folding, odd input."""

from __future__ import annotations

import re

import pytest

from app.domain.rewrite import add_headers, fold, header_start, line_ending, render_field
from tests.adapters.pipe.roundtrip import added_fields, check_round_trip

FIELDS = [("X-Spam-Status", "No, score=-3.0 required=5.0 tests=none version=spamfilter")]
LONG_STATUS = (
    "Yes, score=16.2 required=5.0 tests=url:host:example.biz(+4.10),subject:winner(+3.20),"
    "from:domain:winners.example(+2.90),body:cash(+1.50),mime:charset:utf-8(+1.10) "
    "version=spamfilter"
)


def test_fields_go_on_top_with_crlf() -> None:
    raw = b"Subject: hi\r\nFrom: a@example.org\r\n\r\nbody line\r\n"
    out = add_headers(raw, [("X-Spam-Flag", "YES"), *FIELDS])
    assert out == (
        b"X-Spam-Flag: YES\r\n"
        b"X-Spam-Status: No, score=-3.0 required=5.0 tests=none version=spamfilter\r\n" + raw
    )


def test_fields_use_lf_in_an_lf_message() -> None:
    raw = b"Subject: hi\n\nbody\n"
    assert add_headers(raw, [("X-Spam-Level", "**")]) == b"X-Spam-Level: **\n" + raw


def test_an_empty_value_has_no_trailing_space() -> None:
    assert render_field("X-Spam-Level", "", b"\n") == b"X-Spam-Level:\n"


def test_after_the_mbox_from_line() -> None:
    raw = b"From alice@example.org  Thu Aug 22 16:37:34 2002\nSubject: hi\n\nbody\n"
    out = add_headers(raw, FIELDS)
    assert out.startswith(b"From alice@example.org  Thu Aug 22 16:37:34 2002\nX-Spam-Status: ")
    assert header_start(raw) == raw.index(b"Subject")
    check_round_trip(raw, out)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"Subject: no body\r\n", id="crlf-no-body"),
        pytest.param(b"Subject: no body\n", id="lf-no-body"),
        pytest.param(b"Subject: no newline at all", id="no-newline"),
        pytest.param(b"Subject: empty body\r\n\r\n", id="empty-body"),
        pytest.param(
            b"Subject: caf\xc3\xa9\r\nX-Latin: \xe9t\xe9\r\n\r\n\x00\xff\xfe 8-bit \x80\r\n",
            id="8-bit",
        ),
        pytest.param(b"Subject: mixed\r\nTo: b@example.net\n\r\nline\nline\r\n", id="mixed"),
        pytest.param(b"Subject: no final newline\n\nbody", id="unterminated-body"),
    ],
)
def test_every_original_byte_is_kept(raw: bytes) -> None:
    out = add_headers(raw, [("X-Spam-Flag", "YES"), ("X-Spam-Status", LONG_STATUS)])
    fields = check_round_trip(raw, out)
    assert fields["X-Spam-Flag"] == "YES"


def test_line_ending_is_the_first_header_lines() -> None:
    assert line_ending(b"A: b\r\nC: d\n") == b"\r\n"
    assert line_ending(b"A: b\nC: d\r\n") == b"\n"
    assert line_ending(b"A: b") == b"\n"
    assert line_ending(b"From x\r\nA: b", header_start(b"From x\r\nA: b")) == b"\r\n"


def test_a_long_status_is_folded_like_spamassassin() -> None:
    lines = render_field("X-Spam-Status", LONG_STATUS, b"\r\n").split(b"\r\n")
    assert lines[-1] == b""
    assert all(len(line) <= 78 for line in lines)
    assert all(line.startswith(b"\t") for line in lines[1:-1])
    assert unfold(b"\r\n".join(lines).decode()) == f"X-Spam-Status: {LONG_STATUS}\r\n"


def test_fold_keeps_words_and_breaks_long_lists_after_commas() -> None:
    assert fold("A:", ["short", "words"]) == ["A: short words"]
    assert fold("A:", ["x" * 73, "y"]) == ["A: " + "x" * 73 + " y"]
    assert fold("A:", ["x" * 74, "y"]) == ["A: " + "x" * 74, "\ty"]
    value = "tests=" + ",".join(["abcdefghij"] * 12)
    listed = fold("T:", ["one", value, "two"], width=40)
    assert unfold("\n".join(listed)) == f"T: one {value} two"
    assert all(len(line) <= 40 for line in listed)
    assert len(listed) > 3


def unfold(text: str) -> str:
    """RFC 5322 unfolding, then the whitespace a fold added after a comma taken out again."""
    unfolded = re.sub(r"\r?\n\t", "\t", text)
    return re.sub(r",\t", ",", unfolded).replace("\t", " ")


def test_added_fields_helper_sees_only_the_insert() -> None:
    raw = b"Subject: x\n\nbody\n"
    assert added_fields(raw, add_headers(raw, FIELDS)).startswith(b"X-Spam-Status: No")
