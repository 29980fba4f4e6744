"""Milter responses (filter -> MTA, ``SMFIR_*``) as typed values, and their encoding.

The other half of the codec in ``protocol``: typed responses in, frames out. Every encoder
refuses what the MTA could not parse (a NUL inside a string, a header name with a colon, a
reply code that is not 4xx or 5xx) rather than send it.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.adapters.milter.protocol import (
    LENGTH,
    MIN_VERSION,
    OPTIONS,
    VERSION,
    Action,
    OptionNegotiation,
    ProtocolError,
    Step,
)


@dataclass(frozen=True, slots=True)
class Negotiate:
    """The reply to SMFIC_OPTNEG: the version, actions and steps the filter takes."""

    version: int
    actions: Action
    steps: Step


@dataclass(frozen=True, slots=True)
class Continue:
    """SMFIR_CONTINUE 'c': go on; at end of message, accept it (with any edits sent)."""


@dataclass(frozen=True, slots=True)
class Accept:
    """SMFIR_ACCEPT 'a': accept the message without further filtering."""


@dataclass(frozen=True, slots=True)
class Reject:
    """SMFIR_REJECT 'r': reject with the MTA's default 5xx reply."""


@dataclass(frozen=True, slots=True)
class TempFail:
    """SMFIR_TEMPFAIL 't': reject with the MTA's default 4xx reply (try again later)."""


@dataclass(frozen=True, slots=True)
class Discard:
    """SMFIR_DISCARD 'd': accept, then silently drop the message."""


@dataclass(frozen=True, slots=True)
class Skip:
    """SMFIR_SKIP 's': send no more body chunks (needs Step.SKIP)."""


@dataclass(frozen=True, slots=True)
class Progress:
    """SMFIR_PROGRESS 'p': still working; restarts the MTA's timeout."""


@dataclass(frozen=True, slots=True)
class ReplyCode:
    """SMFIR_REPLYCODE 'y': reject with this SMTP reply, e.g. 550 5.7.1 text."""

    code: str
    status: str
    text: str


@dataclass(frozen=True, slots=True)
class AddHeader:
    """SMFIR_ADDHEADER 'h': append a header field (needs Action.ADD_HEADERS)."""

    name: str
    value: str


@dataclass(frozen=True, slots=True)
class InsertHeader:
    """SMFIR_INSHEADER 'i': insert a header field at ``index`` (0 is the top)."""

    index: int
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class ChangeHeader:
    """SMFIR_CHGHEADER 'm': replace the ``index``-th (from 1) field of this name; an empty
    value deletes it (needs Action.CHANGE_HEADERS)."""

    index: int
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class Quarantine:
    """SMFIR_QUARANTINE 'q': hold the message with a reason (needs Action.QUARANTINE)."""

    reason: str


Response = (
    Negotiate | Continue | Accept | Reject | TempFail | Discard | Skip | Progress | ReplyCode
    | AddHeader | InsertHeader | ChangeHeader | Quarantine
)  # fmt: skip

_NO_DATA: dict[type[Response], bytes] = {
    Continue: b"c",
    Accept: b"a",
    Reject: b"r",
    TempFail: b"t",
    Discard: b"d",
    Skip: b"s",
    Progress: b"p",
}


def negotiate(offer: OptionNegotiation, actions: Action, steps: Step) -> Negotiate:
    """The reply to an offer: the lower version, and what we want of what the MTA offers.

    Postfix drops a filter that asks for an action it did not offer, or a higher version.
    """
    if offer.version < MIN_VERSION:
        raise ProtocolError(f"milter protocol version {offer.version} is too old")
    return Negotiate(min(offer.version, VERSION), actions & offer.actions, steps & offer.steps)


def encode(response: Response) -> bytes:
    """One response as a frame, ready to write."""
    code = _NO_DATA.get(type(response))
    if code is not None:
        return _frame(code)
    match response:
        case Negotiate(version, actions, steps):
            return _frame(b"O" + OPTIONS.pack(version, actions, steps))
        case ReplyCode(code=number, status=status, text=text):
            if len(number) != 3 or not number.isdigit() or number[0] not in "45":
                raise ValueError(f"reply code {number!r} is not 4xx or 5xx")
            return _frame(b"y" + _text(" ".join(p for p in (number, status, text) if p)))
        case AddHeader(name, value):
            return _frame(b"h" + _header_name(name) + _text(value))
        case InsertHeader(index, name, value):
            return _frame(b"i" + LENGTH.pack(index) + _header_name(name) + _text(value))
        case ChangeHeader(index, name, value):
            return _frame(b"m" + LENGTH.pack(index) + _header_name(name) + _text(value))
        case Quarantine(reason):
            return _frame(b"q" + _text(reason))
    raise TypeError(f"not a milter response: {response!r}")  # pragma: no cover


def _frame(body: bytes) -> bytes:
    return LENGTH.pack(len(body)) + body


def _text(value: str) -> bytes:
    data = value.encode("utf-8")
    if b"\0" in data:
        raise ValueError("milter strings cannot hold NUL")
    return data + b"\0"


def _header_name(name: str) -> bytes:
    if not name or any(ch in name for ch in ": \t\r\n\0") or not name.isascii():
        raise ValueError(f"invalid header name {name!r}")
    return name.encode("ascii") + b"\0"
