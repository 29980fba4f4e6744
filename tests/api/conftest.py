"""Fixtures of the HTTP tests: settings on a temporary SQLite file, service, app, client.

PostgreSQL runs only when SPAMFILTER_TEST_POSTGRES_URL is set; each test then gets a schema
of its own (via ``search_path``), dropped afterwards, so that runs never see each other.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import make_url

from app.api.app import create_app
from app.bootstrap import build_service
from app.service import SpamFilter
from app.settings.schema import DecisionSettings, Settings
from app.storage.engine import make_engine, normalise_url
from tests.api.samples import HAM, SPAM


@dataclass
class Api:
    """One app under test: its settings, service and an open client (lifespan started)."""

    settings: Settings
    service: SpamFilter
    app: FastAPI
    client: TestClient

    def train(self, token: str | None = None) -> None:
        """Learn the sample ham and spam messages (with ``token`` as the bearer, if given)."""
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        for label, messages in (("ham", HAM), ("spam", SPAM)):
            for raw in messages:
                reply = self.client.post(
                    "/v1/feedback", params={"label": label}, content=raw, headers=headers
                )
                assert reply.status_code == 200, reply.text


MakeSettings = Callable[..., Settings]
MakeApi = Callable[..., Api]


@pytest.fixture
def make_api_settings(tmp_path: Path) -> MakeSettings:
    """Settings on a SQLite file under ``tmp_path``; keyword arguments override fields.

    One learned message per label is enough for a verdict, so that tests train quickly, and
    the cut-offs are pinned at 0 nats so that a tuned default never changes a verdict here.
    """

    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "database_url": f"sqlite:///{tmp_path / 't.db'}",
            "api_tokens": [],
            "training_mode": "everything",
            "decision": DecisionSettings(
                ham_log_odds=0.0, spam_log_odds=0.0, min_messages=1, calibrate=False
            ),
            **overrides,
        }
        return Settings(**values)

    return make


@pytest.fixture
def make_api(make_api_settings: MakeSettings) -> Iterator[MakeApi]:
    """A factory of apps: ``make_api(migrate=True, raise_errors=True, served=False,
    **settings)``. With ``served`` the app's lifespan builds the service, as ``serve`` does
    (migrated, its calls counted in the app's metrics and recorded for the console)."""
    with ExitStack() as stack:

        def make(
            migrate: bool = True, raise_errors: bool = True, served: bool = False, **overrides: Any
        ) -> Api:
            settings = make_api_settings(**overrides)
            given = None if served else build_service(settings, migrate=migrate)
            if given is not None:
                stack.callback(given.close)
            app = create_app(settings, given)
            client = TestClient(app, raise_server_exceptions=raise_errors)
            stack.enter_context(client)
            return Api(settings, app.state.service, app, client)

        yield make


@pytest.fixture
def api(make_api: MakeApi) -> Api:
    """An app over a fresh, migrated SQLite database, no API tokens."""
    return make_api()


@pytest.fixture
def client(api: Api) -> TestClient:
    """The client of ``api``."""
    return api.client


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL URL whose ``search_path`` is a fresh schema, dropped after the test."""
    url = os.environ.get("SPAMFILTER_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("SPAMFILTER_TEST_POSTGRES_URL is not set")
    schema = f"api_test_{uuid.uuid4().hex[:12]}"
    admin = make_engine(url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        isolated = make_url(normalise_url(url)).update_query_dict(
            {"options": f"-csearch_path={schema}"}
        )
        yield isolated.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
