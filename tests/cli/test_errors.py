"""Errors become one line on stderr and an exit status: 1 processing, 2 usage, 75 tempfail."""

from __future__ import annotations

import pytest

import app.cli
import app.cli.messages
import app.cli.users
from app.errors import ConfigurationError, SpamFilterError, StorageUnavailable
from app.settings.schema import Settings
from tests.cli.conftest import Run


def _raising(error: SpamFilterError) -> object:
    def build(_settings: Settings) -> object:
        raise error

    return build


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (StorageUnavailable("database is locked"), 75),
        (ConfigurationError("bad combination"), 2),
        (SpamFilterError("something else"), 1),
    ],
)
def test_service_errors_map_to_exit_codes(
    run_sqlite: Run, monkeypatch: pytest.MonkeyPatch, error: SpamFilterError, code: int
) -> None:
    monkeypatch.setattr(app.cli.users, "build", _raising(error))
    result = run_sqlite("stats")
    assert result.exit_code == code
    assert result.stderr == f"spamfilter: {error.code}: {error}\n"


def test_a_database_failure_stops_learning(
    run_sqlite: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app.cli.messages, "build", _raising(StorageUnavailable("down")))
    result = run_sqlite("learn", "--label", "ham", "-", input=b"Subject: x\n\ny\n")
    assert result.exit_code == 75
    assert result.stderr == "spamfilter: storage_unavailable: down\n"


def test_invalid_settings_are_a_usage_error(
    run_sqlite: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPAMFILTER_MODEL__ALPHA", "-1")
    result = run_sqlite("stats")
    assert result.exit_code == 2
    assert result.stderr.startswith("spamfilter: invalid settings: model.alpha: ")
    assert len(result.stderr.splitlines()) == 1


def test_help_needs_no_database(run_sqlite: Run) -> None:
    result = run_sqlite("--help")
    assert result.exit_code == 0
    for command in ("serve", "learn", "classify", "forget", "stats", "eval", "db"):
        assert command in result.stdout
