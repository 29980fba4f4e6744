"""The milter codec on byte fixtures: frames written out by hand from mfdef.h's layout."""

from __future__ import annotations

import struct

import pytest

from app.adapters.milter.protocol import (
    MAX_FRAME,
    Abort,
    Action,
    BodyChunk,
    Command,
    Connect,
    Data,
    DefineMacros,
    EndOfHeaders,
    EndOfMessage,
    FrameDecoder,
    Header,
    Helo,
    MailFrom,
    OptionNegotiation,
    ProtocolError,
    Quit,
    QuitNewConnection,
    RcptTo,
    Step,
    Unknown,
    decode_command,
)
from app.adapters.milter.responses import (
    Accept,
    AddHeader,
    ChangeHeader,
    Continue,
    Discard,
    InsertHeader,
    Negotiate,
    Progress,
    Quarantine,
    Reject,
    ReplyCode,
    Response,
    Skip,
    TempFail,
    encode,
    negotiate,
)


def frame(body: bytes) -> bytes:
    """A frame as the MTA writes it: 4-byte big-endian length, then code and data."""
    return struct.pack("!I", len(body)) + body


def decode_one(body: bytes) -> Command:
    (command,) = FrameDecoder().feed(frame(body))
    return command


# Postfix 3.7's offer with milter_protocol = 6: every action, and every step flag.
POSTFIX_OFFER = b"O\x00\x00\x00\x06\x00\x00\x01\xff\x00\x1f\xff\xff"


def test_option_negotiation_is_decoded_and_answered_with_what_we_want_of_the_offer() -> None:
    offer = decode_one(POSTFIX_OFFER)
    assert offer == OptionNegotiation(6, Action(0x1FF), Step(0x1FFFFF))
    assert isinstance(offer, OptionNegotiation)
    reply = negotiate(offer, Action.ADD_HEADERS | Action.QUARANTINE, Step.SKIP)
    assert encode(reply) == frame(b"O" + struct.pack("!III", 6, 0x21, 0x400))


def test_negotiation_never_asks_for_more_than_the_mta_offers() -> None:
    old = OptionNegotiation(2, Action.ADD_HEADERS | Action.CHANGE_BODY, Step(0x7F))
    reply = negotiate(old, Action.ADD_HEADERS | Action.QUARANTINE, Step.SKIP)
    assert reply == Negotiate(2, Action.ADD_HEADERS, Step(0))
    newer = OptionNegotiation(7, Action(0x1FF), Step(0x1FFFFF))
    assert negotiate(newer, Action.ADD_HEADERS, Step(0)).version == 6
    with pytest.raises(ProtocolError, match="too old"):
        negotiate(OptionNegotiation(1, Action(0), Step(0)), Action(0), Step(0))


@pytest.mark.parametrize(
    ("body", "command"),
    [
        (b"Cmx.example\x004\x30\x39192.0.2.1\x00", Connect("mx.example", "4", 12345, "192.0.2.1")),
        (b"C[2001:db8::1]\x006\x00\x192001:db8::1\x00",
         Connect("[2001:db8::1]", "6", 25, "2001:db8::1")),
        (b"Clocalhost\x00L\x00\x00/run/x.sock\x00", Connect("localhost", "L", 0, "/run/x.sock")),
        (b"Cunknown\x00U", Connect("unknown", "U", 0, "")),
        (b"Hclient.example\x00", Helo("client.example")),
        (b"M<a@example.org>\x00BODY=8BITMIME\x00SIZE=100\x00",
         MailFrom("a@example.org", ("BODY=8BITMIME", "SIZE=100"))),
        (b"M<>\x00", MailFrom("", ())),
        (b"R<b@example.net>\x00", RcptTo("b@example.net", ())),
        (b"T", Data()),
        (b"LSubject\x00Hello\x00", Header("Subject", b"Hello")),
        (b"LX-Empty\x00\x00", Header("X-Empty", b"")),
        (b"LReceived\x00from a\n\tby b\x00", Header("Received", b"from a\n\tby b")),
        (b"N", EndOfHeaders()),
        (b"Bbody text\r\n", BodyChunk(b"body text\r\n")),
        (b"E", EndOfMessage(b"")),
        (b"Elast piece\r\n", EndOfMessage(b"last piece\r\n")),
        (b"A", Abort()),
        (b"Q", Quit()),
        (b"K", QuitNewConnection()),
        (b"UHELP\x00", Unknown(b"HELP")),
        (b"DMi\x00ABC123\x00{auth_type}\x00\x00",
         DefineMacros("M", {"i": "ABC123", "{auth_type}": ""})),
        (b"DC", DefineMacros("C", {})),
    ],
)  # fmt: skip
def test_every_command_is_decoded(body: bytes, command: Command) -> None:
    assert decode_one(body) == command


