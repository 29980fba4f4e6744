"""The codec on byte fixtures: requests as spamc and Exim send them, replies as spamd writes them.

Request bytes are those Debian's spamc 4.0.1 and Exim's spam.c send; the expected reply
bytes are spelled out literally, following SpamAssassin 4.0's spamd (``check``, ``dotell``,
``doskip_or_ping``, ``protocol_error``, ``service_unavailable_error`` and
``service_timeout`` in spamd/spamd.raw).
"""

from __future__ import annotations

import zlib

import pytest

from app.adapters.spamd.protocol import (
    CheckResponse,
    ErrorResponse,
    ExitCode,
    Method,
    PongResponse,
    RequestLine,
    SpamdError,
    TellAction,
    TellResponse,
    error_response,
    parse_request,
    parse_request_line,
    render_response,
    tell_action,
)
from app.adapters.spamd.report import CheckResult, wire_score
from app.domain.naive_bayes import Clue
from app.domain.rewrite import add_headers, drop_spam_headers, header_block
from app.errors import (
    ConfigurationError,
    InvalidLabel,
    InvalidMessage,
    MessageTooLarge,
    Overloaded,
    StorageConflict,
    StorageUnavailable,
)

CAP = 10_000
MSG = b"From: a@example.org\r\nSubject: cash\r\n\r\nbody\r\n"  # 44 bytes
HEAD = b"From: a@example.org\r\nSubject: cash\r\n\r\n"
ADDED = b"X-Spam-Flag: YES\r\nX-Spam-Status: Yes, score=7.3 required=5.0 tests=cash(+2.00)\r\n"
SPAM = CheckResult(
    is_spam=True,
    score=7.3,
    required=5.0,
    headers=[
        ("X-Spam-Flag", "YES"),
        ("X-Spam-Status", "Yes, score=7.3 required=5.0 tests=cash(+2.00)"),
    ],
    clues=[Clue("cash", 2.0), Clue("subject:a, b", -0.5)],
    verdict="spam",
    reason=None,
    log_odds=21.9,
    spam_probability=1.0,
)
HAM = CheckResult(False, -2.04, 5.0, [("X-Spam-Status", "No")], [], "ham", None, -6.1, 0.002)
REPORT = (
    b"Spam filter verdict: spam, log-odds +21.90 nats, P(spam) 1.000000\n"
    b"\n"
    b"Content analysis details:   (7.3 points, 5.0 required)\n"
    b"\n"
    b" log-odds clue\n"
    b"--------- ------------------------------------------------------------\n"
    b"    +2.00 cash\n"
    b"    -0.50 subject:a__b\n"
    b"\n"
    b"A clue's log-odds (nats) above 0 point to spam, below 0 to ham.\n"
)  # 312 bytes
CHECK_METHODS = [m for m in Method if m not in (Method.PING, Method.SKIP)]
VERSIONS = [(1, 2), (1, 3), (1, 4), (1, 5)]


def request(method: str, version: str, fields: bytes, body: bytes = MSG) -> bytes:
    """A request as spamc writes it: line, fields, blank line, body."""
    return f"{method} SPAMC/{version}\r\n".encode() + fields + b"\r\n" + body


# --- requests ----------------------------------------------------------------------------


@pytest.mark.parametrize("method", CHECK_METHODS)
@pytest.mark.parametrize("version", VERSIONS)
def test_every_method_and_version_with_length_and_user(
    method: Method, version: tuple[int, int]
) -> None:
    raw = request(method, f"{version[0]}.{version[1]}", b"User: alice\r\nContent-length: 44\r\n")
    parsed = parse_request(raw, CAP)
    assert parsed.head.line == RequestLine(method, version)
    assert (parsed.head.user, parsed.head.content_length) == ("alice", 44)
    assert parsed.body == MSG


@pytest.mark.parametrize("method", CHECK_METHODS)
def test_without_content_length_the_body_runs_to_the_end(method: Method) -> None:
    parsed = parse_request(request(method, "1.2", b""), CAP)
    assert (parsed.head.content_length, parsed.head.user, parsed.body) == (None, None, MSG)


def test_exim_request() -> None:
    raw = b"REPORT SPAMC/1.2\r\nUser: nobody\r\nContent-length: 44\r\n\r\n" + MSG
    parsed = parse_request(raw, CAP)
    assert parsed.head.line == RequestLine(Method.REPORT, (1, 2))
    assert parsed.head.user == "nobody"
    assert parsed.body == MSG


