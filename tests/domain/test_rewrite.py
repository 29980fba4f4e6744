"""Removing the X-Spam-* fields a message arrives with: only those, folds included, bytes kept."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from app.domain.rewrite import drop_spam_headers, header_block
from benchmarks.hostile import FORGED, shape


def test_forged_fields_and_their_folds_go_every_other_byte_stays() -> None:
    message = (
        b"Received: from a\r\n\tby b\r\n"
        b"X-Spam-Status: No, score=-100.0\r\n\ttests=none\r\n  more\r\n"
        b"Subject: hi\r\n"
        b"x-spam-flag: NO\r\n"
        b"X-Spamish: not ours\r\n"
        b"X-Spam-Level:\r\n"
        b"\r\n"
        b"X-Spam-Flag: NO in the body is text\r\n"
    )
    assert drop_spam_headers(message) == (
        b"Received: from a\r\n\tby b\r\n"
        b"Subject: hi\r\n"
        b"X-Spamish: not ours\r\n"
        b"\r\n"
        b"X-Spam-Flag: NO in the body is text\r\n"
    )


def test_an_mbox_line_stays_and_lf_messages_work() -> None:
    message = b"From a@b  Mon Jan  1 00:00:00 2024\nX-Spam-Flag: NO\nSubject: s\n\nbody\n"
    assert drop_spam_headers(message) == b"From a@b  Mon Jan  1 00:00:00 2024\nSubject: s\n\nbody\n"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (b"Subject: s\nX-Spam-Flag: NO", b"Subject: s\n"),  # no blank line, no final LF
        (b"X-Spam-Flag: NO\n", b""),
        (b"X-Spam-Flag: NO\r\n\r\n", b"\r\n"),
        (b"not a message at all\n", b"not a message at all\n"),
        (b"", b""),
    ],
)
def test_odd_input(message: bytes, expected: bytes) -> None:
    assert drop_spam_headers(message) == expected


def test_a_message_without_them_is_returned_as_it_is() -> None:
    message = b"Subject: s\n\nX-Spam-Flag: only in the body\n"
    assert drop_spam_headers(message) is message


def test_the_hostile_shapes_lose_their_forged_fields() -> None:
    raw = shape("nested-multipart").build(4096)
    assert FORGED in raw
    dropped = drop_spam_headers(raw)
    assert b"x-spam-" not in header_block(dropped).lower()
    assert len(raw) - len(dropped) == len(FORGED)


_LINE = st.one_of(
    st.sampled_from([b"X-Spam-Flag: NO", b"x-spam-status: No", b"Subject: s", b"\tfold", b" f"]),
    st.binary(max_size=12).filter(lambda b: b"\n" not in b and b"\r" not in b),
)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (b"\n\nX-Spam-Flag: NO\nSubject: s\n\nbody\n", b"\n\nSubject: s\n\nbody\n"),
        (b"X-Spam-Flag: NO\n\nX-Spam-Flag: NO\n\nbody\n", b"\n\nbody\n"),
        (b"From a  Mon\nX-Spam-Flag: NO\n\nX-Spam-Flag: NO\n\nb\n", b"From a  Mon\n\n\nb\n"),
        (b"Subject: s\n\nX-Spam-Flag: NO\n\nbody\n", None),
    ],
)
def test_a_reader_that_skips_leading_blank_lines_finds_none(
    message: bytes, expected: bytes | None
) -> None:
    """This project's parser skips blank lines before the first field; so do others."""
    assert drop_spam_headers(message) == (message if expected is None else expected)


_LINE = st.one_of(
    st.sampled_from(
        [b"X-Spam-Flag: NO", b"x-spam-status: No", b"Subject: s", b"\tfold", b" f", b""]
    ),
    st.binary(max_size=12).filter(lambda b: b"\n" not in b and b"\r" not in b),
)


@example([b"X-Spam-Flag: NO", b"\tfold", b"", b"X-Spam-Flag: NO"], b"\n", b"body")
@example([b"Subject: s", b"X-Spam-Flag: NO", b" f"], b"\r\n", b"X-Spam-Flag: NO\r\n")
@given(st.lists(_LINE, max_size=14), st.sampled_from([b"\n", b"\r\n"]), st.binary(max_size=40))
def test_only_x_spam_fields_go(lines: list[bytes], eol: bytes, body: bytes) -> None:
    message = eol.join(lines) + eol + eol + body
    dropped = drop_spam_headers(message)
    assert drop_spam_headers(dropped) == dropped
    assert not any(_is_spam_field(line) for line in _lenient_header(dropped))
    removed = _removed_lines(message.splitlines(keepends=True), dropped.splitlines(keepends=True))
    assert all(_is_spam_field(line) or line.startswith((b" ", b"\t")) for line in removed)
    if any(_is_other_field(line) for line in _lenient_header(message)):
        stripped = message.lstrip(b"\r\n")
        head_end = len(message) - len(stripped) + len(header_block(stripped))
        assert dropped.endswith(message[head_end:])


def _is_spam_field(line: bytes) -> bool:
    return line.lower().startswith(b"x-spam-")


def _is_other_field(line: bytes) -> bool:
    return bool(line) and not _is_spam_field(line) and not line.startswith((b" ", b"\t"))


def _lenient_header(message: bytes) -> list[bytes]:
    """The header lines as a reader that skips leading blank lines sees them."""
    return header_block(message.lstrip(b"\r\n")).splitlines()


def _removed_lines(before: list[bytes], after: list[bytes]) -> list[bytes]:
    """The lines of ``before`` missing from ``after``, which must be a subsequence of it."""
    removed: list[bytes] = []
    remaining = iter(after)
    expected = next(remaining, None)
    for line in before:
        if line == expected:
            expected = next(remaining, None)
        else:
            removed.append(line)
    assert expected is None, "the output has a line the input has not, or out of order"
    return removed
