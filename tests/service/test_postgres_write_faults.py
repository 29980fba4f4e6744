"""PostgreSQL refusing writes while reads go on (issue 30, rows 1 and 6, the PostgreSQL
equivalents): a revoked privilege, and connections opened while the database was read-only.

Each is caused for real in the test's own schema: what must hold is the same as on SQLite —
writes refused with a reason that says so, readiness says it while it lasts, reads served,
and everything back without a restart once the cause is gone.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from app.bootstrap import build_service, migrate_database
from app.errors import StorageWritesFailing
from app.service import Outcome, SpamFilter
from app.settings.schema import Settings
from app.storage.engine import make_engine
from tests.builders import ham_message, spam_message
from tests.conftest import PostgresAdmin
from tests.environment import drop_settings

pytestmark = pytest.mark.postgres

WRITES = "INSERT, UPDATE, DELETE"


@pytest.fixture
def url(postgres_admin: PostgresAdmin) -> Iterator[str]:
    made = postgres_admin.create()
    yield made
    postgres_admin.drop(made)


@pytest.fixture
def service(url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[SpamFilter]:
    drop_settings(monkeypatch)
    settings = Settings(_env_file=None, database_url=url, training_mode="everything")
    migrate_database(settings)
    service = build_service(settings, migrate=False)
    yield service
    service.close()


def _as_owner(url: str, statement: str) -> None:
    """Run ``statement`` in the test's schema, as the role that owns its tables."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(statement)
    finally:
        engine.dispose()


def _schema(url: str) -> str:
    return str(sa.engine.make_url(url).query["application_name"])


def test_a_revoked_write_privilege_is_told_and_heals_once_granted(
    service: SpamFilter, url: str
) -> None:
    spam, ham = spam_message(random.Random(1), 1), ham_message(random.Random(2), 2)
    assert service.learn(spam, "spam").outcome is Outcome.LEARNED
    tables = f'ALL TABLES IN SCHEMA "{_schema(url)}"'
    _as_owner(url, f"REVOKE {WRITES} ON {tables} FROM CURRENT_USER")
    try:
        told = "writes failing: permission denied (SQLSTATE 42501)"
        with pytest.raises(StorageWritesFailing) as refused:
            service.learn(ham, "ham")
        assert str(refused.value) == told
        assert service.readiness() == told
        assert service.classify(spam).tokens > 0  # reading goes on
    finally:
        _as_owner(url, f"GRANT {WRITES} ON {tables} TO CURRENT_USER")
    assert service.readiness() is None
    assert service.learn(ham, "ham").outcome is Outcome.LEARNED


def test_connections_opened_read_only_are_replaced_after_a_refused_write(
    service: SpamFilter,
) -> None:
    """As after ``default_transaction_read_only`` was on for a while (a failover, a standby
    promoted): the pooled connections keep the read-only default they were opened with, so
    after the first refusal they are replaced, and the next write works."""
    spam = spam_message(random.Random(1), 1)
    service.classify(spam)  # one pooled connection, used by every call that follows
    with service._store._engine.connect() as conn:  # that pooled connection
        conn.exec_driver_sql("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        conn.commit()
    with pytest.raises(StorageWritesFailing, match=r"read-only \(SQLSTATE 25006\)"):
        service.learn(spam, "spam")
    assert service.learn(spam, "spam").outcome is Outcome.LEARNED
    assert service.readiness() is None
