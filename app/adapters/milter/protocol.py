"""The milter wire protocol (version 6) as a pure codec: bytes in, typed commands out (here);
typed responses in, bytes out (``responses``). No sockets, no service, no settings.

Every packet in either direction is a frame: a 4-byte big-endian length, then that many
bytes, of which the first is the command (MTA -> filter, ``SMFIC_*``) or response
(filter -> MTA, ``SMFIR_*``) code and the rest its data. Strings are NUL-terminated. The codes
and flag values are those of Sendmail's ``include/libmilter/mfdef.h``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntFlag

VERSION = 6  # SMFI_PROT_VERSION
MIN_VERSION = 2  # the oldest protocol with option negotiation
# Why 1 MiB: the largest body chunk either MTA sends is 64 KiB (MILTER_CHUNK_SIZE; Postfix and
# miltertest send 65,535 and 65,536 bytes), and libmilter's largest negotiable data size is
# 1 MiB (SMFIP_MDS_1M). A longer frame is a broken or hostile peer, not mail.
MAX_FRAME = 1024 * 1024 + 1
# The wire formats of a frame's length prefix and of an option negotiation's three words.
LENGTH = struct.Struct("!I")
OPTIONS = struct.Struct("!III")
_PORT = struct.Struct("!H")


class ProtocolError(ValueError):
    """The peer sent bytes that are not a valid milter frame or command."""


class Action(IntFlag):
    """What the filter may do to a message (``SMFIF_*``), agreed in option negotiation."""

    ADD_HEADERS = 0x01
    CHANGE_BODY = 0x02
    ADD_RECIPIENT = 0x04
    DELETE_RECIPIENT = 0x08
    CHANGE_HEADERS = 0x10
    QUARANTINE = 0x20
    CHANGE_FROM = 0x40
    ADD_RECIPIENT_ARGS = 0x80
    SET_MACRO_LIST = 0x100


class Step(IntFlag):
    """Protocol options (``SMFIP_*``): events the MTA may skip, replies it may not expect."""

    NO_CONNECT = 0x01
    NO_HELO = 0x02
    NO_MAIL = 0x04
    NO_RCPT = 0x08
    NO_BODY = 0x10
    NO_HEADERS = 0x20
    NO_EOH = 0x40
    NO_HEADER_REPLY = 0x80
    NO_UNKNOWN = 0x100
    NO_DATA = 0x200
    SKIP = 0x400
    REJECTED_RCPT = 0x800
    NO_CONNECT_REPLY = 0x1000
    NO_HELO_REPLY = 0x2000
    NO_MAIL_REPLY = 0x4000
    NO_RCPT_REPLY = 0x8000
    NO_DATA_REPLY = 0x10000
    NO_UNKNOWN_REPLY = 0x20000
    NO_EOH_REPLY = 0x40000
    NO_BODY_REPLY = 0x80000
    HEADER_LEADING_SPACE = 0x100000


# Commands, MTA -> filter ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OptionNegotiation:
    """SMFIC_OPTNEG 'O': the protocol version, actions and steps the MTA offers."""

    version: int
    actions: Action
    steps: Step


@dataclass(frozen=True, slots=True)
class DefineMacros:
    """SMFIC_MACRO 'D': macro values for the command ``stage`` that follows (``i``: queue id)."""

    stage: str
    macros: dict[str, str]


@dataclass(frozen=True, slots=True)
class Connect:
    """SMFIC_CONNECT 'C': the SMTP client; family is '4', '6', 'L' (unix) or 'U' (unknown)."""

    hostname: str
    family: str
    port: int
    address: str


@dataclass(frozen=True, slots=True)
class Helo:
    """SMFIC_HELO 'H': the HELO/EHLO argument."""

    name: str


@dataclass(frozen=True, slots=True)
class MailFrom:
    """SMFIC_MAIL 'M': the envelope sender (angle brackets removed) and ESMTP arguments."""

    address: str
    arguments: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RcptTo:
    """SMFIC_RCPT 'R': one envelope recipient (angle brackets removed) and ESMTP arguments."""

    address: str
    arguments: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Data:
    """SMFIC_DATA 'T': the DATA command."""


@dataclass(frozen=True, slots=True)
class Header:
    """SMFIC_HEADER 'L': one header field; a folded value keeps its inner line breaks."""

    name: str
    value: bytes


@dataclass(frozen=True, slots=True)
class EndOfHeaders:
    """SMFIC_EOH 'N': the end of the header block."""


@dataclass(frozen=True, slots=True)
class BodyChunk:
    """SMFIC_BODY 'B': a piece of the body (at most 64 KiB from Postfix and miltertest)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class EndOfMessage:
    """SMFIC_BODYEOB 'E': the end of the message, with a last body piece (usually none)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Abort:
    """SMFIC_ABORT 'A': forget the current message; the connection goes on (no reply)."""


@dataclass(frozen=True, slots=True)
class Quit:
    """SMFIC_QUIT 'Q': close the connection (no reply)."""


@dataclass(frozen=True, slots=True)
class QuitNewConnection:
    """SMFIC_QUIT_NC 'K': the SMTP connection ended; a new one follows on this socket."""


@dataclass(frozen=True, slots=True)
class Unknown:
    """SMFIC_UNKNOWN 'U': an SMTP command the MTA does not know."""

    command: bytes


Command = (
    OptionNegotiation | DefineMacros | Connect | Helo | MailFrom | RcptTo | Data | Header
    | EndOfHeaders | BodyChunk | EndOfMessage | Abort | Quit | QuitNewConnection | Unknown
)  # fmt: skip


class FrameDecoder:
    """Reassembles frames from arbitrary reads and decodes them into commands."""

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._buffer = bytearray()
        self._max_frame = max_frame

    @property
    def pending(self) -> int:
        """Bytes received that do not yet make a whole frame."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Command]:
        """Add bytes read from the peer; return the commands of every frame now complete."""
        self._buffer += data
        commands: list[Command] = []
        while len(self._buffer) >= LENGTH.size:
            (length,) = LENGTH.unpack_from(self._buffer)
            if length == 0 or length > self._max_frame:
                raise ProtocolError(f"frame length {length} is outside 1..{self._max_frame}")
            end = LENGTH.size + length
            if len(self._buffer) < end:
                break
            code = bytes(self._buffer[4:5])
            payload = bytes(self._buffer[5:end])
            del self._buffer[:end]
            commands.append(decode_command(code, payload))
        return commands


