"""Command-line fixtures: the CLI on this test's database, never the user's default one.

``SPAMFILTER_*`` variables of the developer's environment are removed, the database comes
from the shared ``database_url`` fixture (SQLite in ``tmp_path``, or PostgreSQL when
configured) through ``SPAMFILTER_DATABASE_URL``, and the working folder is ``tmp_path`` so
no ``.env`` file of the checkout is read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from app.cli import cli
from tests.environment import drop_settings

Run = Callable[..., Result]


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No SPAMFILTER_* variables but the test ones, and a working folder without .env."""
    drop_settings(monkeypatch)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)


@pytest.fixture
def cli_database(
    database_url: str, clean_environment: None, monkeypatch: pytest.MonkeyPatch
) -> str:
    """The database the CLI uses in this test (exported as SPAMFILTER_DATABASE_URL)."""
    monkeypatch.setenv("SPAMFILTER_DATABASE_URL", database_url)
    monkeypatch.setenv("SPAMFILTER_TRAINING_MODE", "everything")
    return database_url


def _runner() -> Run:
    runner = CliRunner()

    def invoke(*args: str, input: bytes | None = None) -> Result:
        return runner.invoke(cli, list(args), input=input, catch_exceptions=False)

    return invoke


@pytest.fixture
def run(cli_database: str) -> Run:
    """Invoke ``spamfilter ARGS...`` on this test's database; ``input`` is bytes for stdin."""
    return _runner()


@pytest.fixture
def sqlite_database(
    clean_environment: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> str:
    """A SQLite file in ``tmp_path`` as SPAMFILTER_DATABASE_URL, for tests of one backend."""
    url = f"sqlite:///{tmp_path / 'default.db'}"
    monkeypatch.setenv("SPAMFILTER_DATABASE_URL", url)
    monkeypatch.setenv("SPAMFILTER_TRAINING_MODE", "everything")
    return url


@pytest.fixture
def run_sqlite(sqlite_database: str) -> Run:
    """Invoke ``spamfilter ARGS...`` with SPAMFILTER_DATABASE_URL on a SQLite file."""
    return _runner()


@pytest.fixture
def stats(run: Run) -> Callable[[], dict[str, Any]]:
    """``spamfilter stats --json`` as a dict."""

    def read() -> dict[str, Any]:
        result = run("stats", "--json")
        assert result.exit_code == 0, result.output
        doc: dict[str, Any] = json.loads(result.stdout)
        return doc

    return read
