"""The SpamAssassin-style score mapping and X-Spam headers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.domain.naive_bayes import Clue
from app.domain.spam_headers import (
    REQUIRED_SCORE,
    SpamReport,
    clue_symbol,
    shown_class,
    shown_score,
    spam_headers,
    spam_score,
)
from app.domain.verdict import Verdict


def report(verdict: Verdict, log_odds: float, clues: list[Clue] | None = None) -> SpamReport:
    return SpamReport(verdict, log_odds, 0.5, clues or [])


@pytest.mark.parametrize(
    ("log_odds", "cut", "expected"),
    [
        (15.0, 15.0, 5.0),
        (30.0, 15.0, 10.0),
        (-30.0, 15.0, -10.0),
        (0.0, 15.0, 0.0),
        (1e9, 15.0, 999.0),
    ],
)
def test_the_spam_cut_off_maps_to_the_required_score(
    log_odds: float, cut: float, expected: float
) -> None:
    assert spam_score(log_odds, cut) == expected


def test_a_zero_cut_off_still_gives_a_finite_score() -> None:
    assert spam_score(2.0, 0.0) == 2.0 * REQUIRED_SCORE


def test_spam_gets_the_flag_and_a_yes_status() -> None:
    clues = [Clue("url:host:bad.example", 3.25), Clue("free, now", 1.5)]
    headers = dict(spam_headers(report(Verdict.SPAM, 36.0, clues), 15.0))
    assert headers["X-Spam-Flag"] == "YES"
    assert headers["X-Spam-Status"].startswith("Yes, score=12.0 required=5.0 tests=")
    assert "url:host:bad.example(+3.25)" in headers["X-Spam-Status"]
    assert "free__now(+1.50)" in headers["X-Spam-Status"]  # comma and space made header-safe
    assert headers["X-Spam-Level"] == "*" * 12
    assert headers["X-Spam-Verdict"].startswith("spam; log-odds=36.00")


@pytest.mark.parametrize("verdict", [Verdict.HAM, Verdict.UNSURE])
def test_ham_and_unsure_carry_no_flag(verdict: Verdict) -> None:
    headers = spam_headers(report(verdict, -40.0), 15.0)
    names = [name for name, _ in headers]
    assert "X-Spam-Flag" not in names
    assert dict(headers)["X-Spam-Status"].startswith("No, score=-13.3 required=5.0 tests=none")
    assert dict(headers)["X-Spam-Level"] == ""


def test_header_values_are_single_line_ascii() -> None:
    clues = [Clue("subject:grüße\r\nbcc: x", 2.0)]
    for _name, value in spam_headers(report(Verdict.SPAM, 20.0, clues), 15.0):
        assert value.isascii()
        assert "\n" not in value and "\r" not in value


@pytest.mark.parametrize(
    ("score", "spam", "shown"),
    [
        (5.0, False, 4.9),
        (4.96, False, 4.9),
        (4.94, False, 4.9),
        (7.2, False, 4.9),
        (5.0, True, 5.0),
        (-3.04, False, -3.0),
        (12.35, True, 12.3),
    ],
)
def test_a_non_spam_score_is_shown_below_the_required_score(
    score: float, spam: bool, shown: float
) -> None:
    assert shown_score(score, spam) == shown


def test_an_unsure_status_never_reaches_the_required_score() -> None:
    status = dict(spam_headers(report(Verdict.UNSURE, 15.0), 15.0))["X-Spam-Status"]
    assert status.startswith("No, score=4.9 required=5.0")


@given(st.text(max_size=80))
def test_clue_symbol_replaces_each_unsafe_character_and_keeps_forty(token: str) -> None:
    """The rule character by character: printable ASCII but , ; " \\ kept, the rest '_'."""
    expected = "".join(ch if 32 < ord(ch) < 127 and ch not in ',;"\\' else "_" for ch in token)[:40]
    assert clue_symbol(token) == expected


def test_a_named_class_comes_last_as_x_spam_class() -> None:
    named = SpamReport(Verdict.SPAM, 36.0, 0.9, [], "phishing")
    headers = spam_headers(named, 15.0)
    assert headers[-1] == ("X-Spam-Class", "phishing")
    assert headers[:-1] == spam_headers(SpamReport(Verdict.SPAM, 36.0, 0.9, []), 15.0)
    assert "X-Spam-Class" not in dict(spam_headers(report(Verdict.SPAM, 36.0), 15.0))


def test_a_class_is_shown_only_where_more_than_two_are_declared() -> None:
    assert shown_class("newsletter", ("ham", "spam", "newsletter")) == "newsletter"
    assert shown_class("spam", ("ham", "spam")) is None
    assert shown_class("", ("ham", "spam", "newsletter")) is None


def test_a_class_header_is_single_line_ascii() -> None:
    odd = SpamReport(Verdict.HAM, -3.0, 0.1, [], "news\r\nBcc: x, ü")
    value = dict(spam_headers(odd, 15.0))["X-Spam-Class"]
    assert value.isascii() and "\n" not in value and "," not in value and " " not in value
