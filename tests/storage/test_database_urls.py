"""A database URL that cannot work ends every entry point with one line and a non-zero exit.

Unsupported databases (whose driver is not even installed), malformed URLs and a folder that
cannot be made are turned into ConfigurationError / StorageUnavailable by the storage layer,
which the command line prints as ``spamfilter: <code>: <text>``: never a traceback, and never
the password the URL carries.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import cli
from app.errors import ConfigurationError
from app.storage.engine import make_engine
from tests.environment import drop_settings, without_settings

PASSWORD = "hunter2"
ENTRY_POINTS = [
    ["stats"],
    ["db", "upgrade"],
    ["serve", "--port", "0"],
    ["spamd", "--port", "0"],
    ["milter", "--socket", "inet:0@127.0.0.1"],
]
BAD_URLS = [
    pytest.param(f"mysql://u:{PASSWORD}@db.example/spam", 2, id="mysql"),
    pytest.param(f"postgresql+psycopg2://u:{PASSWORD}@db.example/spam", 2, id="psycopg2"),
    pytest.param("foo", 2, id="no-scheme"),
    pytest.param(f"postgresql://u:{PASSWORD}@db.example:notaport/spam", 2, id="bad-port"),
    pytest.param(f"postgresql://u:{PASSWORD}@[::1/spam", 2, id="bad-host"),
    pytest.param(f"sqlite://u:{PASSWORD}@host/spam.db", 2, id="sqlite-with-a-host"),
]


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    drop_settings(monkeypatch)
    monkeypatch.chdir(tmp_path)


def run(url: str, args: list[str]) -> tuple[int, str]:
    """Exit status and stderr of ``spamfilter --database-url URL ARGS`` (in process)."""
    result = CliRunner().invoke(cli, ["--database-url", url, *args], catch_exceptions=False)
    return result.exit_code, result.stderr


@pytest.mark.parametrize("args", ENTRY_POINTS, ids=lambda a: " ".join(a[:2]))
@pytest.mark.parametrize(("url", "code"), BAD_URLS)
def test_a_bad_url_is_one_line_and_a_usage_exit(url: str, code: int, args: list[str]) -> None:
    status, stderr = run(url, args)
    assert status == code
    assert stderr.startswith("spamfilter: configuration_error: ")
    assert len(stderr.splitlines()) == 1
    assert PASSWORD not in stderr


@pytest.mark.parametrize("args", ENTRY_POINTS, ids=lambda a: " ".join(a[:2]))
def test_a_folder_that_cannot_be_made_is_one_line_and_a_tempfail(
    tmp_path: Path, args: list[str]
) -> None:
    """A regular file where the folder should be: mkdir fails even for root."""
    (tmp_path / "a-file").write_text("")
    status, stderr = run(f"sqlite:///{tmp_path / 'a-file' / 'sub' / 'spamfilter.db'}", args)
    assert status == 75
    assert stderr.startswith("spamfilter: storage_unavailable: cannot create the database folder")
    assert stderr.endswith("Not a directory\n")
    assert len(stderr.splitlines()) == 1


def test_an_unsupported_database_says_which_and_what_is_expected() -> None:
    with pytest.raises(ConfigurationError) as raised:
        make_engine(f"mysql://u:{PASSWORD}@db.example/spam")
    assert str(raised.value) == (
        "unsupported database 'mysql'; expected sqlite:///PATH or "
        "postgresql://USER:PASSWORD@HOST[:PORT]/DATABASE"
    )


def test_the_installed_program_prints_one_line_not_a_traceback() -> None:
    """The console script itself, as a service manager runs it (no driver for mysql)."""
    program = Path(sys.executable).with_name("spamfilter")
    done = subprocess.run(
        [str(program), "stats"],
        env=without_settings({"SPAMFILTER_DATABASE_URL": f"mysql://u:{PASSWORD}@h/db"}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("spamfilter: configuration_error: unsupported database 'mysql'")
    assert len(done.stderr.splitlines()) == 1
