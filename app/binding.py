"""Listening addresses: which are loopback, the rule for binding a public one, and the
milter's socket notation (``inet:PORT@HOST``), which the milter listens on and the console
probes.

Standard library only, so every command can check its address without importing the
service or the database layer.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

from app.errors import ConfigurationError
from app.settings.schema import Settings


def check_bind(settings: Settings) -> None:
    """Raise ConfigurationError for an HTTP bind on a non-loopback address without API tokens.

    Feedback and forget change the model, so a public address needs tokens unless the
    operator opts out explicitly with ``server.allow_public_bind``.
    """
    host = settings.server.host
    if settings.api_tokens:
        return
    check_open_listener(
        host,
        settings.server.allow_public_bind,
        f"refusing to listen on {host} without API tokens: set SPAMFILTER_API_TOKENS, "
        "bind 127.0.0.1, or set SPAMFILTER_SERVER__ALLOW_PUBLIC_BIND=true",
    )


def check_open_listener(host: str, allow_public_bind: bool, refusal: str) -> None:
    """Raise ConfigurationError(``refusal``) for a non-loopback ``host`` unless allowed.

    The one rule every listener without authentication follows (HTTP without tokens, the
    spamd and milter protocols): loopback only, unless the operator opts in explicitly.
    """
    if allow_public_bind or is_loopback(host):
        return
    raise ConfigurationError(refusal)


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
