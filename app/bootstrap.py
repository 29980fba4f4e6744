"""The composition root: settings -> engine -> store -> service. Every entry point uses it."""

from __future__ import annotations

from app.service import SpamFilter
from app.settings import Settings
from app.storage.engine import make_engine
from app.storage.store import Store


def build_service(settings: Settings, migrate: bool = True) -> SpamFilter:
    """A ready service; with ``migrate`` the database is created or upgraded first."""
    engine = make_engine(settings.database_url)
    if migrate:
        from app.storage.migrate import upgrade  # Alembic: only when migrating (~0.14 s)

        upgrade(engine)
    return SpamFilter(Store(engine), settings)


def migrate_database(settings: Settings) -> str:
    """Upgrade the configured database to the newest schema; returns the revision."""
    from app.storage.migrate import head_revision, upgrade

    engine = make_engine(settings.database_url)
    try:
        upgrade(engine)
        return head_revision()
    finally:
        engine.dispose()
