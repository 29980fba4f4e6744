"""Shared fixtures: a fresh, empty database per test on SQLite and (opt-in) PostgreSQL.

``database_url`` is parametrised over ``sqlite`` (a file in ``tmp_path``) and ``postgresql``.
The PostgreSQL case runs only when ``SPAMFILTER_TEST_POSTGRES_URL`` names a server, e.g.
``postgresql://spamfilter:spamfilter@127.0.0.1:5432/spamfilter_test``, a database the role may
create schemas in. Every test gets a schema of its own there, dropped afterwards (see
``PostgresAdmin``), so a test that leaves rows, open connections or a half-migrated schema
behind cannot affect another. When the variable is set and the server cannot be used, those
tests error: they never skip silently.

``settings`` / ``make_settings`` build Settings from nothing but their arguments (no
environment, no .env file); ``service`` / ``make_service`` build services through
``app.bootstrap.build_service`` (which migrates) and dispose of their engines afterwards.
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url

from app.bootstrap import build_service
from app.service import SpamFilter
from app.settings.schema import Settings
from app.storage.engine import normalise_url
from tests.environment import drop_settings

POSTGRES_URL_ENV = "SPAMFILTER_TEST_POSTGRES_URL"


@pytest.fixture(autouse=True)
def no_user_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test reads the developer's own ``~/.config/spamfilter/spamfilter.toml``: the user
    config folder is an empty one (tests of the search order set their own)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))


# Helper modules whose plain asserts should explain themselves like a test's.
pytest.register_assert_rewrite("tests.storage.snapshot", "tests.service.workload")

DatabaseFactory = Callable[[], str]
SettingsFactory = Callable[..., Settings]
ServiceFactory = Callable[..., SpamFilter]


def _postgres_param() -> Any:
    return pytest.param(
        "postgresql",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(
                not os.environ.get(POSTGRES_URL_ENV),
                reason=f"set {POSTGRES_URL_ENV}=postgresql://USER:PASSWORD@HOST:PORT/DB "
                "(a database the role may create schemas in) to run the PostgreSQL tests",
            ),
        ],
    )


class PostgresAdmin:
    """One throw-away schema per test in the database SPAMFILTER_TEST_POSTGRES_URL names.

    A schema costs milliseconds to create and drop (a database per test would cost ~0.5-2 s
    each: DROP DATABASE forces a checkpoint) and isolates just as well: each test's URL sets
    ``search_path`` to its own schema, so its tables and alembic_version land there, and an
    ``application_name`` that lets teardown end the connections a test left open.
    """

    def __init__(self, url: str) -> None:
        self._base: URL = make_url(normalise_url(url))
        self._engine = sa.create_engine(
            self._base, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool
        )
        self._prefix = f"test_{os.getpid()}_"
        self._counter = itertools.count()

    def check(self) -> None:
        """Fail loudly (never skip) when the server does not answer or refuses schemas."""
        safe = self._base.render_as_string(hide_password=True)
        try:
            with self._engine.connect() as conn:
                allowed = conn.execute(
                    sa.text("SELECT has_database_privilege(current_database(), 'CREATE')")
                ).scalar()
        except sa.exc.DBAPIError as error:
            raise RuntimeError(
                f"{POSTGRES_URL_ENV} is set but {safe} does not answer: {error}"
            ) from error
        if not allowed:
            raise RuntimeError(f"{POSTGRES_URL_ENV}: the role may not create schemas in {safe}")

    def create(self) -> str:
        """A new empty schema; the URL whose connections use it."""
        schema = f"{self._prefix}{next(self._counter)}_{uuid.uuid4().hex[:8]}"
        with self._engine.connect() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        url = self._base.update_query_dict(
            {"options": f"-csearch_path={schema}", "application_name": schema}
        )
        return url.render_as_string(hide_password=False)

    def drop(self, url: str) -> None:
        """Drop a schema made by ``create``, ending any connection still open on it."""
        schema = str(make_url(url).query["application_name"])
        with self._engine.connect() as conn:
            conn.execute(
                sa.text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = :name AND pid <> pg_backend_pid()"
                ),
                {"name": schema},
            )
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))

    def dispose(self) -> None:
        """Close the admin engine."""
        self._engine.dispose()


@pytest.fixture(scope="session")
def postgres_admin() -> Iterator[PostgresAdmin]:
    """The PostgreSQL server named by SPAMFILTER_TEST_POSTGRES_URL (checked once)."""
    url = os.environ.get(POSTGRES_URL_ENV)
    if not url:  # pragma: no cover - the param is skipped before this runs
        pytest.skip(f"{POSTGRES_URL_ENV} is not set")
    admin = PostgresAdmin(url)
    admin.check()
    yield admin
    admin.dispose()


@pytest.fixture(params=["sqlite", _postgres_param()])
def database_backend(request: pytest.FixtureRequest) -> str:
    """``sqlite`` or ``postgresql``: every test using a database runs on both."""
    return str(request.param)


@pytest.fixture
def database_factory(
    database_backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[DatabaseFactory]:
    """Makes fresh, empty (unmigrated) databases of the test's backend; cleaned up afterwards."""
    made: list[str] = []
    admin: PostgresAdmin | None = None
    if database_backend == "postgresql":
        admin = request.getfixturevalue("postgres_admin")

    def make() -> str:
        if admin is not None:
            url = admin.create()
        else:
            url = f"sqlite:///{tmp_path / f'spamfilter-{len(made)}.db'}"
        made.append(url)
        return url

    yield make
    if admin is not None:
        for url in made:
            admin.drop(url)


@pytest.fixture
def database_url(database_factory: DatabaseFactory) -> str:
    """An empty database for this test: a SQLite file, or a new PostgreSQL schema."""
    return database_factory()


@pytest.fixture
def make_settings(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Settings]:
    """Settings on ``database_url`` from keyword arguments only (nested groups as dicts).

    The process environment and any .env file are ignored, so a developer's SPAMFILTER_*
    variables cannot change what the tests see.
    """
    drop_settings(monkeypatch)

    def make(**overrides: Any) -> Settings:
        overrides.setdefault("database_url", database_url)
        # These tests are about learning semantics; thick training has tests of its own.
        overrides.setdefault("training_mode", "everything")
        # A test that sets a spam cut-off means that one, not a calibrated one.
        decision = overrides.get("decision")
        if isinstance(decision, dict) and "spam_log_odds" in decision:
            overrides["decision"] = {"calibrate": False, **decision}
        return Settings(_env_file=None, **overrides)

    return make


@pytest.fixture
def settings(make_settings: SettingsFactory) -> Settings:
    """Default settings on this test's database."""
    return make_settings()


@pytest.fixture
def make_service() -> Iterator[ServiceFactory]:
    """Builds services (migrating their database) and disposes of their engines afterwards."""
    built: list[SpamFilter] = []

    def make(settings: Settings, migrate: bool = True) -> SpamFilter:
        service = build_service(settings, migrate=migrate)
        built.append(service)
        return service

    yield make
    for service in built:
        service.close()


@pytest.fixture
def service(settings: Settings, make_service: ServiceFactory) -> SpamFilter:
    """A service on a freshly migrated database (disposed of before the database is dropped)."""
    return make_service(settings)
