"""``spamfilter learn`` onto a disk that refuses writes (issue 30, row 6): one line per
failure and exit 75, never a Python traceback, with or without reading ahead.

The disk is full for the command alone: its file-size limit is 0 (``RLIMIT_FSIZE``, set in
the child before it starts), so every write SQLite makes fails while reading goes on, and
SIGXFSZ is ignored as a process under a quota would meet it.
"""

from __future__ import annotations

import random
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from app.bootstrap import migrate_database
from app.settings.schema import Settings
from tests.builders import spam_message
from tests.environment import without_settings

# Room for the -shm (32 KiB) and some learns, then the disk is full: with this much the run
# learned a batch (whose console events then could not be written) before it stopped.
ROOM = 96 * 1024


def _disk_full() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (ROOM, resource.RLIM_INFINITY))


@pytest.mark.parametrize("jobs", ["0", "1"])
def test_learn_onto_a_full_disk_says_so_in_one_line(tmp_path: Path, jobs: str) -> None:
    database = tmp_path / "spamfilter.db"
    migrate_database(Settings(_env_file=None, database_url=f"sqlite:///{database}"))
    mail = tmp_path / "mail"
    mail.mkdir()
    for serial in range(200):
        (mail / f"{serial}.eml").write_bytes(spam_message(random.Random(serial), serial))
    done = subprocess.run(
        [sys.executable, "-c", "from app.cli import main; main()", "learn", "--label", "spam",
         "--jobs", jobs, str(mail)],
        env=without_settings({"SPAMFILTER_DATABASE_URL": f"sqlite:///{database}"}),
        cwd=tmp_path, capture_output=True, text=True, preexec_fn=_disk_full, timeout=120,
    )  # fmt: skip
    assert done.returncode == 75, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[-1] == "spamfilter: storage_unavailable: writes failing: disk I/O error"
    assert all(
        line.startswith(("learned ", "could not record")) or line in ("", lines[-1])
        for line in lines
    ), done.stderr
