"""Alembic, driven from code: upgrade to head, downgrade, and the head revision."""

from __future__ import annotations

import functools
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from app.storage.failures import translate
from app.storage.store import current_revision, refuse_newer

# The project root: migrations/ and alembic.ini sit beside the app package.
ROOT = Path(__file__).resolve().parents[2]


def alembic_config(engine: Engine | None = None) -> Config:
    """An Alembic config for the shipped migrations; env.py runs them on ``engine``."""
    config = Config(str(ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(ROOT / "migrations"))
    if engine is not None:
        config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database up to ``revision``; StorageUnavailable when it cannot be reached,
    ConfigurationError when a newer release has migrated it past what this one knows."""
    refuse_newer(current_revision(engine))  # raises StorageUnavailable itself
    try:
        command.upgrade(alembic_config(engine), revision)
    except DBAPIError as error:
        raise translate(error) from error


def downgrade(engine: Engine, revision: str) -> None:
    """Migrate the database down to ``revision`` (``base`` for an empty schema)."""
    command.downgrade(alembic_config(engine), revision)


@functools.cache
def head_revision() -> str:
    """The newest revision the migrations folder defines (read once: it ships with the code,
    and readiness probes ask for it on every call)."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the project always ships a revision
        raise RuntimeError("no migration revisions found")
    return head