def test_unknown_fields_are_ignored_and_names_are_case_blind() -> None:
    fields = b"X-Client: mine\r\nCONTENT-LENGTH: 44\r\nuser:bob\r\nQueue-Id: 1AbC\r\n"
    parsed = parse_request(request("CHECK", "1.5", fields), CAP)
    assert (parsed.head.content_length, parsed.head.user, parsed.body) == (44, "bob", MSG)


@pytest.mark.parametrize(
    ("raw", "version"),
    [
        (b"PING SPAMC/1.2\r\n", (1, 2)),  # spamc before 3.3: no header block
        (b"PING SPAMC/1.5\r\n\r\n", (1, 5)),  # spamc -K today
        (b"SKIP SPAMC/1.5\r\n\r\n", (1, 5)),
        (b"SKIP SPAMC/1.2\r\n", (1, 2)),
    ],
)
def test_ping_and_skip(raw: bytes, version: tuple[int, int]) -> None:
    parsed = parse_request(raw, CAP)
    assert parsed.head.line.version == version
    assert not parsed.head.line.has_body
    assert parsed.body == b""


@pytest.mark.parametrize(
    ("fields", "action", "remote"),
    [  # as spamc -L spam / -L ham / -L forget / -C report / -C revoke send them
        (b"Message-class: spam\r\nSet: local\r\n", TellAction(learn="spam"), False),
        (b"Message-class: ham\r\nSet: local\r\n", TellAction(learn="ham"), False),
        (b"Remove: local\r\n", TellAction(forget=True), False),
        (b"Message-class: spam\r\nSet: local,remote\r\n", TellAction(learn="spam"), True),
        (b"Message-class: ham\r\nSet: local\r\nRemove: remote\r\n", TellAction("ham"), False),
    ],
)
def test_tell_fields(fields: bytes, action: TellAction, remote: bool) -> None:
    raw = request("TELL", "1.5", fields + b"User: root\r\nContent-length: 44\r\n")
    parsed = parse_request(raw, CAP)
    assert tell_action(parsed.head) == action
    assert parsed.head.set_remote is remote
    assert parsed.body == MSG


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        (b"Set: local\r\nRemove: local\r\n", "Unable to set local and remove local"),
        (b"Set: remote\r\nRemove: remote\r\n", "Unable to set remote and remove remote"),
        (b"Set: local\r\n", "(Set: local needs Message-class: spam or ham)"),
    ],
)
def test_tell_contradictions_are_protocol_errors(fields: bytes, detail: str) -> None:
    parsed = parse_request(request("TELL", "1.5", fields + b"Content-length: 44\r\n"), CAP)
    with pytest.raises(SpamdError) as caught:
        tell_action(parsed.head)
    assert caught.value.status is ExitCode.PROTOCOL
    assert caught.value.detail.startswith(detail)


def test_compressed_body_is_inflated() -> None:
    packed = zlib.compress(MSG, 3)
    fields = b"Compress: zlib\r\nContent-length: %d\r\n" % len(packed)
    parsed = parse_request(request("CHECK", "1.5", fields, packed), CAP)
    assert parsed.head.compressed
    assert parsed.body == MSG


def test_compressed_bomb_stops_at_the_cap() -> None:
    packed = zlib.compress(b"x" * (CAP * 50))
    fields = b"Compress: zlib\r\nContent-length: %d\r\n" % len(packed)
    with pytest.raises(MessageTooLarge):
        parse_request(request("CHECK", "1.5", fields, packed), CAP)


def test_a_body_over_the_cap_is_too_large() -> None:
    with pytest.raises(MessageTooLarge):
        parse_request(request("CHECK", "1.5", b"", b"x" * (CAP + 1)), CAP)


