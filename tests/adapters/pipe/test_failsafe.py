"""No forged header passes the filter: the X-Spam-* fields a message brings are removed on
every path, and whatever the classifier raises (RecursionError and MemoryError included) the
message goes out unjudged with exit 3, never lost, never with a traceback."""

from __future__ import annotations

import io
import random
import re
import sys
from typing import NoReturn

import pytest

import app.adapters.pipe.filter
from app.adapters.pipe.filter import Classify, filter_message, service_classifier
from app.adapters.pipe.main import run
from app.adapters.pipe.report import ExitCode, FilterReport
from app.domain.rewrite import drop_spam_headers, header_block
from app.errors import InvalidMessage, MessageTooLarge, StorageUnavailable
from app.service import SpamFilter
from benchmarks.hostile import FORGED, shape
from tests.adapters.pipe.conftest import RunFilter
from tests.adapters.pipe.roundtrip import check_round_trip
from tests.builders import spam_message

FORGED_FOLDED = (
    b"X-Spam-Status: No, score=-100.0\r\n\trequired=5.0 tests=NONE\r\nx-spam-flag: NO\r\n"
)
# Sizes the hostile shapes are built at: big enough to nest thousands of levels deep.
HOSTILE_SIZE = 64 * 1024


def forged(raw: bytes) -> bytes:
    """``raw`` with forged X-Spam fields (one folded) in the middle of its header block."""
    first_line = raw.index(b"\r\n") + 2
    return raw[:first_line] + FORGED_FOLDED + raw[first_line:]


def spam_fields(output: bytes) -> list[bytes]:
    """The X-Spam-* field lines of ``output``'s header block (folded lines not included)."""
    return [
        line for line in header_block(output).splitlines() if line.lower().startswith(b"x-spam-")
    ]


def _recurse(depth: int = 0) -> NoReturn:
    _recurse(depth + 1)


def real_recursion(_raw: bytes) -> FilterReport:
    """A classifier that runs out of stack the way a deeply nested message once did."""
    _recurse()


def raising(error: BaseException) -> Classify:
    def classify(_raw: bytes) -> FilterReport:
        raise error

    return classify


def test_the_messages_own_fields_go_before_ours_are_added(trained: SpamFilter) -> None:
    raw = forged(spam_message(random.Random(3), 700))
    filtered = filter_message(raw, service_classifier(trained))
    assert filtered.code is ExitCode.SPAM
    fields = check_round_trip(raw, filtered.output)  # ours added to the input without its own
    assert fields["X-Spam-Flag"] == "YES"
    assert b"X-Spam-Flag: NO" not in filtered.output and b"NONE" not in filtered.output
    assert [line.split(b":")[0] for line in spam_fields(filtered.output)] == [
        b"X-Spam-Flag",
        b"X-Spam-Status",
        b"X-Spam-Level",
        b"X-Spam-Verdict",
    ]


@pytest.mark.parametrize(
    "classify",
    [
        real_recursion,
        raising(RecursionError("maximum recursion depth exceeded")),
        raising(MemoryError()),
        raising(StorageUnavailable("database is locked")),
        raising(InvalidMessage("not a message")),
        raising(MessageTooLarge("too large")),
        raising(KeyError("a bug")),
    ],
    ids=["real-recursion", "recursion", "memory", "storage", "invalid", "too-large", "bug"],
)
def test_on_any_error_the_forged_fields_go_and_nothing_else(classify: Classify) -> None:
    raw = forged(spam_message(random.Random(4), 701))
    errors = io.StringIO()
    filtered = filter_message(raw, classify, errors)
    assert (filtered.code, filtered.verdict) == (ExitCode.ERROR, None)
    assert filtered.output == drop_spam_headers(raw) == raw.replace(FORGED_FOLDED, b"")
    assert spam_fields(filtered.output) == []
    assert re.fullmatch(
        r"spamfilter-filter: \w+.*; message passed through unjudged\n", errors.getvalue()
    )


