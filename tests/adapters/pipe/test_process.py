"""The filter as mail servers run it: a process per message, stdin to stdout, an exit status."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from app.service import SpamFilter
from tests.adapters.pipe.conftest import FILTER, RunFilter
from tests.adapters.pipe.daemons import CLASSIFY_ANSWER, canned
from tests.adapters.pipe.roundtrip import check_round_trip
from tests.builders import ham_message, make_message, spam_message
from tests.environment import without_settings

CLI_FILTER = (sys.executable, "-c", "from app.cli import main; main()", "filter")
# Never needed to filter a message: the web stack and the command-line framework.
WEB_AND_CLI = {"click", "fastapi", "starlette", "uvicorn", "rich", "prometheus_client"}
# Not needed either when the running service classifies.
SERVICE_STACK = {"sqlalchemy", "pydantic", "pydantic_settings", "alembic", "psycopg"}
# Standard modules the client path does without: 30 ms of a filter process's start-up
# (dataclasses brings inspect; argparse brings gettext, locale and shutil; pathlib brings
# fnmatch and urllib; a str host brings the idna codec with stringprep; socket brings
# selectors and array where its C core, _socket, is all a request needs). Their absence also
# shows that the editable install adds the source tree to sys.path without an import
# finder, which imports pathlib in every process.
SLOW_TO_START = {
    "dataclasses",
    "inspect",
    "argparse",
    "shutil",
    "typing",
    "pathlib",
    "urllib",
    "stringprep",
    "socket",
    "selectors",
}


def imported(stderr: bytes) -> set[str]:
    """Top-level packages named in ``python -X importtime`` output."""
    names = set()
    for line in stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def test_spam_ham_unsure_exit_codes(trained: SpamFilter, run_filter: RunFilter) -> None:
    rng = random.Random(31)
    spam, ham = spam_message(rng, 300), ham_message(rng, 301).replace(b"\r\n", b"\n")
    for raw, code in ((spam, 0), (ham, 1)):
        result = run_filter(raw)
        assert (result.returncode, result.stderr) == (code, b"")
        fields = check_round_trip(raw, result.stdout)
        assert ("X-Spam-Flag" in fields) == (code == 0)
    result = run_filter(ham, "--exit-zero")
    assert result.returncode == 0


def test_unsure_exits_2(service: SpamFilter, run_filter: RunFilter) -> None:
    raw = make_message("Hello", "The model has learned nothing yet.\n")
    result = run_filter(raw)
    assert result.returncode == 2
    assert check_round_trip(raw, result.stdout)["X-Spam-Verdict"].startswith("unsure;")


def test_not_a_message_exits_3_unchanged(service: SpamFilter, run_filter: RunFilter) -> None:
    for raw in (b"", b"\x00\xff binary\r\nnot mail", b"just a line\n"):
        for args in ((), ("-e",)):
            result = run_filter(raw, *args)
            assert (result.returncode, result.stdout) == (3, raw)
            assert b"invalid_message" in result.stderr


def test_an_unmigrated_database_is_not_migrated(tmp_path: Path, run_filter: RunFilter) -> None:
    database = tmp_path / "never-migrated.db"
    raw = make_message("Hi", "x\n")
    result = run_filter(raw, env={"SPAMFILTER_DATABASE_URL": f"sqlite:///{database}"})
    assert (result.returncode, result.stdout) == (3, raw)
    assert b"storage_unavailable" in result.stderr
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)


def test_the_cli_subcommand_behaves_the_same(trained: SpamFilter, run_filter: RunFilter) -> None:
    raw = spam_message(random.Random(41), 400)
    thin, cli = run_filter(raw), run_filter(raw, command=CLI_FILTER)
    assert (cli.returncode, cli.stdout, cli.stderr) == (thin.returncode, thin.stdout, b"")
    assert run_filter(b"junk\n", "-e", command=CLI_FILTER).returncode == 3


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", [FILTER, CLI_FILTER], ids=["spamfilter-filter", "cli"])
def test_an_unwritable_stdout_exits_3_not_ham(
    trained: SpamFilter, database_url: str, command: tuple[str, ...]
) -> None:
    """Exit 1 means ham to a mail server; a message that could not be written is an error.
    A mail server's environment has no PYTHONUNBUFFERED: stdout is buffered, and what the
    failed write left there must not fail again on the way out."""
    raw = ham_message(random.Random(61), 600)
    variables = without_settings({"SPAMFILTER_DATABASE_URL": database_url})
    variables.pop("PYTHONUNBUFFERED", None)
    with open("/dev/full", "wb") as full:
        result = subprocess.run(
            command, input=raw, stdout=full, stderr=subprocess.PIPE, env=variables, timeout=60
        )
    assert result.returncode == 3
    assert b"cannot write the message" in result.stderr


def test_the_direct_path_imports_no_web_or_cli_stack(
    trained: SpamFilter, run_filter: RunFilter
) -> None:
    raw = spam_message(random.Random(51), 500)
    result = run_filter(
        raw, command=(sys.executable, "-X", "importtime", "-m", "app.adapters.pipe")
    )
    assert result.returncode == 0
    assert "sqlalchemy" in imported(result.stderr)
    assert imported(result.stderr) & WEB_AND_CLI == set()


def test_the_client_path_imports_only_the_standard_library(run_filter: RunFilter) -> None:
    raw = make_message("Hi", "x\n")
    command = (sys.executable, "-X", "importtime", "-m", "app.adapters.pipe")
    with canned("200 OK", json.dumps(CLASSIFY_ANSWER).encode()) as daemon:
        env = {"SPAMFILTER_FILTER_URL": f"http://{daemon.host}:{daemon.port}"}
        result = run_filter(raw, env=env, command=command)
    assert result.returncode == 0
    assert check_round_trip(raw, result.stdout)["X-Spam-Flag"] == "YES"
    assert imported(result.stderr) & (WEB_AND_CLI | SERVICE_STACK | SLOW_TO_START) == set()


def test_a_mistyped_option_passes_the_message_through(run_filter: RunFilter) -> None:
    raw = make_message("Hi", "x\n")
    result = run_filter(raw, "--exit-zro")
    assert (result.returncode, result.stdout) == (3, raw)
    assert b"usage: unrecognized arguments: --exit-zro" in result.stderr
    assert run_filter(b"", "--help").stdout.startswith(b"usage: spamfilter-filter")