# Every refusal spamd makes while reading a request, with its exact status line.
MALFORMED = [
    (b"", b"SPAMD/1.0 76 Bad header line: (closed before headers)\r\n"),
    (b"HELLO\r\n", b"SPAMD/1.0 76 Bad header line: HELLO\r\n"),
    (b"GET / HTTP/1.0\r\n\r\n", b"SPAMD/1.0 76 Bad header line: GET / HTTP/1.0\r\n"),
    (b"FROB SPAMC/1.5\r\n\r\n", b"SPAMD/1.0 76 Bad header line: FROB SPAMC/1.5\r\n"),
    (
        b"CHECK SPAMC/1.1\r\n\r\n",
        b"SPAMD/1.0 76 Bad header line: (unsupported protocol version SPAMC/1.1)\r\n",
    ),
    (
        b"CHECK SPAMC/2.0\r\n\r\n",
        b"SPAMD/1.0 76 Bad header line: (unsupported protocol version SPAMC/2.0)\r\n",
    ),
    (
        b"CHECK SPAMC/1.5\r\nContent-length: 4x\r\n\r\n",
        b"SPAMD/1.0 76 Bad header line: (Content-Length contains non-numeric bytes)\r\n",
    ),
    (
        b"CHECK SPAMC/1.5\r\nno colon here\r\n\r\n",
        b"SPAMD/1.0 76 Bad header line: (header not in 'Name: value' format)\r\n",
    ),
    (
        b"CHECK SPAMC/1.5\r\nUser: a\x01b\r\n\r\n",
        b"SPAMD/1.0 76 Bad header line: (User header contains control chars)\r\n",
    ),
    (
        b"TELL SPAMC/1.5\r\nMessage-class: eggs\r\n\r\n",
        b"SPAMD/1.0 76 Bad header line: (Message-class header contains invalid class)\r\n",
    ),
    (
        b"CHECK SPAMC/1.5\r\nCompress: lzma\r\nContent-length: 1\r\n\r\nx",
        b"SPAMD/1.0 76 Bad header line: (compression type not supported: lzma)\r\n",
    ),
    (
        b"CHECK SPAMC/1.5\r\nCompress: zlib\r\n\r\nx",
        b"SPAMD/1.0 69 Service Unavailable: Compress requires Content-length header\r\n",
    ),
    (
        b"CHECK SPAMC/1.5\r\nCompress: zlib\r\nContent-length: 4\r\n\r\nnope",
        b"SPAMD/1.0 69 Service Unavailable: zlib: Error -3 while decompressing data:"
        b" incorrect header check\r\n",
    ),
    (b"CHECK SPAMC/1.5\r\nUser: a\r\n", b"SPAMD/1.0 76 Bad header line: (EOF during headers)\r\n"),
    (b"CHECK SPAMC/1.5\r\nUser: a", b"SPAMD/1.0 76 Bad header line: (EOF during headers)\r\n"),
    (
        b"CHECK SPAMC/1.5\r\nContent-length: 50\r\n\r\n" + MSG,
        b"SPAMD/1.0 76 Bad header line: (Content-Length mismatch: Expected 50 bytes,"
        b" got 44 bytes)\r\n",
    ),
    (
        b"CHECK SPAMC/1.5\r\n" + b"X-A: 1\r\n" * 256 + b"\r\n",
        b"SPAMD/1.0 76 Bad header line: (too many headers)\r\n",
    ),
]


@pytest.mark.parametrize(("raw", "reply"), MALFORMED)
def test_malformed_requests_get_spamds_refusal(raw: bytes, reply: bytes) -> None:
    with pytest.raises(SpamdError) as caught:
        parse_request(raw, CAP)
    assert render_response(error_response(caught.value)) == reply


def test_255_header_fields_are_still_accepted() -> None:
    parsed = parse_request(b"CHECK SPAMC/1.5\r\n" + b"X-A: 1\r\n" * 255 + b"\r\n" + MSG, CAP)
    assert parsed.body == MSG


# --- replies -----------------------------------------------------------------------------


def reply(method: Method, version: tuple[int, int], result: CheckResult = SPAM) -> bytes:
    return render_response(CheckResponse(RequestLine(method, version), result, MSG))


@pytest.mark.parametrize("version", VERSIONS)
def test_check(version: tuple[int, int]) -> None:
    assert reply(Method.CHECK, version) == b"SPAMD/1.1 0 EX_OK\r\nSpam: True ; 7.3 / 5.0\r\n\r\n"
    assert reply(Method.CHECK, version, HAM) == (
        b"SPAMD/1.1 0 EX_OK\r\nSpam: False ; -2.0 / 5.0\r\n\r\n"
    )


def test_symbols_12_has_no_length_and_ends_with_crlf() -> None:
    assert reply(Method.SYMBOLS, (1, 2)) == (
        b"SPAMD/1.1 0 EX_OK\r\nSpam: True ; 7.3 / 5.0\r\n\r\ncash,subject:a__b\r\n"
    )


@pytest.mark.parametrize("version", [(1, 3), (1, 4), (1, 5)])
def test_symbols_13_on_has_a_length_and_no_crlf(version: tuple[int, int]) -> None:
    assert reply(Method.SYMBOLS, version) == (
        b"SPAMD/1.1 0 EX_OK\r\nContent-length: 17\r\nSpam: True ; 7.3 / 5.0\r\n\r\n"
        b"cash,subject:a__b"
    )


def test_report_12_as_exim_reads_it() -> None:
    assert reply(Method.REPORT, (1, 2)) == (
        b"SPAMD/1.1 0 EX_OK\r\nSpam: True ; 7.3 / 5.0\r\n\r\n" + REPORT
    )