@pytest.mark.parametrize(
    ("response", "body"),
    [
        (Continue(), b"c"),
        (Accept(), b"a"),
        (Reject(), b"r"),
        (TempFail(), b"t"),
        (Discard(), b"d"),
        (Skip(), b"s"),
        (Progress(), b"p"),
        (ReplyCode("550", "5.7.1", "Message rejected as spam"),
         b"y550 5.7.1 Message rejected as spam\x00"),
        (ReplyCode("451", "", "Try later"), b"y451 Try later\x00"),
        (AddHeader("X-Spam-Flag", "YES"), b"hX-Spam-Flag\x00YES\x00"),
        (InsertHeader(0, "X-Spam-Status", "No, score=-3.0"),
         b"i\x00\x00\x00\x00X-Spam-Status\x00No, score=-3.0\x00"),
        (InsertHeader(3, "X-Spam-Level", ""), b"i\x00\x00\x00\x03X-Spam-Level\x00\x00"),
        (ChangeHeader(2, "X-Spam-Flag", ""), b"m\x00\x00\x00\x02X-Spam-Flag\x00\x00"),
        (Quarantine("spam: score 9.0"), b"qspam: score 9.0\x00"),
        (Negotiate(6, Action(0x31), Step(0)), b"O\x00\x00\x00\x06\x00\x00\x00\x31\x00\x00\x00\x00"),
    ],
)  # fmt: skip
def test_every_response_is_encoded(response: Response, body: bytes) -> None:
    assert encode(response) == frame(body)


@pytest.mark.parametrize(
    "response",
    [
        AddHeader("Bad Name", "x"),
        AddHeader("Bad:Name", "x"),
        AddHeader("", "x"),
        InsertHeader(0, "X-Ok", "nul\x00inside"),
        ReplyCode("250", "2.0.0", "not a rejection"),
        ReplyCode("55", "5.7.1", "short"),
    ],
)
def test_responses_that_cannot_be_sent_are_refused(response: Response) -> None:
    with pytest.raises(ValueError):
        encode(response)


def test_frames_split_across_reads_are_reassembled() -> None:
    stream = frame(POSTFIX_OFFER) + frame(b"LSubject\x00Hi\x00") + frame(b"B" + b"x" * 70_000)
    decoder = FrameDecoder()
    commands: list[Command] = []
    for start in range(0, len(stream), 7):  # 7-byte reads: every boundary falls mid-field
        commands += decoder.feed(stream[start : start + 7])
    assert [type(c) for c in commands] == [OptionNegotiation, Header, BodyChunk]
    assert commands[2] == BodyChunk(b"x" * 70_000)
    assert decoder.pending == 0


def test_several_frames_in_one_read_are_all_decoded() -> None:
    decoder = FrameDecoder()
    commands = decoder.feed(frame(b"T") + frame(b"N") + frame(b"E") + frame(b"Q")[:3])
    assert commands == [Data(), EndOfHeaders(), EndOfMessage(b"")]
    assert decoder.pending == 3
    assert decoder.feed(frame(b"Q")[3:]) == [Quit()]


def test_a_64_kib_body_chunk_fits_and_a_huge_frame_is_refused() -> None:
    chunk = b"B" + b"y" * 65_536  # miltertest's mt.bodyfile chunk
    assert FrameDecoder().feed(frame(chunk)) == [BodyChunk(b"y" * 65_536)]
    with pytest.raises(ProtocolError, match="frame length"):
        FrameDecoder().feed(struct.pack("!I", MAX_FRAME + 1))
    with pytest.raises(ProtocolError, match="frame length"):
        FrameDecoder().feed(struct.pack("!I", 0))


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"Z", "unknown milter command"),
        (b"O\x00\x00\x00\x06", "option negotiation"),
        (b"C", "connect"),
        (b"Cname", "connect"),
        (b"L", "header"),
        (b"LSubject\x00", "header"),
        (b"M", "MAIL"),
        (b"D", "macro"),
    ],
)
def test_malformed_commands_raise_protocol_errors(body: bytes, problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        decode_command(body[:1], body[1:])
