"""The per-connection state machine, without sockets: commands in, responses or work out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pytest

from app.adapters.milter.protocol import (
    Abort,
    Action,
    BodyChunk,
    Command,
    Connect,
    Data,
    DefineMacros,
    EndOfHeaders,
    EndOfMessage,
    Header,
    Helo,
    MailFrom,
    OptionNegotiation,
    Quit,
    QuitNewConnection,
    RcptTo,
    Step,
    Unknown,
)
from app.adapters.milter.responses import (
    ChangeHeader,
    Continue,
    InsertHeader,
    Negotiate,
    Quarantine,
    Skip,
    TempFail,
    encode,
)
from app.adapters.milter.session import CLOSE, REJECT, Message, NoRoom, Session
from app.admission import BodyBudget
from app.service import MailReport

EVERYTHING = OptionNegotiation(6, Action(0x1FF), Step(0x1FFFFF))
HEADERS = [("X-Spam-Status", "No, score=-3.0"), ("X-Spam-Level", "")]


def report(action: str = "accept", headers: Sequence[tuple[str, str]] = HEADERS) -> MailReport:
    return MailReport(
        is_spam=action != "accept",
        score=12.5 if action != "accept" else -3.0,
        required=5.0,
        headers=list(headers),
        action=action,
    )


def negotiated(offer: OptionNegotiation = EVERYTHING, cap: int = 1024 * 1024) -> Session:
    session = Session(cap)
    session.handle(offer)
    return session


def feed(session: Session, commands: Sequence[Command]) -> list[object]:
    return [session.handle(command) for command in commands]


def transaction(*headers: tuple[str, bytes], body: Sequence[bytes] = (b"Hi\r\n",)) -> list[Command]:
    return [
        MailFrom("a@example.org", ()),
        RcptTo("first@example.net", ()),
        RcptTo("second@example.net", ()),
        Data(),
        *(Header(name, value) for name, value in headers),
        EndOfHeaders(),
        *(BodyChunk(chunk) for chunk in body),
        EndOfMessage(b""),
    ]


def test_negotiation_takes_headers_changes_quarantine_and_skip() -> None:
    session = Session(1024)
    (reply,) = session.handle(EVERYTHING)  # type: ignore[misc]
    wanted = Action.ADD_HEADERS | Action.CHANGE_HEADERS | Action.QUARANTINE
    assert reply == Negotiate(6, wanted, Step.SKIP)
    assert (session.actions, session.steps) == (wanted, Step.SKIP)


def test_every_event_before_the_message_continues_and_macros_get_no_reply() -> None:
    session = negotiated()
    events: list[Command] = [
        DefineMacros("C", {"j": "mx.example"}),
        Connect("client.example", "4", 4000, "192.0.2.1"),
        Helo("client.example"),
        Unknown(b"XFOO"),
        DefineMacros("M", {"i": "QID42"}),
    ]
    assert feed(session, events) == [(), (Continue(),), (Continue(),), (Continue(),), ()]


def test_the_message_is_rebuilt_with_crlf_and_handed_back_with_its_recipients() -> None:
    session = negotiated()
    session.handle(DefineMacros("E", {"i": "QID42"}))
    outcomes = feed(
        session,
        transaction(
            ("Subject", b"Hello"),
            ("Received", b"from a\n\tby b"),
            body=[b"line one\r\n", b"line two\r\n"],
        ),
    )
    assert all(outcome == (Continue(),) for outcome in outcomes[:-1])
    assert outcomes[-1] == Message(
        raw=b"Subject: Hello\r\nReceived: from a\r\n\tby b\r\n\r\nline one\r\nline two\r\n",
        recipients=("first@example.net", "second@example.net"),
        truncated=False,
        queue_id="QID42",
    )


def test_a_message_without_body_or_end_of_headers_still_has_its_separator() -> None:
    session = negotiated()
    session.handle(MailFrom("a@example.org", ()))
    session.handle(Header("Subject", b"x"))
    message = session.handle(EndOfMessage(b"tail\r\n"))
    assert isinstance(message, Message)
    assert message.raw == b"Subject: x\r\n\r\ntail\r\n"
    assert message.recipients == ()
    assert message.user("first") is None and message.user("site") is None


@pytest.mark.parametrize(
    ("recipients", "several", "user"),
    [
        (("alice@example.net",), "site", "alice@example.net"),
        (("alice@example.net",), "first", "alice@example.net"),
        (("alice@example.net", "bob@example.net"), "site", None),
        (("alice@example.net", "bob@example.net"), "first", "alice@example.net"),
    ],
)
def test_the_user_whose_model_judges(
    recipients: tuple[str, ...], several: Literal["site", "first"], user: str | None
) -> None:
    message = Message(b"Subject: x\r\n\r\n", recipients, truncated=False, queue_id=None)
    assert message.user(several) == user


def test_accept_inserts_our_headers_at_the_top_and_deletes_forged_ones_last_first() -> None:
    session = negotiated()
    feed(
        session,
        transaction(
            ("X-Spam-Flag", b"YES"),
            ("Subject", b"Hi"),
            ("x-spam-flag", b"YES"),
            ("X-Spam-Status", b"Yes, score=99"),
        ),
    )
    assert session.verdict(report()) == (
        ChangeHeader(1, "X-Spam-Status", ""),
        ChangeHeader(2, "x-spam-flag", ""),
        ChangeHeader(1, "X-Spam-Flag", ""),
        InsertHeader(0, "X-Spam-Status", "No, score=-3.0"),
        InsertHeader(1, "X-Spam-Level", ""),
        Continue(),
    )


def test_a_forged_field_with_an_unsendable_name_is_left_alone() -> None:
    session = negotiated()
    feed(session, transaction(("X-Spam-\xe4", b"YES"), ("X-Spam-Flag", b"YES")))
    responses = session.verdict(report(headers=[]))
    assert responses == (ChangeHeader(1, "X-Spam-Flag", ""), Continue())
    assert all(encode(response) for response in responses)


def test_reject_is_a_550_reply_without_edits() -> None:
    session = negotiated()
    feed(session, transaction(("X-Spam-Flag", b"NO")))
    assert session.verdict(report("reject")) == (REJECT,)
    assert REJECT.code == "550" and REJECT.status == "5.7.1"


def test_quarantine_edits_headers_then_holds_the_message() -> None:
    session = negotiated()
    feed(session, transaction())
    responses = session.verdict(report("quarantine"))
    assert responses[:2] == (
        InsertHeader(0, "X-Spam-Status", "No, score=-3.0"),
        InsertHeader(1, "X-Spam-Level", ""),
    )
    assert responses[2:] == (Quarantine("spam: score 12.5, required 5.0"), Continue())


def test_what_the_mta_did_not_offer_is_not_done() -> None:
    offer = OptionNegotiation(6, Action.ADD_HEADERS, Step(0))
    session = negotiated(offer)
    feed(session, transaction(("X-Spam-Flag", b"YES")))
    # No CHANGE_HEADERS: forged fields stay; no QUARANTINE: the message is only marked.
    assert session.verdict(report("quarantine")) == (
        InsertHeader(0, "X-Spam-Status", "No, score=-3.0"),
        InsertHeader(1, "X-Spam-Level", ""),
        Continue(),
    )


def test_failure_tempfails_or_lets_the_message_through_without_its_forged_headers() -> None:
    session = negotiated()
    feed(session, transaction(("X-Spam-Flag", b"NO"), ("Subject", b"Hi"), ("X-Spam-Flag", b"NO")))
    assert session.failure("tempfail") == (TempFail(),)
    # Never a bare SMFIR_ACCEPT: it would deliver the sender's X-Spam-Flag: NO as ours.
    assert session.failure("accept") == (
        ChangeHeader(2, "X-Spam-Flag", ""),
        ChangeHeader(1, "X-Spam-Flag", ""),
        Continue(),
    )


def test_failure_without_header_changes_offered_accepts_with_no_edits() -> None:
    session = negotiated(OptionNegotiation(6, Action.ADD_HEADERS, Step(0)))
    feed(session, transaction(("X-Spam-Flag", b"NO")))
    assert session.failure("accept") == (Continue(),)


def test_state_is_reset_after_end_of_message_and_abort() -> None:
    session = negotiated()
    feed(session, transaction(("X-Spam-Flag", b"YES"), body=[b"first\r\n"]))
    session.verdict(report())
    feed(session, transaction(("Subject", b"aborted"), body=[b"junk\r\n"])[:-1])
    assert session.handle(Abort()) == ()
    *_, message = feed(session, transaction(("Subject", b"second"), body=[b"second\r\n"]))
    assert isinstance(message, Message)
    assert message.raw == b"Subject: second\r\n\r\nsecond\r\n"
    assert session.verdict(report(headers=[]))[0] == Continue()  # no forged field left over


def test_quit_closes_and_quit_nc_starts_over_on_the_same_connection() -> None:
    session = negotiated()
    session.handle(DefineMacros("C", {"j": "mx"}))
    feed(session, transaction()[:4])
    assert session.handle(QuitNewConnection()) == ()
    assert session.macros == {}
    assert session.actions  # negotiation holds for the next SMTP connection
    assert session.handle(Quit()) is CLOSE


def test_over_the_cap_the_head_is_kept_and_the_rest_skipped() -> None:
    session = negotiated(cap=64)
    outcomes = feed(session, transaction(("Subject", b"big"), body=[b"a" * 40, b"b" * 40, b"c"]))
    assert outcomes[-4:-1] == [(Continue(),), (Skip(),), (Skip(),)]
    message = outcomes[-1]
    assert isinstance(message, Message) and message.truncated
    assert message.raw == (b"Subject: big\r\n\r\n" + b"a" * 40 + b"b" * 8)
    assert len(message.raw) == 64


def test_over_the_cap_without_skip_the_body_is_still_read_to_the_end() -> None:
    session = negotiated(OptionNegotiation(6, Action(0x1FF), Step(0)), cap=32)
    outcomes = feed(session, transaction(body=[b"a" * 40, b"b" * 40]))
    assert outcomes[-3:-1] == [(Continue(),), (Continue(),)]
    message = outcomes[-1]
    assert isinstance(message, Message) and message.truncated and len(message.raw) == 32


# The buffered-bytes budget ---------------------------------------------------------------


def test_the_message_takes_its_bytes_from_the_budget_and_hands_them_on() -> None:
    budget = BodyBudget(1024)
    session = Session(1024, budget)
    session.handle(EVERYTHING)
    *_, message = feed(session, transaction(("Subject", b"x"), body=[b"hello\r\n"]))
    assert isinstance(message, Message) and message.hold is not None
    assert budget.held == message.hold.size == len(message.raw)
    assert session.buffered == 0  # the next message starts with nothing held
    message.hold.release()  # by whoever judged it
    assert budget.held == 0


def test_a_full_budget_skips_the_body_and_ends_in_no_room() -> None:
    budget = BodyBudget(64)
    session = Session(1024, budget)
    session.handle(EVERYTHING)
    outcomes = feed(
        session, transaction(("X-Spam-Flag", b"NO"), ("Subject", b"big"), body=[b"a" * 100, b"b"])
    )
    assert outcomes[-3:-1] == [(Skip(),), (Skip(),)]
    assert outcomes[-1] == NoRoom(queue_id=None)
    assert budget.held == 0  # given back at once, for the other connections
    # tempfailed as a transient condition; let through, the forged field would still go
    assert session.failure("tempfail") == (TempFail(),)
    assert session.failure("accept") == (ChangeHeader(1, "X-Spam-Flag", ""), Continue())
    # the next message on the connection fits again
    *_, message = feed(session, transaction(("Subject", b"small")))
    assert isinstance(message, Message) and message.raw.startswith(b"Subject: small")


def test_abort_and_close_give_the_bytes_of_a_message_in_progress_back() -> None:
    budget = BodyBudget(1024)
    session = Session(1024, budget)
    session.handle(EVERYTHING)
    feed(session, transaction(("Subject", b"x"))[:-1])
    assert budget.held == session.buffered > 0
    session.handle(Abort())
    assert budget.held == 0
    feed(session, transaction(("Subject", b"x"))[:-1])
    assert budget.held > 0
    session.close()
    session.close()
    assert budget.held == 0


def test_a_message_cut_off_by_the_budget_gives_its_bytes_back_and_ends_in_no_room() -> None:
    budget = BodyBudget(1024, stall_seconds=0.0)
    session = Session(1024, budget)
    session.handle(EVERYTHING)
    for _ in range(2):  # the next message on the connection may be cut off too
        feed(session, transaction(("Subject", b"x"))[:-1])
        assert budget.held == session.buffered > 0
        waiter = budget.reserve()
        assert budget.evict_stalled(waiter, 1024) == 1
        assert budget.held == 0  # at once, for the waiter
        assert session.handle(EndOfMessage(b"")) == NoRoom(queue_id=None)