def test_report_15() -> None:
    assert reply(Method.REPORT, (1, 5)) == (
        b"SPAMD/1.1 0 EX_OK\r\nContent-length: 312\r\nSpam: True ; 7.3 / 5.0\r\n\r\n" + REPORT
    )


def test_report_ifspam_says_yes_or_no_and_reports_spam_only() -> None:
    assert reply(Method.REPORT_IFSPAM, (1, 5)) == (
        b"SPAMD/1.1 0 EX_OK\r\nContent-length: 312\r\nSpam: Yes ; 7.3 / 5.0\r\n\r\n" + REPORT
    )
    assert reply(Method.REPORT_IFSPAM, (1, 5), HAM) == (
        b"SPAMD/1.1 0 EX_OK\r\nContent-length: 0\r\nSpam: No ; -2.0 / 5.0\r\n\r\n"
    )
    assert reply(Method.REPORT_IFSPAM, (1, 2), HAM) == (
        b"SPAMD/1.1 0 EX_OK\r\nSpam: No ; -2.0 / 5.0\r\n\r\n"
    )


def test_process_12_has_a_length_but_no_spam_field() -> None:
    assert reply(Method.PROCESS, (1, 2)) == (
        b"SPAMD/1.1 0 EX_OK\r\nContent-length: 124\r\n\r\n" + ADDED + MSG
    )


@pytest.mark.parametrize("version", [(1, 3), (1, 4), (1, 5)])
def test_process_13_on(version: tuple[int, int]) -> None:
    assert reply(Method.PROCESS, version) == (
        b"SPAMD/1.1 0 EX_OK\r\nContent-length: 124\r\nSpam: True ; 7.3 / 5.0\r\n\r\n" + ADDED + MSG
    )


def test_process_and_headers_drop_the_x_spam_fields_the_message_came_with() -> None:
    forged = b"X-Spam-Flag: NO\r\nx-spam-status: No, score=-100\r\n\tfolded\r\n"
    line = parse_request_line(b"PROCESS SPAMC/1.5\r\n")
    processed = _check_reply(line, forged + MSG)
    assert processed.endswith(b"\r\n\r\n" + ADDED + MSG)
    headers = _check_reply(parse_request_line(b"HEADERS SPAMC/1.5\r\n"), forged + MSG)
    assert headers.endswith(b"\r\n\r\n" + ADDED + HEAD)


def _check_reply(line: RequestLine, message: bytes) -> bytes:
    return render_response(CheckResponse(line, SPAM, message))


def test_drop_spam_headers_keeps_every_other_byte() -> None:
    message = (
        b"From alice Mon Jan  1 00:00:00 2024\n"
        b"X-Spam-Flag: YES\nSubject: a\nX-SPAM-Level: ***\n  more\nX-Spamish: kept\n"
        b"\nX-Spam-Flag: in the body\n"
    )
    assert drop_spam_headers(message) == (
        b"From alice Mon Jan  1 00:00:00 2024\nSubject: a\nX-Spamish: kept\n"
        b"\nX-Spam-Flag: in the body\n"
    )
    assert drop_spam_headers(MSG) is MSG


def test_headers_stops_after_the_blank_line() -> None:
    assert reply(Method.HEADERS, (1, 5)) == (
        b"SPAMD/1.1 0 EX_OK\r\nContent-length: 118\r\nSpam: True ; 7.3 / 5.0\r\n\r\n" + ADDED + HEAD
    )
    assert reply(Method.HEADERS, (1, 2)) == (
        b"SPAMD/1.1 0 EX_OK\r\nContent-length: 118\r\n\r\n" + ADDED + HEAD
    )


def test_tell_replies() -> None:
    assert render_response(TellResponse(did_set=("local",))) == (
        b"SPAMD/1.1 0 EX_OK\r\nDidSet: local\r\n\r\n\r\n"
    )
    assert render_response(TellResponse(did_remove=("local",))) == (
        b"SPAMD/1.1 0 EX_OK\r\nDidRemove: local\r\n\r\n\r\n"
    )
    assert render_response(TellResponse()) == b"SPAMD/1.1 0 EX_OK\r\n\r\n\r\n"


def test_pong() -> None:
    assert render_response(PongResponse()) == b"SPAMD/1.5 0 PONG\r\n"


