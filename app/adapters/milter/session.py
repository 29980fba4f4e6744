"""One milter connection as a pure state machine: commands in, responses (or work) out.

The session rebuilds the message the MTA streams (header fields, then body chunks) as
RFC 822 bytes with CRLF line ends and hands it back at end of message as a ``Message`` for
the transport to classify; ``verdict`` turns the service's MailReport into responses
(accept, reject or quarantine, as docs/integration/postfix.md tabulates). ``failure``
answers a message that could not be judged: SMFIR_TEMPFAIL, or the message let through with
the X-Spam-* fields it came with deleted, never a bare SMFIR_ACCEPT that would deliver a
forged ``X-Spam-Flag: NO`` as ours. Its bytes come from the process's ``BodyBudget`` as they
arrive (``NoRoom`` when it is full: tempfail); past ``max_message_bytes`` the head alone is
classified; past the caps of ``envelope`` it answers ``Refuse``. Nothing here decides what
is spam.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from app.adapters.milter.envelope import Macros, Recipients
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
    Quarantine,
    ReplyCode,
    Response,
    Skip,
    TempFail,
    negotiate,
)
from app.admission import BodyBudget, Reservation
from app.errors import Overloaded

if TYPE_CHECKING:
    from app.service import MailReport

# Add and change headers, quarantine; and skip the rest of an oversized body.
WANTED_ACTIONS = Action.ADD_HEADERS | Action.CHANGE_HEADERS | Action.QUARANTINE
WANTED_STEPS = Step.SKIP
REJECT = ReplyCode("550", "5.7.1", "Message rejected as spam")
# What Postfix answers past smtpd_recipient_limit.
TOO_MANY_RECIPIENTS = ReplyCode("452", "4.5.3", "Error: too many recipients")
OWN_HEADER_PREFIX = "x-spam-"
CRLF = b"\r\n"


@dataclass(frozen=True, slots=True)
class Message:
    """A whole message to classify: raw bytes (CRLF line ends), the envelope recipients,
    whether the size cap cut it, and the MTA's queue id (macro ``i``) for logs.

    ``hold`` is the budget reservation for ``raw``; release it once the message is judged.
    """

    raw: bytes
    recipients: tuple[str, ...]
    truncated: bool
    queue_id: str | None
    hold: Reservation | None = field(default=None, compare=False, repr=False)

    def user(self, several: Literal["site", "first"]) -> str | None:
        """Whose model judges the message: its one recipient; with several, the first one
        or (``site``) nobody, the site-wide model; with none, nobody."""
        if len(self.recipients) == 1 or (self.recipients and several == "first"):
            return self.recipients[0]
        return None


@dataclass(frozen=True, slots=True)
class NoRoom:
    """End of a message that could not be buffered: the process's byte budget was full."""

    queue_id: str | None


@dataclass(frozen=True, slots=True)
class Close:
    """The MTA said QUIT: close the connection without a reply."""


@dataclass(frozen=True, slots=True)
class Refuse:
    """The MTA broke a limit of the session (``reason``): send ``responses``, then close."""

    responses: tuple[Response, ...]
    reason: str


Outcome = tuple[Response, ...] | Message | NoRoom | Close | Refuse
CLOSE = Close()
_CONTINUE: tuple[Response, ...] = (Continue(),)


