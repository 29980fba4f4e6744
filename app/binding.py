"""Listening addresses: which are loopback, and the rule for binding a public one.

Standard library only, so every command can check its address without importing the
service or the database layer.
"""

from __future__ import annotations

import ipaddress

from app.errors import ConfigurationError
from app.settings import Settings


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
