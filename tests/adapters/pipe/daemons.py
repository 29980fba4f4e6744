"""Stand-ins and the real thing for the filter's daemon client: a canned HTTP answer, and
``spamfilter serve`` as a process on a free port."""

from __future__ import annotations

import socket
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.adapters.pipe.client import Daemon
from tests.serving import free_port, spamfilter_serve

__all__ = ["CLASSIFY_ANSWER", "canned", "free_port", "http_service"]

CLASSIFY_ANSWER = {
    "verdict": "spam",
    "spam_probability": 0.99995,
    "log_odds": 12.5,
    "log_posteriors": {"ham": -12.5, "spam": -0.00001},
    "clues": [{"token": "subject:prize", "weight": 3.25}, {"token": "cash", "weight": 2.0}],
    "digest": "0" * 64,
    "reason": None,
    "tokens": 20,
    "truncated": False,
    "mail": {
        "is_spam": True,
        "score": 6.2,
        "required": 5.0,
        "headers": [
            ["X-Spam-Flag", "YES"],
            ["X-Spam-Status", "Yes, score=6.2 required=5.0 tests=subject:prize(+3.25) version=x"],
        ],
    },
}


@contextmanager
def canned(status: str, body: bytes) -> Iterator[Daemon]:
    """A one-request-at-a-time HTTP server that reads a request and answers ``status``."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, rest = data.partition(b"\r\n\r\n")
                length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                while len(rest) < length:
                    rest += conn.recv(65536)
                conn.sendall(
                    f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
                )

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield Daemon("127.0.0.1", port, "", 5.0)
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@contextmanager
def http_service(database_url: str) -> Iterator[str]:
    """``spamfilter serve`` on a free port of 127.0.0.1 and ``database_url``; its base URL once
    it answers."""
    settings = {"SPAMFILTER_DATABASE_URL": database_url}
    with (
        tempfile.TemporaryDirectory(prefix="spamfilter-serve-") as folder,
        spamfilter_serve(Path(folder), settings) as url,
    ):
        yield url
