"""An MTA written by hand for the milter's transport tests: raw frames out over a real
socket, raw responses in."""

from __future__ import annotations

import socket
import struct

from app.binding import parse_socket

OFFER = struct.pack("!III", 6, 0x1FF, 0x1FFFFF)


def frame(body: bytes) -> bytes:
    """One milter frame: its length, then ``body``."""
    return struct.pack("!I", len(body)) + body


def conversation(raw: bytes, negotiate: bool = True) -> list[bytes]:
    """The frame bodies of one message as Postfix sends them (headers, one body chunk)."""
    head, _, body = raw.partition(b"\r\n\r\n")
    frames = [b"O" + OFFER] if negotiate else []
    frames += [b"Cclient\x004\x00\x19192.0.2.1\x00", b"Hclient\x00", b"DMi\x00QID7\x00"]
    frames += [b"M<a@example.org>\x00", b"R<b@example.net>\x00", b"T"]
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b": ")
        frames.append(b"L" + name + b"\0" + value + b"\0")
    return [*frames, b"N", b"B" + body, b"E"]


def send(peer: Peer, frames: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    """Send the frames at once; return the replies before end of message (one per frame but
    macros) and the end-of-message responses."""
    peer.sock.sendall(b"".join(frame(body) for body in frames))
    early = [peer.response() for body in frames[:-1] if body[:1] != b"D"]
    return early, peer.until_final()


class Peer:
    """An MTA written by hand: raw frames out, raw responses in."""

    def __init__(self, address: str) -> None:
        endpoint = parse_socket(address)
        if endpoint.kind == "unix":
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(endpoint.path)
        else:
            self.sock = socket.create_connection((endpoint.host, endpoint.port))
        self.sock.settimeout(10)

    def response(self) -> bytes:
        """One response frame's code and data; b"" when the milter closed the connection."""
        head = self._exactly(4)
        return self._exactly(struct.unpack("!I", head)[0]) if head else b""

    def until_final(self) -> list[bytes]:
        """Responses up to a final end-of-message one (continue, accept, reject, ...)."""
        responses = [self.response()]
        while responses[-1][:1] not in (b"c", b"a", b"r", b"t", b"d", b"y", b""):
            responses.append(self.response())
        return responses

    def _exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            piece = self.sock.recv(size - len(data))
            if not piece:
                return b""
            data += piece
        return data


def closed(peer: Peer) -> bool:
    """True once the milter has closed the connection (EOF, or a reset for unread input)."""
    try:
        return peer.response() == b""
    except ConnectionResetError:
        return True
