"""End to end with a real Postfix: swaks -> smtpd -> our milter -> virtual(8) -> Maildir.

A private Postfix instance (see tests/adapters/milter/postfix.py) runs on loopback with
``smtpd_milters`` pointing at ``spamfilter milter``; mail is sent with swaks and the delivered
files are read back.
"""

from __future__ import annotations

import email
import re
from collections.abc import Callable, Iterator
from email.message import Message
from pathlib import Path

import pytest

from app.settings.schema import Settings
from tests.adapters.milter.conftest import MilterProcess, hammy_message, spammy_message
from tests.adapters.milter.postfix import PostfixInstance, postfix_socket
from tests.adapters.peers import require_program, require_root

pytestmark = pytest.mark.peer

StartMilter = Callable[[Settings, str], MilterProcess]
StartPostfix = Callable[[MilterProcess], PostfixInstance]


@pytest.fixture
def start_postfix(tmp_path: Path) -> Iterator[StartPostfix]:
    """Starts a private Postfix whose smtpd uses the given milter; stopped at teardown."""
    postfix, swaks = require_program("postfix"), require_program("swaks")
    require_root("a private Postfix instance needs root (its daemons drop privileges)")
    started: list[PostfixInstance] = []

    def start(milter: MilterProcess) -> PostfixInstance:
        instance = PostfixInstance(
            postfix, swaks, postfix_socket(milter.socket), tmp_path / "postfix.log"
        )
        started.append(instance)
        instance.start()
        return instance

    yield start
    for instance in started:
        instance.stop()


@pytest.fixture
def mail_files(tmp_path: Path) -> dict[str, Path]:
    """The spam and ham messages as files for swaks --data."""
    files = {"spam": tmp_path / "spam.eml", "ham": tmp_path / "ham.eml"}
    files["spam"].write_bytes(spammy_message())
    files["ham"].write_bytes(hammy_message())
    return files


def queued(transcript: str) -> str:
    """The queue id in smtpd's ``250 2.0.0 Ok: queued as ID``; fails with the transcript."""
    found = re.search(r"250 2\.0\.0 Ok: queued as (\w+)", transcript)
    assert found, f"not queued:\n{transcript}"
    return found.group(1)


def by_subject(raw_messages: list[bytes]) -> dict[str, Message]:
    parsed = [email.message_from_bytes(raw) for raw in raw_messages]
    return {str(message["Subject"]): message for message in parsed}


def test_spam_is_flagged_and_ham_delivered_clean(
    milter_settings: Callable[..., Settings],
    start_milter: StartMilter,
    start_postfix: StartPostfix,
    mail_files: dict[str, Path],
) -> None:
    milter = start_milter(milter_settings(), "inet:0@127.0.0.1")
    postfix = start_postfix(milter)
    context = f"\n--- milter\n{milter.output()}"
    spam_id = queued(postfix.send(mail_files["spam"]) + context + postfix.log())
    ham_id = queued(postfix.send(mail_files["ham"]) + context + postfix.log())
    delivered = by_subject(postfix.delivered(2))
    spam, ham = delivered["Claim your prize today"], delivered["Project review agenda"]

    assert spam["X-Spam-Flag"] == "YES"
    assert spam["X-Spam-Status"].startswith("Yes, score=")
    assert spam["X-Spam-Verdict"].startswith("spam; ")
    assert ham["X-Spam-Status"].startswith("No, score=-")
    # The sender's forged X-Spam-Flag and X-Spam-Status are gone; ours is the only status.
    assert ham.get_all("X-Spam-Flag") is None
    assert ham.get_all("X-Spam-Status") == [ham["X-Spam-Status"]]
    # Inserted at the top: above the Received field Postfix added for this hop.
    names = [name.lower() for name in ham]
    assert names.index("x-spam-status") < names.index("received")
    # The milter logged each message under Postfix's queue id (the ``i`` macro).
    log = milter.output()
    assert f"{spam_id}: score" in log and f"{ham_id}: score -" in log


def test_spam_is_rejected_during_the_smtp_session(
    milter_settings: Callable[..., Settings],
    start_milter: StartMilter,
    start_postfix: StartPostfix,
    mail_files: dict[str, Path],
) -> None:
    settings = milter_settings(mail={"spam_action": "reject", "reject_log_odds": 5.0})
    milter = start_milter(settings, "inet:0@127.0.0.1")
    postfix = start_postfix(milter)
    transcript = postfix.send(mail_files["spam"])
    assert "550 5.7.1 Message rejected as spam" in transcript, transcript + postfix.log()
    queued(postfix.send(mail_files["ham"]) + postfix.log())
    (ham,) = postfix.delivered(1)
    assert b"X-Spam-Status: No, score=-" in ham


def test_quarantined_spam_waits_in_the_hold_queue(
    milter_settings: Callable[..., Settings],
    start_milter: StartMilter,
    start_postfix: StartPostfix,
    mail_files: dict[str, Path],
) -> None:
    milter = start_milter(milter_settings(mail={"spam_action": "quarantine"}), "inet:0@127.0.0.1")
    postfix = start_postfix(milter)
    spam_id = queued(postfix.send(mail_files["spam"]) + postfix.log())
    assert postfix.held() == [spam_id]
    assert f"{spam_id}: score" in milter.output() and "quarantine" in milter.output()
