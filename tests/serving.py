"""A real ``spamfilter serve`` process on a free port, for end-to-end tests."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.environment import without_settings


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (at the time of asking)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Served:
    """A running ``spamfilter serve``: its base URL, process and log file."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path


@contextmanager
def spamfilter_serve(folder: Path, settings: dict[str, str], workers: int = 1) -> Iterator[str]:
    """``spamfilter serve`` with ``settings`` (SPAMFILTER_* variables) on a free port; its base
    URL once ``/readyz`` answers. Its stderr goes to a log in ``folder``."""
    with served(folder, settings, workers) as server:
        yield server.url


@contextmanager
def served(
    folder: Path,
    settings: dict[str, str],
    workers: int = 1,
    preexec: Callable[[], None] | None = None,
) -> Iterator[Served]:
    """As ``spamfilter_serve``, yielding the process and log too; ``preexec`` runs in the
    child before it starts (to ignore a signal, say)."""
    env = without_settings(settings)
    for _attempt in range(3):
        port = free_port()
        log = folder / f"serve-{port}.log"
        with log.open("wb") as errors:
            process = subprocess.Popen(
                [sys.executable, "-c", "from app.cli import main; main()", "serve",
                 "--port", str(port), "--workers", str(workers), "--log-level", "warning"],
                env=env, stderr=errors, stdout=subprocess.DEVNULL, preexec_fn=preexec,
            )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            if _healthy(process, url):
                yield Served(url, process, log)
                return
        finally:
            process.terminate()
            process.wait(timeout=10)
        if b"address already in use" not in log.read_bytes().lower():
            raise AssertionError(f"spamfilter serve did not start: {log.read_text()}")
    raise AssertionError("no free port for spamfilter serve")


def _healthy(process: subprocess.Popen[bytes], url: str) -> bool:
    deadline = time.monotonic() + 30
    while process.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=1):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def closed_after(read: Callable[[], bytes]) -> bool:
    """True when the peer closes the connection (``read`` gives an end of file or a reset)
    before the socket's read deadline (False); whatever it sends first is discarded."""
    try:
        while read():
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True