class Session:
    """The state of one MTA connection; one message at a time, any number per connection."""

    def __init__(self, max_message_bytes: int, budget: BodyBudget | None = None) -> None:
        """``budget`` is shared by every session of a process (None: one for this session
        alone, which the size cap never fills)."""
        self._cap = max_message_bytes
        self._budget = budget if budget is not None else BodyBudget(max_message_bytes)
        self._hold = self._budget.reserve(on_evict=self._cut_off)
        self.actions = Action(0)
        self.steps = Step(0)
        self._macros = Macros()
        self._deletions: tuple[Response, ...] = ()
        self._reset_message()

    def handle(self, command: Command) -> Outcome:
        """The responses to ``command`` (empty when none is due), a Message to classify,
        NoRoom (end of a message the budget had no room for), or Close."""
        match command:
            case OptionNegotiation():
                reply = negotiate(command, WANTED_ACTIONS, WANTED_STEPS)
                self.actions, self.steps = reply.actions, reply.steps
                return (reply,)
            case DefineMacros(stage=stage, macros=macros):
                # No reply is due to macros: the command they come before gets the tempfail.
                reason = self._macros.define(stage, macros)
                return () if reason is None else Refuse((TempFail(),), reason)
            case Header() | EndOfHeaders() | BodyChunk() | EndOfMessage():
                return self._content(command)
            case MailFrom():
                self._reset_message()
                return _CONTINUE
            case RcptTo(address=address):
                reason = self._recipients.add(address)
                return _CONTINUE if reason is None else Refuse((TOO_MANY_RECIPIENTS,), reason)
            case Connect() | Helo() | Data() | Unknown():
                return _CONTINUE
            case Abort():
                self._reset_message()
                return ()
            case QuitNewConnection():
                self._reset_message()
                self._macros.clear()
                return ()
            case Quit():
                return CLOSE
        raise AssertionError(f"unhandled command {command!r}")  # pragma: no cover

    def _content(self, command: Header | EndOfHeaders | BodyChunk | EndOfMessage) -> Outcome:
        self._in_content = True
        match command:
            case Header():
                self._add_header(command)
            case EndOfHeaders():
                self._end_headers()
            case BodyChunk(data=data):
                return (self._add_body(data),)
            case EndOfMessage(data=data):
                if data:
                    self._add_body(data)
                return self._message()
        return _CONTINUE

    def verdict(self, report: MailReport) -> tuple[Response, ...]:
        """The end-of-message responses for the service's report on the last message."""
        if report.action == "reject":
            return (REJECT,)
        inserts: list[Response] = []
        if Action.ADD_HEADERS in self.actions:
            inserts += [
                InsertHeader(i, name, value) for i, (name, value) in enumerate(report.headers)
            ]
        edits = (*self._deletions, *inserts)
        if report.action == "quarantine" and Action.QUARANTINE in self.actions:
            reason = f"spam: score {report.score:.1f}, required {report.required:.1f}"
            return (*edits, Quarantine(reason), Continue())
        return (*edits, Continue())

    def failure(self, on_error: Literal["accept", "tempfail"]) -> tuple[Response, ...]:
        """The end-of-message responses when the last message could not be judged: tempfail,
        or let it through with the X-Spam-* fields it came with deleted (when the MTA offered
        header changes; SMFIR_CONTINUE then accepts it with those edits)."""
        if on_error == "tempfail":
            return (TempFail(),)
        return (*self._deletions, Continue())

    def close(self) -> None:
        """The connection ended: give back the bytes of a message in progress, and drop the
        macros (idempotent)."""
        self._reset_message()
        self._macros.clear()

    @property
    def macros(self) -> dict[str, str]:
        """The macros the MTA has defined, a later stage's value over an earlier one's."""
        return self._macros.as_dict()

    @property
    def buffered(self) -> int:
        """Bytes of the message in progress held from the budget."""
        return self._hold.size

    @property
    def hold(self) -> Reservation:
        """The budget reservation of the message in progress."""
        return self._hold

    @property
    def in_content(self) -> bool:
        """Whether a message's content (header fields, body) has begun and not yet ended."""
        return self._in_content

    def wants(self, command: Command) -> int:
        """About how many bytes ``command`` would add to the buffer (0: none, or the message
        is cut already), so that the transport can wait for room in the budget first."""
        if self._no_room or self._truncated:
            return 0
        match command:
            case Header(name=name, value=value):
                size = len(name) + len(value) + 4
            case BodyChunk(data=data) | EndOfMessage(data=data):
                size = len(data) + 2
            case _:
                return 0
        return min(size, self._cap - len(self._buffer))

    def _cut_off(self) -> None:
        """The budget cut this message off (it stalled while others waited for room): drop
        its bytes now; at its end it is NoRoom, and tempfailed."""
        self._no_room = True
        self._hold.release()
        self._buffer = bytearray()

    def _reset_message(self) -> None:
        self._hold.release()
        # A fresh reservation per message: one cut off before stays cut off, this one not.
        self._hold = self._budget.reserve(on_evict=self._cut_off)
        self._recipients = Recipients()
        self._buffer = bytearray()
        self._in_content = False
        self._in_body = False
        self._truncated = False
        self._no_room = False
        self._seen: dict[str, int] = {}
        self._forged: list[tuple[str, int]] = []
        self._deletions = ()

    def _add_header(self, header: Header) -> None:
        key = header.name.lower()
        # Only a name SMFIR_CHGHEADER can carry: a sender must not be able to make the reply
        # unencodable (and so the message unfiltered) with an odd field name.
        if key.startswith(OWN_HEADER_PREFIX) and _sendable_name(header.name):
            self._seen[key] = self._seen.get(key, 0) + 1
            self._forged.append((header.name, self._seen[key]))
        # Postfix sends folded values with LF inside, Sendmail with CRLF: make them all CRLF.
        value = header.value.replace(CRLF, b"\n").replace(b"\n", CRLF)
        self._append(header.name.encode("latin-1") + b": " + value + CRLF)

    def _end_headers(self) -> None:
        if not self._in_body:
            self._in_body = True
            self._append(CRLF)

    def _add_body(self, data: bytes) -> Response:
        self._end_headers()
        self._append(data)
        if (self._truncated or self._no_room) and Step.SKIP in self.steps:
            return Skip()
        return Continue()

    def _append(self, data: bytes) -> None:
        if self._no_room:
            return
        room = self._cap - len(self._buffer)
        if len(data) > room:
            self._truncated = True
            data = data[: max(room, 0)]
        try:
            self._hold.grow(len(data))
        except Overloaded:
            # Drop what is held: this message will be tempfailed, and others need the room.
            self._no_room = True
            self._hold.release()
            self._buffer = bytearray()
            return
        self._buffer += data

    def _message(self) -> Message | NoRoom:
        self._end_headers()
        recipients = self._recipients.all()
        queue_id = self._macros.get("i")
        # Last occurrence first, so deleting one never renumbers the next to delete.
        deletions: tuple[Response, ...] = ()
        if Action.CHANGE_HEADERS in self.actions:
            deletions = tuple(ChangeHeader(i, name, "") for name, i in reversed(self._forged))
        if self._no_room:
            self._reset_message()
            self._deletions = deletions
            return NoRoom(queue_id)
        raw, hold, truncated = bytes(self._buffer), self._hold, self._truncated
        hold.on_evict = None  # whole now: judged, never cut off
        self._buffer = bytearray()  # one copy of the message, not two, while it is judged
        self._hold = self._budget.reserve(on_evict=self._cut_off)
        self._reset_message()
        self._deletions = deletions
        return Message(raw, recipients, truncated, queue_id, hold)


def _sendable_name(name: str) -> bool:
    return name.isascii() and name.isprintable() and not any(ch in name for ch in ": ")
