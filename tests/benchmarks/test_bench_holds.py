"""``spamfilter bench hostile --holds``: connections holding memory against the real HTTP,
spamd and milter listeners on loopback, beside honest clients, for a few seconds.

Budgets and deadlines are made small through the environment, as an operator would set
them, so that every attack fills its budget within the run. Nothing asserts a duration.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result

from app.cli import cli
from app.errors import StorageUnavailable
from app.service import SpamFilter

SMALL = {
    "SPAMFILTER_SERVER__MAX_BUFFERED_BYTES": str(2 * 1024 * 1024),
    "SPAMFILTER_SERVER__MAX_MESSAGE_BYTES": str(1024 * 1024),
    "SPAMFILTER_SERVER__STALL_SECONDS": "0.3",
    "SPAMFILTER_SERVER__BUDGET_WAIT_SECONDS": "3",
    "SPAMFILTER_MILTER__MESSAGE_TIMEOUT_SECONDS": "2",
}
HOLDS = ("bench", "hostile", "--holds", "--duration", "3", "--check")  # 12 holders each


@pytest.fixture
def small(clean_environment: None, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for name, value in SMALL.items():
        monkeypatch.setenv(name, value)
    return CliRunner()


def invoke(runner: CliRunner, *more: str) -> Result:
    return runner.invoke(cli, [*HOLDS, *more], catch_exceptions=False)


def test_honest_clients_are_served_while_every_attack_holds(small: CliRunner) -> None:
    result = invoke(small)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[-1] == "every honest request answered"
    rows = {line[:24].strip(): line[24:].split() for line in lines}
    for path in ("http classify, no token", "http feedback, token", "spamd CHECK"):
        assert int(rows[path][1]) > 0 and rows[path][-1] == "-", rows[path]
    assert int(rows["milter message"][1]) > 0
    for attack in ("http-announce", "http-stall", "spamd-trickle", "milter-stall"):
        assert int(rows[attack][0]) >= 12  # every holder connected
    assert int(rows["spamd-trickle"][1]) > 0  # cut off to make room for the CHECKs
    assert "spamd budget: at most 2.0 of 2.0 MiB held" in lines


def test_check_fails_when_honest_requests_fail(
    small: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(*_args: object, **_kwargs: object) -> None:
        raise StorageUnavailable("the database is unavailable")

    monkeypatch.setattr(SpamFilter, "classify", down)
    result = invoke(small, "--json")
    assert result.exit_code == 1
    assert "honest requests failed while connections held memory" in result.output
    report = json.loads(result.stdout)
    assert report["ok"] is False
    paths = {path["name"]: path for path in report["paths"]}
    assert paths["http classify, no token"]["failures"] == {
        "HTTP 503": paths["http classify, no token"]["requests"]
    }
    assert paths["http feedback, token"]["failures"] == {}  # learning does not classify
