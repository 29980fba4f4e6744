"""The transport: socket names, the bind check, and a real socket driven byte by byte."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.binding import Endpoint, check_bind, parse_socket
from app.cli import cli
from app.daemons import milter_listener
from app.errors import ConfigurationError, StorageUnavailable
from app.settings.schema import Settings
from benchmarks.hostile import shape
from tests.adapters.milter.conftest import InProcessMilter, hammy_message, spammy_message
from tests.adapters.milter.wire import OFFER, Peer, closed, conversation, frame, send

StartMilter = Callable[[Settings, str], InProcessMilter]


@pytest.mark.parametrize(
    ("spec", "endpoint"),
    [
        ("inet:8891@127.0.0.1", Endpoint("inet", host="127.0.0.1", port=8891)),
        ("inet:8891@localhost", Endpoint("inet", host="localhost", port=8891)),
        ("INET:0@127.0.0.1", Endpoint("inet", host="127.0.0.1", port=0)),
        ("inet:8891", Endpoint("inet", host="0.0.0.0", port=8891)),
        ("inet6:8891@[::1]", Endpoint("inet", host="::1", port=8891)),
        ("inet6:8891@::1", Endpoint("inet", host="::1", port=8891)),
        ("inet6:8891", Endpoint("inet", host="::", port=8891)),
        ("unix:/run/spamfilter/milter.sock", Endpoint("unix", path="/run/spamfilter/milter.sock")),
        ("local:/run/milter.sock", Endpoint("unix", path="/run/milter.sock")),
        ("/run/milter.sock", Endpoint("unix", path="/run/milter.sock")),
    ],
)
def test_socket_names_in_libmilter_notation(spec: str, endpoint: Endpoint) -> None:
    assert parse_socket(spec) == endpoint


@pytest.mark.parametrize(
    "spec", ["", "inet:", "inet:port@127.0.0.1", "inet:70000@127.0.0.1", "unix:", "tcp:25@host"]
)
def test_other_socket_names_are_configuration_errors(spec: str) -> None:
    with pytest.raises(ConfigurationError, match="expected inet:PORT@HOST"):
        parse_socket(spec)


def test_postfix_notation_gets_a_hint() -> None:
    with pytest.raises(ConfigurationError, match="inet:PORT@HOST here"):
        parse_socket("inet:127.0.0.1:8891")


def test_endpoints_describe_themselves_as_they_were_named() -> None:
    assert parse_socket("inet:25@127.0.0.1").describe() == "inet:25@127.0.0.1"
    assert parse_socket("inet6:25@[::1]").describe() == "inet6:25@::1"
    assert parse_socket("unix:/x.sock").describe() == "unix:/x.sock"


def test_public_addresses_need_the_opt_in() -> None:
    for spec in ("inet:8891@127.0.0.1", "inet6:8891@::1", "inet:8891@localhost", "unix:/x"):
        check_bind(milter_listener(parse_socket(spec), allow_public_bind=False))
    for spec in ("inet:8891", "inet:8891@192.0.2.1", "inet6:8891@::"):
        with pytest.raises(ConfigurationError, match="--allow-public-bind"):
            check_bind(milter_listener(parse_socket(spec), allow_public_bind=False))
        check_bind(milter_listener(parse_socket(spec), allow_public_bind=True))


@pytest.mark.parametrize(
    ("socket_spec", "problem"),
    [("inet:8891@0.0.0.0", "refusing to listen"), ("inet:127.0.0.1:8891", "expected inet:")],
)
def test_the_command_refuses_before_touching_the_database(
    socket_spec: str, problem: str, tmp_path: Path
) -> None:
    database = tmp_path / "untouched.db"
    result = CliRunner().invoke(
        cli, ["--database-url", f"sqlite:///{database}", "milter", "--socket", socket_spec]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("spamfilter: configuration_error: ")
    assert problem in result.stderr
    assert not database.exists()


# A real socket, driven by hand (tests/adapters/milter/wire.py) -------------------------


def test_one_byte_at_a_time_every_command_is_answered(
    milter_settings: Callable[..., Settings],
    in_process_milter: StartMilter,
    peer_factory: Callable[[str], Peer],
) -> None:
    milter = in_process_milter(milter_settings(), "inet:0@127.0.0.1")
    peer = peer_factory(milter.socket)
    for byte in b"".join(frame(body) for body in conversation(spammy_message())):
        peer.sock.sendall(bytes([byte]))
    negotiated = peer.response()
    assert negotiated[:1] == b"O" and struct.unpack("!III", negotiated[1:]) == (6, 0x31, 0x400)
    # connect, helo, mail, rcpt, data, 7 header fields, eoh, body: all continue (macros: none)
    assert [peer.response() for _ in range(14)] == [b"c"] * 14
    final = peer.until_final()
    assert final[-1] == b"c"
    assert b"i\x00\x00\x00\x00X-Spam-Flag\x00YES\x00" in final


def test_two_messages_and_quit_over_a_unix_socket(
    milter_settings: Callable[..., Settings],
    in_process_milter: StartMilter,
    peer_factory: Callable[[str], Peer],
    unix_socket: str,
) -> None:
    milter = in_process_milter(milter_settings(), unix_socket)
    peer = peer_factory(milter.socket)
    for raw, first in ((spammy_message(), True), (hammy_message(), False)):
        early, final = send(peer, conversation(raw, negotiate=first))
        assert set(early[1:]) == {b"c"}
        assert any(r.startswith(b"i") and b"X-Spam-Flag\x00YES" in r for r in final) == first
        assert final[-1] == b"c"
    peer.sock.sendall(frame(b"Q"))
    assert peer.response() == b""  # closed without a reply


def test_an_oversized_frame_ends_the_connection(
    milter_settings: Callable[..., Settings],
    in_process_milter: StartMilter,
    peer_factory: Callable[[str], Peer],
) -> None:
    milter = in_process_milter(milter_settings(), "inet:0@127.0.0.1")
    peer = peer_factory(milter.socket)
    peer.sock.sendall(struct.pack("!I", 64 * 1024 * 1024) + b"B")
    assert peer.response() == b""


def test_a_peer_stalled_mid_frame_is_disconnected_after_the_timeout(
    milter_settings: Callable[..., Settings],
    in_process_milter: StartMilter,
    peer_factory: Callable[[str], Peer],
) -> None:
    milter = in_process_milter(milter_settings(milter={"timeout_seconds": 0.3}), "inet:0@127.0.0.1")
    peer = peer_factory(milter.socket)
    started = time.monotonic()
    peer.sock.sendall(frame(b"O" + OFFER) + frame(b"Hclient\x00")[:6])
    assert peer.response()[:1] == b"O"
    assert peer.response() == b""
    assert time.monotonic() - started < 5


def test_an_idle_connection_outlives_the_timeout_until_the_idle_limit(
    milter_settings: Callable[..., Settings],
    in_process_milter: StartMilter,
    peer_factory: Callable[[str], Peer],
) -> None:
    limits = {"timeout_seconds": 0.2, "idle_timeout_seconds": 1.0}
    milter = in_process_milter(milter_settings(milter=limits), "inet:0@127.0.0.1")
    peer = peer_factory(milter.socket)
    peer.sock.sendall(frame(b"O" + OFFER))
    assert peer.response()[:1] == b"O"
    time.sleep(0.5)  # an SMTP client pausing between commands, longer than timeout_seconds
    peer.sock.sendall(frame(b"Hclient\x00"))
    assert peer.response() == b"c"
    assert peer.response() == b""  # then silent past idle_timeout_seconds: closed


def wait_for_connections(milter: InProcessMilter, count: int) -> None:
    """Until the server serves ``count`` connections (it notices a close asynchronously)."""
    deadline = time.monotonic() + 10
    while milter.server.connections != count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert milter.server.connections == count


def test_an_idle_connection_is_closed_and_its_slot_serves_a_new_one(
    milter_settings: Callable[..., Settings],
    in_process_milter: StartMilter,
    peer_factory: Callable[[str], Peer],
) -> None:
    limits = {"idle_timeout_seconds": 0.3, "max_connections": 1}
    milter = in_process_milter(milter_settings(milter=limits), "inet:0@127.0.0.1")
    idle = peer_factory(milter.socket)
    idle.sock.sendall(frame(b"O" + OFFER))
    assert idle.response()[:1] == b"O"
    assert closed(idle)  # silent past the idle timeout
    wait_for_connections(milter, 0)
    early, final = send(peer_factory(milter.socket), conversation(spammy_message()))
    assert early[0][:1] == b"O" and final[-1] == b"c"


def test_past_max_connections_a_new_connection_is_closed_at_once(
    milter_settings: Callable[..., Settings],
    in_process_milter: StartMilter,
    peer_factory: Callable[[str], Peer],
) -> None:
    milter = in_process_milter(milter_settings(milter={"max_connections": 2}), "inet:0@127.0.0.1")
    held = [peer_factory(milter.socket) for _ in range(2)]
    for peer in held:
        peer.sock.sendall(frame(b"O" + OFFER))
        assert peer.response()[:1] == b"O"
    refused = peer_factory(milter.socket)
    refused.sock.sendall(frame(b"O" + OFFER))
    assert closed(refused)
    assert milter.server.connections == 2
    held[0].sock.close()  # one slot frees; the next connection is served
    wait_for_connections(milter, 1)
    early, final = send(peer_factory(milter.socket), conversation(hammy_message()))
    assert early[0][:1] == b"O" and final[-1] == b"c"
    held[1].sock.sendall(frame(b"Hclient\x00"))  # the other held connection still works
    assert held[1].response() == b"c"


def test_a_frame_trickled_a_byte_at_a_time_meets_the_frame_deadline(
    milter_settings: Callable[..., Settings],
    in_process_milter: StartMilter,
    peer_factory: Callable[[str], Peer],
) -> None:
    # Every byte comes well within both timeouts; the whole frame never would.
    limits = {"timeout_seconds": 0.5, "idle_timeout_seconds": 5.0}
    milter = in_process_milter(milter_settings(milter=limits), "inet:0@127.0.0.1")
    peer = peer_factory(milter.socket)
    peer.sock.sendall(frame(b"O" + OFFER))
    assert peer.response()[:1] == b"O"
    helo = frame(b"H" + b"x" * 200 + b"\x00")
    try:
        for byte in helo:  # about 10 s, unless the milter hangs up first
            peer.sock.sendall(bytes([byte]))
            time.sleep(0.05)
    except OSError:
        pass  # the milter hung up mid-frame
    assert closed(peer)  # never a reply to the frame
    assert milter.server.connections == 0


# hammy_message's forged X-Spam-Flag and X-Spam-Status deleted (last first), then continue.
STRIPPED = [
    b"m\x00\x00\x00\x01X-Spam-Status\x00\x00",
    b"m\x00\x00\x00\x01X-Spam-Flag\x00\x00",
    b"c",
]
ERRORS = [
    StorageUnavailable("database is locked"),
    RuntimeError("unexpected"),
    RecursionError("maximum recursion depth exceeded"),
    MemoryError(),
    TimeoutError(),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda error: type(error).__name__)
@pytest.mark.parametrize(("on_error", "reply"), [("tempfail", [b"t"]), ("accept", STRIPPED)])
def test_a_failing_service_gets_the_on_error_reply(
    milter_settings: Callable[..., Settings],
    in_process_milter: StartMilter,
    peer_factory: Callable[[str], Peer],
    monkeypatch: pytest.MonkeyPatch,
    on_error: str,
    error: Exception,
    reply: list[bytes],
) -> None:
    milter = in_process_milter(milter_settings(mail={"on_error": on_error}), "inet:0@127.0.0.1")

    def fail(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(milter.service, "classify", fail)
    early, final = send(peer_factory(milter.socket), conversation(hammy_message()))
    assert set(early[1:]) == {b"c"}
    assert final == reply
    assert milter.server.budget.held == 0


@pytest.mark.parametrize(
    ("name", "size"),
    [("nested-comments", 4_000), ("unclosed-comments", 20_000), ("nested-multipart", 240_000)],
)
def test_a_hostile_message_is_judged_or_let_through_without_forged_headers(
    milter_settings: Callable[..., Settings],
    in_process_milter: StartMilter,
    peer_factory: Callable[[str], Peer],
    name: str,
    size: int,
) -> None:
    milter = in_process_milter(milter_settings(), "inet:0@127.0.0.1")
    early, final = send(peer_factory(milter.socket), conversation(shape(name).build(size)))
    assert set(early[1:]) == {b"c"}
    # judged (our headers inserted after the deletions) or let through unjudged (on_error
    # accept): either way the forged X-Spam-Status and X-Spam-Flag are deleted first
    assert final[:2] == STRIPPED[:2] and final[-1] == b"c"
    assert milter.server.budget.held == 0


def test_a_slow_service_gets_the_on_error_reply_after_the_timeout(
    milter_settings: Callable[..., Settings],
    in_process_milter: StartMilter,
    peer_factory: Callable[[str], Peer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = milter_settings(milter={"timeout_seconds": 0.5}, mail={"on_error": "tempfail"})
    milter = in_process_milter(settings, "inet:0@127.0.0.1")
    classify = milter.service.classify

    def slow(*args: object, **kwargs: object) -> object:
        time.sleep(1.5)
        return classify(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(milter.service, "classify", slow)
    _, final = send(peer_factory(milter.socket), conversation(hammy_message()))
    assert final == [b"t"]


def test_a_message_that_cannot_be_parsed_is_accepted_even_with_tempfail(
    milter_settings: Callable[..., Settings],
    in_process_milter: StartMilter,
    peer_factory: Callable[[str], Peer],
) -> None:
    milter = in_process_milter(milter_settings(mail={"on_error": "tempfail"}), "inet:0@127.0.0.1")
    frames = [b"O" + OFFER, b"M<a@example.org>\x00", b"R<b@example.net>\x00", b"N"]
    early, final = send(peer_factory(milter.socket), [*frames, b"Bnot a header\r\n", b"E"])
    assert [r[:1] for r in early] == [b"O", b"c", b"c", b"c", b"c"]
    assert final == [b"c"]  # accepted unjudged (nothing forged to delete)


def test_a_stale_unix_socket_is_replaced_and_a_live_one_refused(
    milter_settings: Callable[..., Settings], in_process_milter: StartMilter, unix_socket: str
) -> None:
    path = parse_socket(unix_socket).path
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()  # the file stays, nobody listens
    settings = milter_settings()
    in_process_milter(settings, unix_socket)
    with pytest.raises(ConfigurationError, match="in use"):
        in_process_milter(settings, unix_socket)


def test_a_file_in_the_way_of_the_socket_is_not_removed(
    milter_settings: Callable[..., Settings], in_process_milter: StartMilter, unix_socket: str
) -> None:
    path = Path(parse_socket(unix_socket).path)
    path.write_text("not a socket")
    with pytest.raises(ConfigurationError, match="not a socket"):
        in_process_milter(milter_settings(), unix_socket)
    assert path.read_text() == "not a socket"
