"""``spamfilter spamd``: the bind check, the options, and the real command under spamc."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.binding import check_bind
from app.cli import cli
from app.cli.spamd import with_spamd_options
from app.daemons import spamd_listener
from app.errors import ConfigurationError
from app.settings.schema import Settings
from tests.adapters.peers import require_program
from tests.builders import make_message
from tests.environment import drop_settings

# The console script's entry point, run by the interpreter running the tests.
SPAMFILTER = [sys.executable, "-c", "from app.cli import main; main()"]


def check_spamd_bind(host: str, allow_public_bind: bool) -> None:
    """The bind rule applied to spamd's listener on ``host``."""
    settings = Settings(_env_file=None, spamd={"host": host})
    check_bind(spamd_listener(settings, allow_public_bind))


@pytest.fixture
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """No SPAMFILTER_* variables but a database file in ``tmp_path``; a clean working folder."""
    drop_settings(monkeypatch)
    monkeypatch.setenv("SPAMFILTER_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.chdir(tmp_path)
    return dict(os.environ)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::", "mail.example.org"])
def test_a_public_address_needs_allow_public_bind(
    environment: dict[str, str], tmp_path: Path, host: str
) -> None:
    result = CliRunner().invoke(cli, ["spamd", "--host", host])
    assert result.exit_code == 2
    assert "refusing to listen on" in result.stderr
    assert "--allow-public-bind" in result.stderr
    assert not (tmp_path / "cli.db").exists()  # refused before touching the database


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.53"])
def test_loopback_needs_nothing(host: str) -> None:
    check_spamd_bind(host, allow_public_bind=False)


def test_allow_public_bind() -> None:
    check_spamd_bind("0.0.0.0", allow_public_bind=True)
    with pytest.raises(ConfigurationError):
        check_spamd_bind("0.0.0.0", allow_public_bind=False)


def test_options_override_settings_and_keep_the_rest() -> None:
    settings = Settings(_env_file=None, spamd={"allow_tell": True, "max_connections": 9})
    kept = with_spamd_options(settings, None, None, allow_tell=False)
    assert kept.spamd == settings.spamd
    changed = with_spamd_options(Settings(_env_file=None), "::1", 1783, allow_tell=True)
    assert (changed.spamd.host, changed.spamd.port, changed.spamd.allow_tell) == ("::1", 1783, True)


def _wait_for_port(process: subprocess.Popen[bytes], deadline: float) -> int:
    """The port from the ``spamd listening on HOST:PORT`` line the command prints.

    Reads the raw pipe: select() on a buffered reader misses lines that an earlier
    readline() already pulled into the buffer, and would then wait until the deadline.
    """
    assert process.stderr is not None
    descriptor = process.stderr.fileno()
    seen = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([descriptor], [], [], 0.1)
        if not ready:
            continue
        chunk = os.read(descriptor, 4096)
        seen += chunk
        for line in seen.splitlines():
            if line.startswith(b"spamd listening on "):
                return int(line.split()[3].rsplit(b":", 1)[1])
        if not chunk and process.poll() is not None:
            break
    raise AssertionError(f"spamfilter spamd did not start: {seen!r}")


@pytest.mark.peer
def test_the_command_serves_spamc_and_stops_on_sigterm(environment: dict[str, str]) -> None:
    spamc = require_program("spamc")
    process = subprocess.Popen(
        [*SPAMFILTER, "spamd", "--port", "0"],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        port = _wait_for_port(process, time.monotonic() + 30)
        base = [spamc, "-d", "127.0.0.1", "-p", str(port), "-t", "20"]
        ping = subprocess.run([*base, "-K"], capture_output=True, timeout=30)
        assert (ping.returncode, ping.stdout) == (0, b"SPAMD/1.5 0\n")
        message = make_message("Lunch?", "Are we still on for noon\n")
        check = subprocess.run([*base, "-c"], input=message, capture_output=True, timeout=30)
        assert (check.returncode, check.stdout) == (0, b"0.0/5.0\n")  # untrained: unsure
        tell = subprocess.run([*base, "-L", "ham"], input=message, capture_output=True, timeout=30)
        assert tell.returncode == 74  # TELL is off without --allow-tell
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
        assert process.stderr is not None
        logged = process.stderr.read()  # the lines after "listening": one per request at info
        assert b"score=0.0/5.0" in logged
        assert b"spamd: refused" in logged
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stderr is not None
        process.stderr.close()
