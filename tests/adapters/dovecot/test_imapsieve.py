"""Learn-on-move for real: Dovecot with the project's IMAPSieve files, driven over IMAP.

Moving a message into Junk learns it as spam; moving one out of Junk learns it as ham;
moving to Trash (from INBOX or from Junk) and appending learn nothing. With a site that
declares a newsletter class, moving a message into the Newsletter folder learns it as
newsletter (93-spamfilter-learn-classes.conf, report-class.sieve). The database is a SQLite
file of the test, named in the learner's spamfilter.env.
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
    LEARNER,
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
WEEKLY = make_message("This week in gardening", "Ten tips for autumn bulbs.\n")
DIGEST = make_message("Monthly digest", "Our best articles of the month.\n")
# A site with a third class: the learner's spamfilter.env and the test's service both say so.
CLASSES = "ham,spam,newsletter"


@pytest.fixture
def site_classes() -> str | None:
    """The site's SPAMFILTER_MODEL__CLASSES (None: ham and spam only); a test overrides it."""
    return None


@pytest.fixture
def learned_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, site_classes: str | None
) -> Iterator[SpamFilter]:
    """A migrated SQLite database for the learner, and a service on it to look inside."""
    drop_settings(monkeypatch)
    url = f"sqlite:///{tmp_path / 'learned.db'}"
    model = {} if site_classes is None else {"model": {"classes": site_classes}}
    service = build_service(Settings(_env_file=None, database_url=url, **model))
    yield service
    service.close()


@pytest.fixture
def layout(
    tmp_path: Path, learned_database: SpamFilter, site_classes: str | None
) -> Iterator[Layout]:
    """The instance's files, the learner pointed at the test's database."""
    require_root("the Dovecot test runs as root (mail processes as nobody, the learner as root)")
    spamfilter = spamfilter_program(tmp_path / "spamfilter")
    url = f"sqlite:///{tmp_path / 'learned.db'}"
    settings = {"SPAMFILTER_DATABASE_URL": url, "SPAMFILTER_BIN": str(spamfilter)}
    if site_classes is not None:
        settings["SPAMFILTER_MODEL__CLASSES"] = site_classes
    made = prepare(tmp_path / "dovecot", settings)
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


@pytest.mark.parametrize("site_classes", [CLASSES])
def test_moving_into_a_class_folder_learns_that_class(
    layout: Layout, learned_database: SpamFilter
) -> None:
    service = learned_database
    nothing = {"ham": 0, "spam": 0, "newsletter": 0}
    with Dovecot(require_program("dovecot"), layout) as dovecot:
        imap = imaplib.IMAP4("127.0.0.1", layout.port)
        try:
            assert imap.login(USER, PASSWORD)[0] == "OK"
            assert imap.create("Newsletter")[0] == "OK"
            imap.append("INBOX", None, None, WEEKLY)
            assert counts(service) == nothing, "APPEND learns nothing"
            move(imap, "INBOX", "Newsletter")
            learned = {**nothing, "newsletter": 1}
            assert counts(service) == learned, dovecot.diagnostics()
            assert counts(service, USER) == learned  # the mailbox owner's model too

            # Out of Junk learns ham; from the inbox into Newsletter relabels it newsletter.
            imap.append("Junk", None, None, DIGEST)
            move(imap, "Junk", "INBOX")
            assert counts(service) == {**nothing, "ham": 1, "newsletter": 1}, dovecot.diagnostics()
            move(imap, "INBOX", "Newsletter")
            assert counts(service) == {**nothing, "newsletter": 2}, dovecot.diagnostics()
            assert counts(service, USER) == {**nothing, "newsletter": 2}
        finally:
            imap.logout()
    assert service.learn(WEEKLY, "newsletter").outcome is Outcome.UNCHANGED
    assert service.learn(DIGEST, "newsletter", USER).outcome is Outcome.UNCHANGED


@pytest.mark.parametrize("site_classes", [CLASSES])
def test_the_installed_learner_refuses_an_undeclared_class(
    layout: Layout, learned_database: SpamFilter
) -> None:
    learner = layout.pipe_dir / LEARNER
    result = subprocess.run(
        [str(learner), "phishing", USER],
        input=WEEKLY,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert b"phishing" in result.stderr and b"newsletter" in result.stderr, result.stderr
    assert counts(learned_database) == {"ham": 0, "spam": 0, "newsletter": 0}


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
