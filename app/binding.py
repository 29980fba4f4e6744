"""Listening addresses: which are loopback, the one rule for binding a public one
(``check_bind``), and the milter's socket notation (``inet:PORT@HOST``), which the milter
listens on and the console probes.

Standard library only, so every command can check its address without importing the
service or the database layer.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

from app.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class Listener:
    """A daemon's listening socket, whether it may face the network, and the refusal
    (one line: why not, and how to allow it) when it may not."""

    endpoint: Endpoint
    public_allowed: bool
    refusal: str


def check_bind(listener: Listener) -> None:
    """Raise ConfigurationError(``listener.refusal``) for a non-loopback TCP address unless
    a public bind is allowed.

    The one rule every listener follows (HTTP, the spamd and milter protocols): a unix socket
    or a loopback address always; any other address only when the operator allowed it
    explicitly (``--allow-public-bind``, or for HTTP also API tokens, which authenticate the
    routes that change the model).
    """
    endpoint = listener.endpoint
    if endpoint.kind == "unix" or listener.public_allowed or is_loopback(endpoint.host):
        return
    raise ConfigurationError(listener.refusal)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_SOCKET_FORMS = "inet:PORT@HOST, inet6:PORT@HOST, unix:PATH or local:PATH"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where to listen: a TCP host and port, or a unix socket path."""

    kind: Literal["inet", "unix"]
    host: str = ""
    port: int = 0
    path: str = ""

    def describe(self) -> str:
        """The endpoint in libmilter's notation."""
        if self.kind == "unix":
            return f"unix:{self.path}"
        family = "inet6" if ":" in self.host else "inet"
        return f"{family}:{self.port}@{self.host}"


def parse_socket(spec: str) -> Endpoint:
    """An Endpoint from ``inet:PORT@HOST`` and the other libmilter forms (a bare absolute
    path is a unix socket, as in libmilter); raises ConfigurationError."""
    kind, sep, rest = spec.strip().partition(":")
    if not sep and spec.startswith("/"):
        return Endpoint("unix", path=spec)
    kind = kind.lower()
    if kind in ("unix", "local") and rest:
        return Endpoint("unix", path=rest)
    if kind in ("inet", "inet6") and rest:
        port_text, _, host = rest.partition("@")
        if port_text.isdigit() and int(port_text) <= 65535:
            default_host = "::" if kind == "inet6" else "0.0.0.0"
            return Endpoint("inet", host=host.strip("[]") or default_host, port=int(port_text))
    hint = " (Postfix's inet:HOST:PORT is inet:PORT@HOST here)" if rest.count(":") == 1 else ""
    raise ConfigurationError(f"milter socket {spec!r}: expected {_SOCKET_FORMS}{hint}")
