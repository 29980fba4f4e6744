"""Learn-on-move for real: Dovecot with the project's IMAPSieve files, driven over IMAP.

Moving a message into Junk learns it as spam; moving one out of Junk learns it as ham;
moving to Trash (from INBOX or from Junk) and appending learn nothing. The database is a
SQLite file of the test, named in the learner's spamfilter.env.
"""

from __future__ import annotations

import imaplib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.bootstrap import build_service
from app.service import Outcome, SpamFilter
from app.settings.schema import Settings
from tests.adapters.dovecot.instance import (
    FILES,
    PASSWORD,
    SCRIPTS,
    USER,
    Dovecot,
    Layout,
    prepare,
    spamfilter_program,
)
from tests.adapters.peers import require_program, require_root
from tests.builders import make_message
from tests.environment import drop_settings

pytestmark = pytest.mark.peer

SPAM = make_message("You are a winner", "Claim your prize now, cash waiting.\n")
HAM = make_message("Agenda for Tuesday", "The project review moves to ten.\n")
TRASHED = make_message("Old newsletter", "Nothing to see.\n")
JUNK_TRASHED = make_message("Cheap pills", "Limited offer.\n")


@pytest.fixture
def learned_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SpamFilter]:
    """A migrated SQLite database for the learner, and a service on it to look inside."""
    drop_settings(monkeypatch)
    url = f"sqlite:///{tmp_path / 'learned.db'}"
    service = build_service(Settings(_env_file=None, database_url=url))
    yield service
    service.close()


@pytest.fixture
def layout(tmp_path: Path, learned_database: SpamFilter) -> Iterator[Layout]:
    """The instance's files, the learner pointed at the test's database."""
    require_root("the Dovecot test runs as root (mail processes as nobody, the learner as root)")
    spamfilter = spamfilter_program(tmp_path / "spamfilter")
    url = f"sqlite:///{tmp_path / 'learned.db'}"
    made = prepare(
        tmp_path / "dovecot", {"SPAMFILTER_DATABASE_URL": url, "SPAMFILTER_BIN": str(spamfilter)}
    )
    yield made
    shutil.rmtree(made.mail, ignore_errors=True)


def counts(service: SpamFilter, user: str | None = None) -> dict[str, int]:
    """Learned messages per label (of ``user``'s own model, or the site-wide one)."""
    return {label: summary.messages for label, summary in service.stats(user).labels.items()}


def move(imap: imaplib.IMAP4, source: str, target: str) -> None:
    """MOVE every message of ``source`` to ``target`` (RFC 6851)."""
    assert imap.select(source)[0] == "OK"
    status, detail = imap.uid("MOVE", "1:*", target)
    assert status == "OK", detail


def test_moving_into_and_out_of_junk_learns(layout: Layout, learned_database: SpamFilter) -> None:
    service = learned_database
    with Dovecot(require_program("dovecot"), layout) as dovecot:
        imap = imaplib.IMAP4("127.0.0.1", layout.port)
        try:
            assert imap.login(USER, PASSWORD)[0] == "OK"
            imap.append("INBOX", None, None, SPAM)
            move(imap, "INBOX", "Junk")
            assert counts(service) == {"ham": 0, "spam": 1}, dovecot.diagnostics()

            imap.append("Junk", None, None, HAM)
            assert counts(service) == {"ham": 0, "spam": 1}, "APPEND learns nothing"
            assert imap.select("Junk")[0] == "OK"
            status, detail = imap.uid("MOVE", _uid_of(imap, b"Agenda"), "INBOX")
            assert status == "OK", detail
            assert counts(service) == {"ham": 1, "spam": 1}, dovecot.diagnostics()

            imap.append("INBOX", None, None, TRASHED)
            assert imap.select("INBOX")[0] == "OK"
            assert imap.uid("MOVE", _uid_of(imap, b"Old newsletter"), "Trash")[0] == "OK"
            move(imap, "Junk", "Trash")  # the spam learned above, and nothing learned for it
            assert counts(service) == {"ham": 1, "spam": 1}, dovecot.diagnostics()
            # The mailbox owner (the IMAP login) taught their own model the same.
            assert counts(service, USER) == {"ham": 1, "spam": 1}
            assert [u.user for u in service.users()] == [USER]
        finally:
            imap.logout()
    # The learner got the messages byte for byte: learning them again changes nothing.
    assert service.learn(SPAM, "spam").outcome is Outcome.UNCHANGED
    assert service.learn(HAM, "ham").outcome is Outcome.UNCHANGED
    assert service.learn(SPAM, "spam", USER).outcome is Outcome.UNCHANGED
    assert service.forget(TRASHED).outcome is Outcome.UNKNOWN


def _uid_of(imap: imaplib.IMAP4, subject: bytes) -> str:
    status, data = imap.uid("SEARCH", "HEADER", "Subject", f'"{subject.decode()}"')
    assert status == "OK" and data[0], data
    return str(data[0].decode().split()[-1])


def test_the_sieve_scripts_compile(layout: Layout, tmp_path: Path) -> None:
    sievec = require_program("sievec")
    for script in SCRIPTS:
        result = subprocess.run(
            [sievec, "-c", str(layout.config), str(FILES / script), str(tmp_path / "out.svbin")],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert result.returncode == 0, result.stderr
