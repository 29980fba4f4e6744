"""The composition root: settings -> engine -> store -> service. Every entry point uses it."""

from __future__ import annotations

import ipaddress

from app.errors import ConfigurationError
from app.service import SpamFilter
from app.settings import Settings
from app.storage.engine import make_engine
from app.storage.migrate import head_revision, upgrade
from app.storage.store import Store


def build_service(settings: Settings, migrate: bool = True) -> SpamFilter:
    """A ready service; with ``migrate`` the database is created or upgraded first."""
    engine = make_engine(settings.database_url)
    if migrate:
        upgrade(engine)
    return SpamFilter(Store(engine), settings)


def migrate_database(settings: Settings) -> str:
    """Upgrade the configured database to the newest schema; returns the revision."""
    engine = make_engine(settings.database_url)
    try:
        upgrade(engine)
        return head_revision(engine)
    finally:
        engine.dispose()


def check_bind(settings: Settings) -> None:
    """Raise ConfigurationError for a non-loopback bind without API tokens.

    Feedback and forget change the model, so a public address needs tokens unless the
    operator opts out explicitly with ``server.allow_public_bind``.
    """
    host = settings.server.host
    if settings.api_tokens or settings.server.allow_public_bind or is_loopback(host):
        return
    raise ConfigurationError(
        f"refusing to listen on {host} without API tokens: set SPAMFILTER_API_TOKENS, "
        "bind 127.0.0.1, or set SPAMFILTER_SERVER__ALLOW_PUBLIC_BIND=true"
    )


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
