"""Connections that hold the milter's memory without finishing, over a real socket: a
message stalled mid-way, a message sitting on the byte budget while another waits, and
macros and recipients past their caps."""

from __future__ import annotations

import time
from collections.abc import Callable

from app.adapters.milter.envelope import MAX_MACRO_BYTES, MAX_RECIPIENTS
from app.settings.schema import Settings
from tests.adapters.milter.conftest import InProcessMilter, spammy_message
from tests.adapters.milter.wire import OFFER, Peer, conversation, frame, send
from tests.serving import closed_after

StartMilter = Callable[[Settings, str], InProcessMilter]
Connect = Callable[[str], Peer]
ADDRESS = "inet:0@127.0.0.1"


def envelope() -> list[bytes]:
    """The frames of a negotiation, a connection and a MAIL FROM."""
    return [b"O" + OFFER, b"Cclient\x004\x00\x19192.0.2.1\x00", b"M<a@example.org>\x00"]


def closed_after_replies(peer: Peer) -> bool:
    """Read the replies due until the milter closes the connection (True), or the socket's
    10 s deadline passes (False)."""
    return closed_after(peer.response)


def wait_for_held(milter: InProcessMilter, at_least: int) -> None:
    """Until the budget holds ``at_least`` bytes (exactly 0 when that is 0)."""
    give_up = time.monotonic() + 10
    budget = milter.server.budget
    while (budget.held < at_least) if at_least else budget.held:
        assert time.monotonic() < give_up, f"held {budget.held}"
        time.sleep(0.01)


def test_a_peer_silent_mid_message_is_cut_off_long_before_the_idle_timeout(
    milter_settings: Callable[..., Settings], in_process_milter: StartMilter, peer_factory: Connect
) -> None:
    limits = {"message_timeout_seconds": 0.5, "idle_timeout_seconds": 600}
    milter = in_process_milter(milter_settings(milter=limits), ADDRESS)
    peer = peer_factory(milter.socket)
    frames = conversation(spammy_message())
    peer.sock.sendall(b"".join(frame(body) for body in frames[:-1]))  # all but end of message
    assert closed_after_replies(peer)
    wait_for_held(milter, 0)


def test_a_stalled_message_on_the_budget_is_cut_off_for_a_waiting_one(
    milter_settings: Callable[..., Settings], in_process_milter: StartMilter, peer_factory: Connect
) -> None:
    """One peer streams most of the budget's worth of body and goes silent; another's message
    waits for room, the stalled one is dropped for it, and is tempfailed at its end."""
    settings = milter_settings(
        server={"max_buffered_bytes": 64 * 1024, "stall_seconds": 0.3, "budget_wait_seconds": 5},
        milter={"message_timeout_seconds": 20},
    )
    milter = in_process_milter(settings, ADDRESS)
    holder = peer_factory(milter.socket)
    head = conversation(spammy_message())[:-2]  # up to end of headers
    sent = [*head, b"B" + b"x" * 65_000]  # leaves less room than a message needs
    holder.sock.sendall(b"".join(frame(body) for body in sent))
    replies = [holder.response() for body in sent if body[:1] != b"D"]
    assert replies[0][:1] == b"O" and set(replies[1:]) == {b"c"}
    wait_for_held(milter, 65_000)

    honest = peer_factory(milter.socket)
    _, final = send(honest, conversation(spammy_message()))
    assert final[-1] == b"c", final  # judged and let through, not tempfailed
    assert any(r.startswith(b"i") and b"X-Spam-Flag\x00YES" in r for r in final)

    holder.sock.sendall(frame(b"E"))
    assert holder.until_final()[-1] == b"t"
    wait_for_held(milter, 0)


def test_macros_past_their_cap_are_tempfailed_and_the_connection_closed(
    milter_settings: Callable[..., Settings], in_process_milter: StartMilter, peer_factory: Connect
) -> None:
    milter = in_process_milter(milter_settings(), ADDRESS)
    peer = peer_factory(milter.socket)
    peer.sock.sendall(frame(b"O" + OFFER))
    assert peer.response()[:1] == b"O"
    value = b"v" * (MAX_MACRO_BYTES // 2)
    for stage in (b"C", b"H", b"M"):  # each a new stage: together past the cap
        peer.sock.sendall(frame(b"D" + stage + b"{name_" + stage + b"}\x00" + value + b"\x00"))
    # The tempfail comes at once and the milter closes: a command sent after it would race
    # the close (EPIPE, or a reset that drops the unread tempfail), so none is sent.
    assert peer.response() == b"t"
    assert closed_after_replies(peer)
    give_up = time.monotonic() + 10
    while milter.server.connections:
        assert time.monotonic() < give_up
        time.sleep(0.01)


def test_the_same_stage_sent_again_replaces_its_macros(
    milter_settings: Callable[..., Settings], in_process_milter: StartMilter, peer_factory: Connect
) -> None:
    """Postfix sends the RCPT macros with every recipient: they never add up."""
    milter = in_process_milter(milter_settings(), ADDRESS)
    peer = peer_factory(milter.socket)
    frames = envelope()
    value = b"r" * (MAX_MACRO_BYTES // 4)
    for serial in range(20):  # five times the cap in all, one stage's worth at a time
        frames += [b"DR{rcpt_addr}\x00" + value + b"\x00", b"R<b%d@example.net>\x00" % serial]
    peer.sock.sendall(b"".join(frame(body) for body in frames))
    assert peer.response()[:1] == b"O"
    assert [peer.response() for _ in range(22)] == [b"c"] * 22


def test_recipients_past_their_cap_get_452_and_the_connection_closed(
    milter_settings: Callable[..., Settings], in_process_milter: StartMilter, peer_factory: Connect
) -> None:
    milter = in_process_milter(milter_settings(), ADDRESS)
    peer = peer_factory(milter.socket)
    frames = envelope()
    frames += [b"R<user%d@example.net>\x00" % serial for serial in range(MAX_RECIPIENTS + 1)]
    peer.sock.sendall(b"".join(frame(body) for body in frames))
    assert peer.response()[:1] == b"O"
    accepted = MAX_RECIPIENTS + 2  # connect, mail, then the recipients up to the cap
    assert [peer.response() for _ in range(accepted)] == [b"c"] * accepted
    assert peer.response() == b"y452 4.5.3 Error: too many recipients\x00"
    assert closed_after_replies(peer)
