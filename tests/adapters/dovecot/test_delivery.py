"""Filtering at delivery for real: dovecot-lda with spam-to-junk.sieve (sieve_before).

Each message passes through spamfilter-filter (vnd.dovecot.filter) on a trained model: spam
is filed into Junk with X-Spam-Flag, ham reaches INBOX with X-Spam-Status: No, and the body
arrives byte for byte.
"""

from __future__ import annotations

import email
import imaplib
import random
import shutil
import sys
from collections.abc import Iterator
from email import policy
from pathlib import Path

import pytest

from app.bootstrap import build_service
from app.service import SpamFilter
from app.settings.schema import Settings
from tests.adapters.dovecot.instance import PASSWORD, PROJECT, USER, Dovecot, Layout, prepare
from tests.adapters.peers import require_program, require_root
from tests.adapters.pipe.conftest import train
from tests.builders import ham_message, spam_message
from tests.environment import drop_settings

pytestmark = pytest.mark.peer


@pytest.fixture
def trained_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A migrated SQLite database with generated spam and ham learned."""
    drop_settings(monkeypatch)
    url = f"sqlite:///{tmp_path / 'model.db'}"
    service: SpamFilter = build_service(Settings(_env_file=None, database_url=url))
    train(service)
    service.close()
    yield url


@pytest.fixture
def layout(tmp_path: Path, trained_url: str) -> Iterator[Layout]:
    """The instance's files; the filter runs ``python -m app.adapters.pipe`` on the model."""
    require_root("the Dovecot test runs as root (mail processes as nobody, programs as root)")
    program = tmp_path / "spamfilter-filter-bin"
    # This checkout's code, whatever copy of the package is installed (see spamfilter_program).
    program.write_text(
        f'#!/bin/sh\nPYTHONPATH="{PROJECT}" exec "{sys.executable}" -m app.adapters.pipe "$@"\n'
    )
    program.chmod(0o755)
    settings = {"SPAMFILTER_DATABASE_URL": trained_url, "SPAMFILTER_FILTER_BIN": str(program)}
    made = prepare(tmp_path / "dovecot", settings)
    yield made
    shutil.rmtree(made.mail, ignore_errors=True)


def fetch_all(imap: imaplib.IMAP4, mailbox: str) -> list[bytes]:
    """Every message of ``mailbox``, as stored."""
    assert imap.select(mailbox)[0] == "OK"
    status, data = imap.uid("SEARCH", "ALL")
    assert status == "OK"
    messages = []
    for uid in data[0].split():
        status, parts = imap.uid("FETCH", uid.decode(), "(BODY.PEEK[])")
        assert status == "OK"
        messages.append(next(p[1] for p in parts if isinstance(p, tuple)))
    return messages


def test_the_recipients_own_model_judges_at_delivery(trained_url: str, layout: Layout) -> None:
    # Alice's model learned the training mail backwards, and judges her mail alone.
    settings = Settings(_env_file=None, database_url=trained_url, users={"train_site": False})
    service = build_service(settings)
    rng = random.Random(7)
    for serial in range(20):
        service.learn(spam_message(rng, serial), "ham", USER)
        service.learn(ham_message(rng, 1000 + serial), "spam", USER)
    service.close()
    env = layout.filter_dir / "spamfilter.env"
    env.write_text(env.read_text() + "SPAMFILTER_USERS__FALLBACK_STRENGTH=0\n")
    junk, inbox = deliver_all(layout, [ham_message(random.Random(98), 5002)])
    assert (len(junk), len(inbox)) == (1, 0), [headers(m) for m in inbox]
    assert headers(junk[0])["X-Spam-Flag"] == "YES"


def test_spam_goes_to_junk_with_headers(layout: Layout) -> None:
    rng = random.Random(99)
    spam, ham = spam_message(rng, 5000), ham_message(rng, 5001)
    junk, inbox = deliver_all(layout, [spam, ham])
    assert (len(junk), len(inbox)) == (1, 1)
    spam_fields, ham_fields = headers(junk[0]), headers(inbox[0])
    assert spam_fields["X-Spam-Flag"] == "YES"
    assert spam_fields["X-Spam-Verdict"].startswith("spam; ")
    assert "X-Spam-Flag" not in ham_fields
    assert ham_fields["X-Spam-Status"].startswith("No, score=")
    assert junk[0].endswith(spam.split(b"\r\n\r\n", 1)[1])
    assert inbox[0].endswith(ham.split(b"\r\n\r\n", 1)[1])


def deliver_all(layout: Layout, messages: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    """Deliver ``messages`` to USER with dovecot-lda; the messages of Junk and of INBOX."""
    with Dovecot(require_program("dovecot"), layout) as dovecot:
        for raw in messages:
            delivered = dovecot.deliver(raw, USER)
            assert delivered.returncode == 0, delivered.stderr.decode() + dovecot.diagnostics()
        imap = imaplib.IMAP4("127.0.0.1", layout.port)
        try:
            assert imap.login(USER, PASSWORD)[0] == "OK"
            return fetch_all(imap, "Junk"), fetch_all(imap, "INBOX")
        finally:
            imap.logout()


def headers(raw: bytes) -> dict[str, str]:
    """The message's header fields (the first of each name), unfolded."""
    parsed = email.message_from_bytes(raw, policy=policy.compat32)
    return {name: " ".join(str(parsed[name]).split()) for name in parsed}
