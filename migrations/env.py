"""Alembic environment: runs on the engine passed by the application, or on the URL in
SPAMFILTER_DATABASE_URL (through the application's settings) when invoked as ``alembic``."""

from __future__ import annotations

from alembic import context

from app.storage.engine import make_engine
from app.storage.tables import metadata

config = context.config


def run_migrations_online() -> None:
    engine = config.attributes.get("engine")
    if engine is None:
        from app.settings.schema import Settings

        engine = make_engine(Settings().database_url)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run against a database")
run_migrations_online()