def decode_command(code: bytes, payload: bytes) -> Command:
    """One command from its code byte and data; raises ProtocolError when malformed."""
    simple = _SIMPLE_COMMANDS.get(code)
    if simple is not None:
        return simple
    decoder = _DECODERS.get(code)
    if decoder is None:
        raise ProtocolError(f"unknown milter command {code!r}")
    return decoder(payload)


def _strings(payload: bytes, what: str) -> list[bytes]:
    """NUL-terminated strings; the last terminator may be missing (Sendmail is not strict)."""
    if not payload:
        raise ProtocolError(f"{what}: no data")
    return payload.removesuffix(b"\0").split(b"\0")


def _str(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _address(data: bytes) -> str:
    text = _str(data).strip()
    return text[1:-1] if text.startswith("<") and text.endswith(">") else text


def _decode_options(payload: bytes) -> OptionNegotiation:
    if len(payload) < OPTIONS.size:
        raise ProtocolError(f"option negotiation: {len(payload)} bytes, expected 12")
    version, actions, steps = OPTIONS.unpack_from(payload)
    return OptionNegotiation(version, Action(actions), Step(steps))


def _decode_macros(payload: bytes) -> DefineMacros:
    if not payload:
        raise ProtocolError("macro definition: no command code")
    stage = payload[:1].decode("latin-1")
    items = payload[1:].removesuffix(b"\0").split(b"\0") if len(payload) > 1 else []
    # A name without a value (an odd count) is dropped, as libmilter does.
    pairs = zip(items[::2], items[1::2], strict=False)
    return DefineMacros(stage, {_str(name): _str(value) for name, value in pairs})


def _decode_connect(payload: bytes) -> Connect:
    hostname, sep, rest = payload.partition(b"\0")
    if not sep or not rest:
        raise ProtocolError("connect: no address family")
    family = rest[:1].decode("latin-1")
    if family == "U" or len(rest) < 1 + _PORT.size:
        return Connect(_str(hostname), family, 0, "")
    (port,) = _PORT.unpack_from(rest, 1)
    address = rest[1 + _PORT.size :].removesuffix(b"\0")
    return Connect(_str(hostname), family, port, _str(address))


def _decode_envelope(payload: bytes, what: str) -> tuple[str, tuple[str, ...]]:
    first, *arguments = _strings(payload, what)
    return _address(first), tuple(_str(a) for a in arguments)


def _decode_header(payload: bytes) -> Header:
    parts = _strings(payload, "header")
    if len(parts) < 2 or not parts[0]:
        raise ProtocolError("header: expected a name and a value")
    # A value may hold NUL only if the MTA passed one through; keep everything after the name.
    return Header(parts[0].decode("latin-1"), b"\0".join(parts[1:]))


_SIMPLE_COMMANDS: dict[bytes, Command] = {
    b"T": Data(),
    b"N": EndOfHeaders(),
    b"A": Abort(),
    b"Q": Quit(),
    b"K": QuitNewConnection(),
}

_DECODERS: dict[bytes, Callable[[bytes], Command]] = {
    b"O": _decode_options,
    b"D": _decode_macros,
    b"C": _decode_connect,
    b"H": lambda p: Helo(_str(p.removesuffix(b"\0"))),
    b"M": lambda p: MailFrom(*_decode_envelope(p, "MAIL")),
    b"R": lambda p: RcptTo(*_decode_envelope(p, "RCPT")),
    b"L": _decode_header,
    b"B": BodyChunk,
    b"E": EndOfMessage,
    b"U": lambda p: Unknown(p.removesuffix(b"\0")),
}
