"""The programs a benchmark starts: the installed entry points, their environment, and
``spamfilter serve`` on a free loopback port, waited for until every worker has started and
stopped with its whole process group afterwards."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HOST = "127.0.0.1"
READY_SECONDS = 60.0


class BenchError(Exception):
    """The benchmark cannot run as asked (no messages, a server that never got ready)."""


def program(name: str) -> list[str]:
    """The installed entry point ``name`` beside this interpreter, else a fallback that runs
    the same code through the interpreter."""
    script = Path(sys.executable).parent / name
    if script.exists():
        return [str(script)]
    if name == "spamfilter-filter":
        return [sys.executable, "-m", "app.adapters.pipe"]
    return [sys.executable, "-c", "from app.cli import main; main()"]


def environment(url: str, config: Path | None = None) -> dict[str, str]:
    """This process's environment with ``url`` as the database and no filter URL (the pipe
    filter must take its direct path, not ask a server); with ``config``, the settings file
    this process read (``spamfilter --config``), so that a spawned command judges with the
    settings the in-process figures had."""
    env = {k: v for k, v in os.environ.items() if k != "SPAMFILTER_FILTER_URL"}
    env["SPAMFILTER_DATABASE_URL"] = url
    if config is not None:
        env["SPAMFILTER_CONFIG"] = str(config.resolve())
    return env


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(folder: Path, url: str, workers: int, config: Path | None = None) -> Iterator[int]:
    """``spamfilter serve`` on 127.0.0.1 and a free port with ``workers`` (and the settings
    file ``config``); yields the port once /readyz answers 200, and stops the server (its
    whole process group) afterwards."""
    port = free_port()
    argv = [*program("spamfilter"), "serve", "--host", HOST, "--port", str(port)]
    argv += ["--log-level", "info"]  # wait_ready counts the workers' start-up lines
    log_path = folder / f"serve-{port}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [*argv, "--workers", str(workers)],
            env=environment(url, config),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_ready(port, proc, log_path, workers)
        yield port
    finally:
        stop(proc)


# What uvicorn logs when one worker process has started the app.
STARTED = b"Application startup complete"


def wait_ready(port: int, proc: subprocess.Popen[bytes], log_path: Path, workers: int = 1) -> None:
    """Wait until GET /readyz answers 200 and every one of ``workers`` processes has started
    the app; BenchError when the server exits or never gets there.

    /readyz answers as soon as the first worker listens. Keep-alive connections opened
    before the others do all stay with that one, and the run measures a single worker:
    two-worker runs gave ~450 or ~850 classifications a second by that race alone.
    """
    import http.client

    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text("utf-8", "replace")[-2000:]
            raise BenchError(f"spamfilter serve exited with {proc.returncode}:\n{tail}")
        conn = http.client.HTTPConnection(HOST, port, timeout=2)
        try:
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200 and log_path.read_bytes().count(STARTED) >= workers:
                return
        except OSError:
            pass
        finally:
            conn.close()
        time.sleep(0.1)
    raise BenchError(f"spamfilter serve was not ready within {READY_SECONDS:g} s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server (uvicorn stops its workers), SIGKILL if it has not exited within
    20 s, then SIGKILL to whatever is left of the process group it was started in."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    # A worker the server left behind: the group is the one the server was started in.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