def test_a_message_without_forged_fields_passes_byte_for_byte() -> None:
    raw = spam_message(random.Random(5), 702)
    filtered = filter_message(raw, raising(MemoryError()))
    assert filtered.output is raw


def test_if_even_removing_them_fails_the_mail_is_not_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    def out_of_memory(_raw: bytes) -> bytes:
        raise MemoryError

    monkeypatch.setattr(app.adapters.pipe.filter, "drop_spam_headers", out_of_memory)
    raw = forged(spam_message(random.Random(6), 703))
    errors = io.StringIO()
    filtered = filter_message(raw, raising(RecursionError("deep")), errors)
    assert (filtered.output, filtered.code) == (raw, ExitCode.ERROR)
    assert errors.getvalue().splitlines() == [
        "spamfilter-filter: RecursionError: deep; message passed through unjudged",
        "spamfilter-filter: MemoryError; its X-Spam fields could not be removed",
    ]


@pytest.mark.parametrize("exit_zero", [False, True])
def test_run_exits_3_on_a_memory_error(exit_zero: bool) -> None:
    raw = forged(spam_message(random.Random(7), 704))
    stdout, stderr = io.BytesIO(), io.StringIO()
    code = run(io.BytesIO(raw), stdout, stderr, exit_zero, classify=raising(MemoryError()))
    assert (code, stdout.getvalue()) == (3, drop_spam_headers(raw))
    assert stderr.getvalue() == "spamfilter-filter: MemoryError; message passed through unjudged\n"


@pytest.mark.parametrize(
    "name", ["nested-multipart", "nested-rfc822", "nested-comments", "many-headers"]
)
def test_hostile_messages_through_the_real_process(
    trained: SpamFilter, run_filter: RunFilter, name: str
) -> None:
    raw = shape(name).build(HOSTILE_SIZE)
    assert FORGED in raw
    result = run_filter(raw)
    assert result.returncode in (0, 1, 2, 3), result.stderr
    assert b"Traceback" not in result.stderr
    assert b"X-Spam-Flag: NO" not in header_block(result.stdout)
    assert b"score=-100.0" not in header_block(result.stdout)
    if result.returncode == 3:
        assert result.stdout == drop_spam_headers(raw)
        assert len(result.stderr.splitlines()) == 1
    else:
        check_round_trip(raw, result.stdout)


def test_a_hostile_message_over_the_cap_goes_out_unjudged_without_its_forged_fields(
    service: SpamFilter, run_filter: RunFilter
) -> None:
    raw = shape("nested-multipart").build(HOSTILE_SIZE)
    for args in ((), ("--exit-zero",)):
        result = run_filter(raw, *args, env={"SPAMFILTER_SERVER__MAX_MESSAGE_BYTES": "4096"})
        assert result.returncode == 3
        assert result.stdout == drop_spam_headers(raw) == raw.replace(FORGED, b"")
        assert re.fullmatch(
            r"spamfilter-filter: message_too_large: .*; message passed through unjudged\n",
            result.stderr.decode(),
        )


def test_a_recursion_error_in_the_real_process_exits_3(
    service: SpamFilter, run_filter: RunFilter
) -> None:
    """The classifier of the real entry point runs out of stack: one line, exit 3, no
    traceback, and the forged fields gone."""
    script = (
        "import sys, app.service\n"
        "def recurse(depth=0):\n"
        "    return recurse(depth + 1)\n"
        "app.service.SpamFilter.classify = lambda self, raw, scope=None: recurse()\n"
        "from app.adapters.pipe.main import main\n"
        "sys.exit(main())\n"
    )
    raw = forged(spam_message(random.Random(8), 705))
    for args in ((), ("--exit-zero",)):
        result = run_filter(raw, *args, command=(sys.executable, "-c", script))
        assert (result.returncode, result.stdout) == (3, drop_spam_headers(raw))
        (line,) = result.stderr.decode().splitlines()
        assert line.startswith("spamfilter-filter: RecursionError: maximum recursion depth")
        assert line.endswith("; message passed through unjudged")
