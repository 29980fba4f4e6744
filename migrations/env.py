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
        # One transaction for every step, held by one process at a time: processes that
        # start at once on a database that needs migrating (serve, spamd and milter at boot)
        # would otherwise each run the steps and fail on what another created. Begun before
        # Alembic is configured, Alembic runs inside it (on SQLite it would commit each step
        # on its own). On SQLite the engine begins a write with BEGIN IMMEDIATE, so the others
        # wait for its commit; on PostgreSQL the advisory lock does that. Either way the
        # later ones then find the schema at its revision.
        connection.begin()
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
        context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run against a database")
run_migrations_online()
