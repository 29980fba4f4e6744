"""The image's HEALTHCHECK: is the role this container runs answering? Standard library only.

The role is read from the container's command line (``/proc/1/cmdline``: ``spamfilter serve``,
``spamd`` or ``milter`` and their options), falling back to the role's SPAMFILTER_* setting
and default, as the command itself does:

* serve: ``GET /healthz`` answers 200 (``--port``, SPAMFILTER_SERVER__PORT, 8000);
* spamd: ``PING`` answers ``PONG``, as ``spamc -K`` checks (``--port``,
  SPAMFILTER_SPAMD__PORT, 783);
* milter: its socket accepts a connection (``--socket``, SPAMFILTER_MILTER__SOCKET,
  inet:8891@127.0.0.1).

Any other command (``db upgrade``, ``learn``...) has nothing to check and is healthy. Exit
status 0 healthy, 1 unhealthy, as Docker expects.
"""

from __future__ import annotations

import os
import socket
import sys
import urllib.request
from collections.abc import Mapping, Sequence

ROLES = ("serve", "spamd", "milter")
TIMEOUT = 4.0


def command_line(path: str = "/proc/1/cmdline") -> list[str]:
    """The arguments of the container's main process."""
    with open(path, "rb") as file:
        return [arg.decode() for arg in file.read().split(b"\0") if arg]


def option(args: Sequence[str], name: str) -> str | None:
    """The value of ``--name VALUE`` or ``--name=VALUE`` in ``args``."""
    for index, arg in enumerate(args):
        if arg == name and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(f"{name}="):
            return arg.split("=", 1)[1]
    return None


def target(args: Sequence[str], environ: Mapping[str, str]) -> tuple[str, str] | None:
    """(role, address) to check: ``host:port`` for TCP, ``unix:PATH``; None for no role."""
    role = next((arg for arg in args if arg in ROLES), None)
    if role == "serve":
        port = option(args, "--port") or environ.get("SPAMFILTER_SERVER__PORT") or "8000"
        return role, f"127.0.0.1:{port}"
    if role == "spamd":
        port = option(args, "--port") or environ.get("SPAMFILTER_SPAMD__PORT") or "783"
        return role, f"127.0.0.1:{port}"
    if role == "milter":
        spec = option(args, "--socket") or environ.get("SPAMFILTER_MILTER__SOCKET")
        return role, milter_address(spec or "inet:8891@127.0.0.1")
    return None


def milter_address(spec: str) -> str:
    """``inet:PORT@HOST`` as ``127.0.0.1:PORT`` (the listener is local); ``unix:PATH`` kept."""
    kind, _, rest = spec.partition(":")
    if kind in ("unix", "local"):
        return f"unix:{rest}"
    port = rest.partition("@")[0]
    return f"[::1]:{port}" if kind == "inet6" else f"127.0.0.1:{port}"


def check(role: str, address: str) -> bool:
    """True when the role answers at ``address``."""
    try:
        if role == "serve":
            with urllib.request.urlopen(f"http://{address}/healthz", timeout=TIMEOUT) as reply:
                return bool(reply.status == 200)
        with connect(address) as sock:
            if role == "spamd":
                sock.sendall(b"PING SPAMC/1.5\r\n\r\n")
                return b" PONG" in sock.recv(128)
            return True
    except OSError:
        return False


def connect(address: str) -> socket.socket:
    """A connected socket to ``host:port``, ``[v6]:port`` or ``unix:PATH``."""
    if address.startswith("unix:"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(TIMEOUT)
        sock.connect(address[5:])
        return sock
    host, _, port = address.rpartition(":")
    return socket.create_connection((host.strip("[]"), int(port)), TIMEOUT)


def main() -> int:
    """0 when the container's role answers (or it has none), 1 otherwise."""
    found = target(command_line(), os.environ)
    return 0 if found is None or check(*found) else 1


if __name__ == "__main__":
    sys.exit(main())
