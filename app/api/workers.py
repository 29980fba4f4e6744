"""Several HTTP workers, each on a listening socket of its own (``serve --workers N``).

uvicorn's supervisor gives every worker the same listening socket, and the first worker to
wake accepts every connection that is waiting, so keep-alive connections opened together
often all went to one worker (docs/benchmarks.md#measurements-behind-the-design). Here each
worker listens on a socket of its own, all bound to the same address with ``SO_REUSEPORT``,
and the kernel spreads new connections over them by a hash of the client's address and port.

A port already in use still fails: the address is first bound once without
``SO_REUSEPORT``, so a second ``serve`` (or any other program) on the same port is refused
rather than sharing it. Worker ``i`` is always restarted on socket ``i``. uvicorn's SIGTTIN
and SIGTTOU (add or remove a worker) are refused: the sockets are bound once, before the
workers start.

Imported by ``spamfilter serve`` only; it relies on uvicorn's supervisor (``Multiprocess``,
``Process``) of the pinned uvicorn release.
"""

from __future__ import annotations

import logging
import socket
import sys
from typing import Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE, Config
from uvicorn.supervisors.multiprocess import Multiprocess, Process

logger = logging.getLogger("uvicorn.error")


def run_server(app: str, **options: Any) -> None:
    """``uvicorn.run(app, **options)`` for one worker; for several, ``run_workers``."""
    if options.get("workers", 1) == 1:
        uvicorn.run(app, **options)
    else:
        run_workers(uvicorn.Config(app, **options))


def reuse_port_sockets(host: str, port: int, count: int) -> list[socket.socket]:
    """``count`` sockets bound to (``host``, ``port``) with ``SO_REUSEPORT``, not yet
    listening; port 0 takes one free port for all. Raises OSError when the address is in use
    (by anything, including another ``SO_REUSEPORT`` socket) or cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as claim:
        claim.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        claim.bind((host, port))  # fails if anything holds the port, shared or not
        port = claim.getsockname()[1]
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(family, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((host, port))
            sock.set_inheritable(True)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def run_workers(config: Config) -> None:
    """Run ``config.workers`` workers of ``config`` (an app import string), one socket each,
    until SIGINT or SIGTERM; exit with uvicorn's start-up failure status when the address
    cannot be bound."""
    try:
        sockets = reuse_port_sockets(config.host, config.port, config.workers)
    except OSError as error:
        logger.error(error)
        sys.exit(STARTUP_FAILURE)
    port = sockets[0].getsockname()[1]
    host = f"[{config.host}]" if ":" in config.host else config.host
    logger.info(
        "Uvicorn running on http://%s:%d, %d workers with a socket each (Press CTRL+C to quit)",
        host,
        port,
        config.workers,
    )
    try:
        Workers(config, sockets).run()
    except KeyboardInterrupt:  # pragma: no cover - the supervisor handles SIGINT itself
        pass
    finally:
        for sock in sockets:
            sock.close()


class Workers(Multiprocess):
    """uvicorn's supervisor (health checks, restarts, SIGHUP to replace every worker), with
    worker ``i`` on ``sockets[i]`` whenever it is started or restarted."""

    def __init__(self, config: Config, sockets: list[socket.socket]) -> None:
        super().__init__(config, sockets=[])
        self.worker_sockets = sockets
        self.processes_num = len(sockets)

    def new_process(self, index: int) -> Process:
        """A worker (not started) on socket ``index``."""
        return Process(self.config, [self.worker_sockets[index]])

    def init_processes(self) -> None:
        """Start one worker per socket."""
        for index in range(self.processes_num):
            process = self.new_process(index)
            process.start()
            self.processes.append(process)

    def restart_all(self) -> None:
        """Replace each worker by a new one on its socket, the new one serving first."""
        for index, old in enumerate(self.processes):
            if self.should_exit.is_set():
                return
            new = self.new_process(index)
            new.start()
            if not new.wait_until_ready(self.config.timeout_worker_healthcheck, self.should_exit):
                new.kill()
                new.join()
                if not self.should_exit.is_set():
                    logger.error(
                        "New worker [%s] was not ready in time; keeping worker [%s].",
                        new.pid,
                        old.pid,
                    )
                return
            old.terminate()
            old.join()
            self.processes[index] = new

    def keep_subprocess_alive(self) -> None:
        """Restart, on its own socket, a worker that died or stopped answering; stop all if
        one failed before it ever served (it would fail the same way again)."""
        if self.should_exit.is_set():
            return
        for index, process in enumerate(self.processes):
            if process.is_alive(timeout=self.config.timeout_worker_healthcheck):
                continue
            process.kill()
            process.join()
            if process.exitcode == STARTUP_FAILURE:
                logger.error("Worker [%s] failed to start; stopping.", process.pid)
                self.should_exit.set()
                return
            if self.should_exit.is_set():
                return
            logger.info("Worker [%s] died; starting another on its socket", process.pid)
            replacement = self.new_process(index)
            replacement.start()
            self.processes[index] = replacement

    def handle_ttin(self) -> None:
        """Refused: the sockets are bound once, one per worker, before the workers start."""
        logger.warning("SIGTTIN ignored: restart serve with --workers to change their number")

    def handle_ttou(self) -> None:
        """Refused, as SIGTTIN."""
        logger.warning("SIGTTOU ignored: restart serve with --workers to change their number")
