"""spamfilter serve: the bind check, one migration, then uvicorn on the app factory.

``app.api.workers.run_server`` (uvicorn.run, or one socket per worker) is replaced by a
recorder: these tests check what would be started, not a server (tests/api/test_connections.py
and tests/api/test_workers.py run real ones).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from app.api import workers
from app.api.connections import HeadDeadlineH11Protocol, HeadDeadlineHttpToolsProtocol
from app.daemons import APP_FACTORY
from tests.cli.conftest import Run

EXPORTED = (
    "SPAMFILTER_DATABASE_URL",
    "SPAMFILTER_SERVER__HOST",
    "SPAMFILTER_SERVER__PORT",
    "SPAMFILTER_SERVER__WORKERS",
    "SPAMFILTER_SERVER__ALLOW_PUBLIC_BIND",
)


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, cli_database: str) -> list[dict[str, Any]]:
    """The calls made to run_server (with the environment the workers would inherit)."""
    for name in EXPORTED[1:]:  # serve writes these: monkeypatch records them to undo it
        monkeypatch.setenv(name, "recorded")
        monkeypatch.delenv(name)
    calls: list[dict[str, Any]] = []

    def run(app: str, **options: Any) -> None:
        calls.append({"app": app, **options, "env": {n: os.environ[n] for n in EXPORTED}})

    monkeypatch.setattr(workers, "run_server", run)
    return calls


def test_a_public_host_without_tokens_is_refused(run: Run, started: list[dict[str, Any]]) -> None:
    result = run("serve", "--host", "0.0.0.0")
    assert result.exit_code == 2
    assert result.stderr.startswith("spamfilter: configuration_error: ")
    assert len(result.stderr.strip().splitlines()) == 1
    assert started == []


def test_loopback_starts_uvicorn_on_the_factory(
    run: Run, started: list[dict[str, Any]], cli_database: str
) -> None:
    result = run("serve", "--port", "8123", "--workers", "2", "--http", "h11")
    assert result.exit_code == 0, result.output
    (call,) = started
    assert call["app"] == APP_FACTORY and call["factory"] is True
    assert (call["host"], call["port"], call["workers"]) == ("127.0.0.1", 8123, 2)
    assert call["http"] is HeadDeadlineH11Protocol and call["access_log"] is False
    assert (call["timeout_keep_alive"], call["limit_concurrency"]) == (5.0, 257)
    assert call["env"] == {
        "SPAMFILTER_DATABASE_URL": cli_database,
        "SPAMFILTER_SERVER__HOST": "127.0.0.1",
        "SPAMFILTER_SERVER__PORT": "8123",
        "SPAMFILTER_SERVER__WORKERS": "2",
        "SPAMFILTER_SERVER__ALLOW_PUBLIC_BIND": "false",
    }
    assert run("stats").exit_code == 0  # migrated before uvicorn started


def test_the_database_url_option_reaches_the_workers(
    run: Run, started: list[dict[str, Any]], tmp_path: Any
) -> None:
    other = f"sqlite:///{tmp_path / 'served.db'}"
    assert run("--database-url", other, "serve").exit_code == 0
    assert started[0]["env"]["SPAMFILTER_DATABASE_URL"] == other
    assert (tmp_path / "served.db").exists()


def test_a_public_host_with_the_opt_out_or_tokens_starts(
    run: Run, started: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run("serve", "--host", "0.0.0.0", "--allow-public-bind", "--access-log")
    assert result.exit_code == 0, result.output
    assert started[-1]["host"] == "0.0.0.0" and started[-1]["access_log"] is True
    assert started[-1]["env"]["SPAMFILTER_SERVER__ALLOW_PUBLIC_BIND"] == "true"

    monkeypatch.setenv("SPAMFILTER_API_TOKENS", "secret-one,secret-two")
    assert run("serve", "--host", "0.0.0.0").exit_code == 0
    assert len(started) == 2


def test_connection_limits_come_from_the_settings(
    run: Run, started: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPAMFILTER_SERVER__IDLE_TIMEOUT_SECONDS", "0.5")
    monkeypatch.setenv("SPAMFILTER_SERVER__MAX_CONNECTIONS", "3")
    assert run("serve").exit_code == 0
    (call,) = started
    assert call["timeout_keep_alive"] == 0.5
    assert call["limit_concurrency"] == 4  # uvicorn counts the refused connection too
    assert call["http"] is HeadDeadlineHttpToolsProtocol  # auto: httptools is installed


def test_by_default_there_is_a_worker_per_core(
    run: Run, started: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    result = run("serve", "--port", "8124")
    assert result.exit_code == 0, result.output
    (call,) = started
    assert call["workers"] == 3
    assert call["env"]["SPAMFILTER_SERVER__WORKERS"] == "3"
