"""Stand-ins and the real thing for the filter's daemon client: a canned HTTP answer, and
``spamfilter serve`` as a process on a free port."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from app.adapters.pipe.client import Daemon
from tests.environment import without_settings

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


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (at the time of asking)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
    """``spamfilter serve`` on a free port of 127.0.0.1; its base URL once it answers.

    A port taken by another process between choosing and binding it is tried again.
    """
    for _attempt in range(3):
        port = free_port()
        process = _serve(database_url, port)
        url = f"http://127.0.0.1:{port}"
        try:
            if _wait_until_healthy(process, url):
                yield url
                return
        finally:
            process.terminate()
            _out, errors = process.communicate(timeout=10)
        if b"address already in use" not in errors.lower():
            raise AssertionError(f"spamfilter serve did not start: {errors.decode()}")
    raise AssertionError("no free port for spamfilter serve")


def _serve(database_url: str, port: int) -> subprocess.Popen[bytes]:
    env = without_settings({"SPAMFILTER_DATABASE_URL": database_url})
    command = [sys.executable, "-c", "from app.cli import main; main()"]
    args = ["serve", "--port", str(port), "--log-level", "warning"]
    return subprocess.Popen([*command, *args], env=env, stderr=subprocess.PIPE)


def _wait_until_healthy(process: subprocess.Popen[bytes], url: str) -> bool:
    deadline = time.monotonic() + 30
    while process.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1):
                return True
        except OSError:
            time.sleep(0.1)
    return False
