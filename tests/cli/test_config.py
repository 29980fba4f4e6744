"""--config, config show / check, and the file reaching serve's workers and the pipe filter."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from app.api import workers
from app.cli import cli
from app.service import SpamFilter
from tests.adapters.pipe.conftest import FILTER, train
from tests.builders import spam_message
from tests.environment import without_settings


@pytest.fixture
def invoke(clean_environment: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """``spamfilter ARGS...`` with no config file of the developer's in reach."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    runner = CliRunner()

    def run(*args: str) -> Result:
        return runner.invoke(cli, list(args), catch_exceptions=False)

    return run


def config_file(tmp_path: Path, database: str, extra: str = "") -> Path:
    path = tmp_path / "spamfilter.toml"
    path.write_text(f'database_url = "{database}"\napi_tokens = ["s3cret"]\n{extra}')
    return path


def test_show_names_each_origin_and_masks_secrets(
    invoke: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = config_file(tmp_path, "postgresql://spam:hunter2@db:5432/spam", "[model]\nalpha = 2\n")
    monkeypatch.setenv("SPAMFILTER_MODEL__CLUES", "7")
    result = invoke("--config", str(path), "config", "show")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"# config file: {path}"
    assert f'database_url = "postgresql://spam:***@db:5432/spam"  # file {path}' in lines
    assert f'api_tokens = ["***"]  # file {path}' in lines
    assert f"model.alpha = 2.0  # file {path}" in lines
    assert "model.clues = 7  # env SPAMFILTER_MODEL__CLUES" in lines
    assert 'scope = "global"  # default' in lines
    assert "hunter2" not in result.output and "s3cret" not in result.output


def test_show_json_and_the_database_url_option(invoke: Any, tmp_path: Path) -> None:
    path = config_file(tmp_path, "sqlite:////from/file.db")
    result = invoke(
        "--config", str(path), "--database-url", "sqlite:////opt.db", "config", "show", "--json"
    )
    doc = json.loads(result.stdout)
    assert doc["file"] == str(path)
    assert doc["settings"]["database_url"] == {"value": "sqlite:////opt.db", "origin": "option"}
    assert doc["settings"]["server.port"] == {"value": 8000, "origin": "default"}


def test_check_says_ok_and_the_file(invoke: Any, tmp_path: Path) -> None:
    path = config_file(tmp_path, "sqlite:////x.db")
    result = invoke("--config", str(path), "config", "check")
    assert (result.exit_code, result.stdout) == (0, f"ok: {path}\n")


def test_check_lists_every_problem(
    invoke: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = config_file(tmp_path, "sqlite:////x.db", "[model]\nalpah = 1\n")
    monkeypatch.setenv("SPAMFILTER_DATABSE_URL", "sqlite:////typo.db")
    result = invoke("--config", str(path), "config", "check")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"spamfilter: {path}: unknown key model.alpah (did you mean model.alpha?)",
        "spamfilter: unknown variable SPAMFILTER_DATABSE_URL "
        "(did you mean SPAMFILTER_DATABASE_URL?)",
    ]


def test_a_missing_config_file_is_one_line_exit_2(invoke: Any, tmp_path: Path) -> None:
    result = invoke("--config", str(tmp_path / "nowhere.toml"), "stats")
    assert result.exit_code == 2
    assert result.stderr == f"spamfilter: config file {tmp_path / 'nowhere.toml'} does not exist\n"


def test_commands_use_the_file_and_the_environment_wins(
    invoke: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = config_file(tmp_path, f"sqlite:///{tmp_path / 'file.db'}")
    monkeypatch.setenv("SPAMFILTER_CONFIG", str(path))
    assert invoke("stats").exit_code == 0
    assert (tmp_path / "file.db").exists()
    monkeypatch.setenv("SPAMFILTER_DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    assert invoke("stats").exit_code == 0
    assert (tmp_path / "env.db").exists()


def test_serve_hands_the_file_to_its_workers(
    invoke: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = config_file(tmp_path, f"sqlite:///{tmp_path / 'served.db'}", "[server]\nport = 8125\n")
    monkeypatch.setenv("SPAMFILTER_DATABSE_URL", "typo")
    for name in ("SPAMFILTER_CONFIG", "SPAMFILTER_DATABASE_URL", "SPAMFILTER_SERVER__HOST"):
        monkeypatch.setenv(name, "recorded")  # serve exports these: undone after the test
        monkeypatch.delenv(name)
    for name in ("PORT", "WORKERS", "ALLOW_PUBLIC_BIND"):
        monkeypatch.setenv(f"SPAMFILTER_SERVER__{name}", "recorded")
        monkeypatch.delenv(f"SPAMFILTER_SERVER__{name}")
    started: list[dict[str, Any]] = []

    def run(app: str, **options: Any) -> None:
        started.append({"port": options["port"], "config": os.environ.get("SPAMFILTER_CONFIG")})

    monkeypatch.setattr(workers, "run_server", run)
    monkeypatch.chdir(tmp_path)
    result = invoke("--config", "spamfilter.toml", "serve")
    assert result.exit_code == 0, result.output
    assert started == [{"port": 8125, "config": str(path)}]
    assert result.stderr.splitlines()[:2] == [
        "spamfilter: warning: unknown variable SPAMFILTER_DATABSE_URL "
        "(did you mean SPAMFILTER_DATABASE_URL?)",
        f"database: sqlite {tmp_path / 'served.db'}",
    ]


def test_the_pipe_filter_reads_its_config_option(
    service: SpamFilter, database_url: str, tmp_path: Path
) -> None:
    train(service)
    path = config_file(tmp_path, database_url)
    raw = spam_message(random.Random(5), 77)
    env = without_settings({"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    result = subprocess.run(
        [*FILTER, "--config", str(path)], input=raw, capture_output=True, env=env, timeout=60
    )
    assert (result.returncode, result.stderr) == (0, b"")
    assert b"X-Spam-Flag: YES" in result.stdout
    missing = subprocess.run(
        [*FILTER, "--config", str(tmp_path / "nowhere.toml")],
        input=raw,
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert (missing.returncode, missing.stdout) == (3, raw)
    assert b"nowhere.toml does not exist" in missing.stderr


@pytest.mark.parametrize("command", ["spamd", "milter"])
def test_mail_daemons_name_their_database_at_start(
    invoke: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    import app.adapters.milter.server as milter_server
    import app.adapters.spamd.server as spamd_server

    monkeypatch.setattr(spamd_server, "main", lambda *args: None)

    async def listen_no_more(*args: Any) -> None:
        """The milter opens and migrates its database, then does not listen."""

    monkeypatch.setattr(milter_server, "_serve_until_signal", listen_no_more)
    monkeypatch.setenv("SPAMFILTER_SPAMD__PROT", "784")
    path = config_file(tmp_path, f"sqlite:///{tmp_path / 'mail.db'}")
    result = invoke("--config", str(path), command)
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == (
        "spamfilter: warning: unknown variable SPAMFILTER_SPAMD__PROT "
        "(did you mean SPAMFILTER_SPAMD__PORT?)"
    )
    prefix = "spamfilter: " if command == "milter" else ""
    assert f"{prefix}database: sqlite {tmp_path / 'mail.db'}" in lines