def test_timeout_and_tell_refusals() -> None:
    timeout = ErrorResponse(ExitCode.TIMEOUT, "(30 second socket timeout reading input)")
    assert render_response(timeout) == (
        b"SPAMD/1.0 79 Timeout: (30 second socket timeout reading input)\r\n"
    )
    refused = ErrorResponse(ExitCode.UNAVAILABLE, "TELL commands are not enabled")
    assert render_response(refused) == (
        b"SPAMD/1.0 69 Service Unavailable: TELL commands are not enabled\r\n"
    )


def test_details_cannot_break_the_status_line() -> None:
    line = render_response(ErrorResponse(ExitCode.PROTOCOL, "a\r\nb\x00c" + "x" * 500))
    assert line.count(b"\r\n") == 1
    assert line.endswith(b"\r\n")
    assert line.startswith(b"SPAMD/1.0 76 Bad header line: a??b?c")
    assert len(line) < 300


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (InvalidMessage("no header"), b"SPAMD/1.0 65 Data error: no header\r\n"),
        (MessageTooLarge("too big"), b"SPAMD/1.0 65 Data error: too big\r\n"),
        (InvalidLabel("eggs"), b"SPAMD/1.0 64 Usage error: eggs\r\n"),
        (
            StorageUnavailable("host db.internal refused"),
            b"SPAMD/1.0 75 Temporary failure: storage_unavailable\r\n",
        ),
        (StorageConflict("deadlock"), b"SPAMD/1.0 75 Temporary failure: storage_conflict\r\n"),
        (ConfigurationError("x"), b"SPAMD/1.0 78 Configuration error: configuration_error\r\n"),
        (RuntimeError("secret"), b"SPAMD/1.0 70 Internal error: internal\r\n"),
        (RecursionError("deep"), b"SPAMD/1.0 70 Internal error: internal\r\n"),
        (Overloaded("full"), b"SPAMD/1.0 75 Temporary failure: overloaded\r\n"),
        (MemoryError(), b"SPAMD/1.0 75 Temporary failure: out_of_memory\r\n"),
    ],
)
def test_the_error_hierarchy_maps_to_sysexits(error: Exception, line: bytes) -> None:
    assert render_response(error_response(error)) == line


# --- what check replies present ------------------------------------------------------


@pytest.mark.parametrize(
    ("score", "is_spam", "shown"),
    [
        (7.3, True, "7.3"),
        (-2.04, False, "-2.0"),
        (4.94, False, "4.9"),
        (4.96, False, "4.9"),  # rounds to 5.0, but it is not spam: shown under the threshold
        (5.0, False, "4.9"),
        (23.5, False, "4.9"),  # e.g. not enough training yet: never above the threshold
        (5.0, True, "5.0"),
        (-0.04, False, "-0.0"),
    ],
)
def test_wire_score(score: float, is_spam: bool, shown: str) -> None:
    assert wire_score(score, 5.0, is_spam) == shown


def test_headers_keep_the_messages_line_endings_and_bytes() -> None:
    unix = b"From: a@example.org\nSubject: caf\xc3\xa9\n\nbody\n\xff\n"
    assert add_headers(unix, [("X-Spam-Flag", "YES")]) == b"X-Spam-Flag: YES\n" + unix


def test_headers_go_after_an_mbox_from_line() -> None:
    mbox = b"From alice@example.org Tue Mar  3 10:15:00 2026\nFrom: a@example.org\n\nb\n"
    assert add_headers(mbox, [("X-Spam-Level", "")]) == (
        b"From alice@example.org Tue Mar  3 10:15:00 2026\nX-Spam-Level:\n"
        b"From: a@example.org\n\nb\n"
    )


def test_long_headers_fold_at_spaces_and_after_commas() -> None:
    value = (
        "Yes, score=16.3 required=5.0 tests=limited(+2.90),casino(+2.85),million(+2.79),"
        "discount(+2.72),offer(+2.72) version=spamfilter"
    )
    assert add_headers(b"A: b\r\n\r\n", [("X-Spam-Status", value)]) == (
        b"X-Spam-Status: Yes, score=16.3 required=5.0 tests=limited(+2.90),\r\n"
        b"\tcasino(+2.85),million(+2.79),discount(+2.72),offer(+2.72) version=spamfilter\r\n"
        b"A: b\r\n\r\n"
    )


@pytest.mark.parametrize(
    ("message", "block"),
    [
        (b"A: b\r\n\r\nbody\r\n\r\nmore", b"A: b\r\n\r\n"),
        (b"A: b\nC: d\n\nbody", b"A: b\nC: d\n\n"),
        (b"A: b\r\n", b"A: b\r\n"),
    ],
)
def test_header_block(message: bytes, block: bytes) -> None:
    assert header_block(message) == block
