"""Alembic environment: runs on the engine passed by the application, or on the URL in
SPAMFILTER_DATABASE_URL (through the application's settings) when invoked as ``alembic``."""

from __future__ import annotations

from alembic import context

from app.storage.engine import make_engine
from app.storage.tables import metadata

config = context.config
# The advisory lock key migrations hold on PostgreSQL until they commit ("spamfilt" in ASCII).
MIGRATION_LOCK = 0x7370616D66696C74


def run_migrations_online() -> None:
    engine = config.attributes.get("engine")
    if engine is None:
        from app.settings.schema import Settings

        engine = make_engine(Settings().database_url)
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            # Processes that start at once on a new database (serve, spamd and milter at
            # boot) would each create the tables: one waits here for the other's commit, then
            # finds the schema at its revision. SQLite's writers never overlap.
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
        context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run against a database")
run_migrations_online()
