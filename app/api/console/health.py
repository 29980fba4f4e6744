"""Is each daemon up? The HTTP service itself, spamd (a PING) and the milter (a connect).

The probes run against the addresses in the settings, with short timeouts, from a worker
thread; a daemon that refuses the connection is "not running", one that accepts but answers
wrongly or late is "not answering".
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from app.binding import parse_socket
from app.errors import ConfigurationError
from app.settings.schema import Settings

TIMEOUT = 0.5
PING = b"PING SPAMC/1.5\r\n\r\n"
WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


@dataclass(frozen=True, slots=True)
class Health:
    """One daemon's state: running, not running, or not answering."""

    name: str
    address: str
    state: str
    detail: str = ""


def probe_all(settings: Settings, http_detail: str) -> list[Health]:
    """The HTTP service (this process: ``http_detail`` says its readiness), spamd, milter."""
    server = settings.server
    http = Health("HTTP", f"{server.host}:{server.port}", "running", http_detail)
    return [
        http,
        probe_spamd(settings.spamd.host, settings.spamd.port),
        probe_milter(settings.milter.socket),
    ]


def probe_spamd(host: str, port: int) -> Health:
    """Send spamd's PING; PONG means running."""
    address = f"{host}:{port}"
    try:
        with socket.create_connection((WILDCARDS.get(host, host), port), TIMEOUT) as conn:
            conn.settimeout(TIMEOUT)
            conn.sendall(PING)
            answer = b""
            while len(answer) < 256 and b"\n" not in answer:
                chunk = conn.recv(256)
                if not chunk:
                    break
                answer += chunk
    except ConnectionRefusedError:
        return Health("spamd", address, "not running", "connection refused")
    except OSError as error:
        return Health("spamd", address, "not answering", error.strerror or type(error).__name__)
    if b"PONG" in answer:
        return Health(
            "spamd", address, "running", answer.split(b"\r\n")[0].decode("ascii", "replace")
        )
    return Health("spamd", address, "not answering", "no PONG to a PING")


def probe_milter(spec: str) -> Health:
    """Connect to the milter's socket (``inet:PORT@HOST``, ``inet6:PORT@HOST``, ``unix:PATH``,
    read as the milter reads it)."""
    try:
        endpoint = parse_socket(spec)
        if endpoint.kind == "unix":
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(TIMEOUT)
                conn.connect(endpoint.path)
        else:
            host = WILDCARDS.get(endpoint.host, endpoint.host)
            with socket.create_connection((host, endpoint.port), TIMEOUT):
                pass
    except (ConnectionRefusedError, FileNotFoundError):
        return Health("milter", spec, "not running", "nothing listens there")
    except (OSError, ConfigurationError) as error:
        return Health("milter", spec, "not answering", str(error) or type(error).__name__)
    return Health("milter", spec, "running", "accepts connections")
