"""The manual's mail-server snippets, each read from docs/mail-servers.md and run with the real
program.

Every snippet of that page is a fenced block of its own with a ``<!-- snippet: NAME -->``
line above it (tests/readme.py). Where each one runs:

* procmail, maildrop: here, as the user's ``~/.procmailrc`` / ``~/.mailfilter`` written
  exactly as shown, with Debian's procmail and maildrop delivering into a Maildir
  (tests/mail_user.py makes the user and their home folder).
* spamc: here, each line run by ``sh`` against ``spamfilter spamd`` on a free port; the
  ``spamc`` on PATH is a shim that adds ``-p PORT``, as ``-p`` in spamc.conf would.
* Exim: here, ``exim -bh`` (an SMTP session on stdin, nothing delivered) with the main-section
  line and the ACL as shown, the port in ``spamd_address`` the only change. Debian's exim4
  packages conflict with postfix (both are the mail-transport-agent), so CI, which needs
  Postfix, cannot install Exim: this test runs where an Exim with content scanning is found
  (PATH, /usr/sbin, or SPAMFILTER_TEST_EXIM=/path/to/exim4) and is skipped, even under
  SPAMFILTER_TEST_REQUIRE_PEERS=1, where none is.
* Postfix main.cf: tests/adapters/milter/test_postfix.py, whose private Postfix takes its
  milter lines from the page (tests/adapters/milter/postfix.py).
* Sieve and Dovecot: the page shows docs/integration/dovecot/'s files (less their leading
  comment lines), which tests/adapters/dovecot/ installs into a real Dovecot; the test here
  checks the page shows them byte for byte (report-class.sieve as docs/integration/dovecot.md
  shows it).
* Filing on X-Spam-Class (docs/classes.md): here, procmail's recipes as the user's
  ``~/.procmailrc`` and the Sieve script with Pigeonhole's ``sieve-test``, on messages that
  carry the filter's X-Spam-Flag and X-Spam-Class fields.
"""

from __future__ import annotations

import os
import pwd
import random
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.bootstrap import build_service
from app.service import SpamFilter
from app.settings.schema import Settings
from tests.adapters.dovecot.instance import FILES
from tests.adapters.peers import require_program
from tests.adapters.spamd.conftest import Spamd, spamd_overrides, start_spamd, train
from tests.builders import ham_message, spam_message
from tests.environment import drop_settings
from tests.mail_user import LOGNAME, MailUser, fresh_mail, make_mail_user, nss_wrapper
from tests.readme import DOCS, MAIL_SERVERS, README, snippet, snippets

pytestmark = pytest.mark.peer

MAIL_SERVER_SNIPPETS = (
    "postfix-main.cf",
    "spamc",
    "exim-main",
    "exim-acl",
    "procmail",
    "maildrop",
    "spam-to-junk.sieve",
    "90-spamfilter-imapsieve.conf",
    "report-spam.sieve",
    "report-ham.sieve",
)
DOVECOT_FILES = ("spam-to-junk.sieve", "90-spamfilter-imapsieve.conf")
DOVECOT_FILES += ("report-spam.sieve", "report-ham.sieve", "report-class.sieve")


def test_every_block_of_the_page_is_a_marked_snippet() -> None:
    text = MAIL_SERVERS.read_text()
    fences = re.findall(r"^```", text, re.MULTILINE)
    marked = snippets(text)
    assert sorted(marked) == sorted(MAIL_SERVER_SNIPPETS)
    assert len(fences) == 2 * len(marked), "a block of the section has no snippet marker"


@pytest.mark.parametrize("name", DOVECOT_FILES)
def test_the_dovecot_snippets_are_the_files_the_dovecot_tests_install(name: str) -> None:
    text = (FILES / name).read_text()
    shown = snippet(name)
    assert text.endswith(shown), f"{MAIL_SERVERS.name}'s {name} differs from {FILES / name}"
    left_out = text[: len(text) - len(shown)].splitlines()
    assert all(line == "" or line.startswith("#") for line in left_out), left_out


# -- procmail and maildrop -----------------------------------------------------------------


@pytest.fixture
def mail_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MailUser:
    drop_settings(monkeypatch)
    return make_mail_user(tmp_path)


def assert_filed(user: MailUser, spam: bytes, ham: bytes, trailer: bytes = b"") -> None:
    """Spam in Junk flagged, ham in the inbox unflagged, each with every original byte after
    the filter's headers (and the delivery agent's ``trailer`` after them)."""
    junk, inbox = user.delivered(".Junk"), user.delivered()
    assert len(junk) == 1 and len(inbox) == 1, (junk, inbox)
    for delivered, original, flagged in ((junk[0], spam, True), (inbox[0], ham, False)):
        original += trailer
        added = delivered[: len(delivered) - len(original)]
        assert delivered.endswith(original), delivered
        assert added.startswith(b"X-Spam-"), delivered
        assert (b"X-Spam-Flag: YES\n" in added) is flagged, added


def test_procmail_files_spam_into_junk(mail_user: MailUser) -> None:
    # -p: procmail would clear nss_wrapper's variables (tests/mail_user.py) and then find
    # uid 0 in /etc/passwd; the environment is an MTA's bare one either way.
    procmail = require_program("procmail")
    rcfile = mail_user.home / ".procmailrc"
    rcfile.write_text(snippet("procmail"))
    spam, ham = fresh_mail()
    for message in (spam, ham):
        result = mail_user.run([procmail, "-p"], message)
        assert result.returncode == 0, result
    # procmail ends a message with an empty line, as in an mbox, where the message has none.
    assert_filed(mail_user, spam, ham, trailer=b"\n")


def test_maildrop_files_spam_into_junk(mail_user: MailUser) -> None:
    maildrop, maildirmake = require_program("maildrop"), require_program("maildirmake")
    subprocess.run([maildirmake, str(mail_user.maildir / ".Junk")], check=True)
    for folder in ("cur", "new", "tmp"):
        (mail_user.maildir / folder).mkdir()
    rcfile = mail_user.home / ".mailfilter"
    rcfile.write_text(snippet("maildrop"))
    rcfile.chmod(0o600)
    spam, ham = fresh_mail()
    for message in (spam, ham):
        result = mail_user.run([maildrop], message)
        assert result.returncode == 0, result
    assert_filed(mail_user, spam, ham)


def test_the_filter_is_asked_for_the_users_own_model(mail_user: MailUser) -> None:
    # The rcfile's filter line, with a program that prints the arguments it was given.
    procmail = require_program("procmail")
    (mail_user.home / ".procmailrc").write_text(snippet("procmail"))
    program = mail_user.home / ".local" / "bin" / "spamfilter-filter"
    program.write_text('#!/bin/sh\nprintf "X-Arguments: %s\\n" "$*"\nexec cat\n')
    spam, _ = fresh_mail()
    assert mail_user.run([procmail, "-p"], spam).returncode == 0
    (delivered,) = mail_user.delivered()
    assert delivered.startswith(f"X-Arguments: --exit-zero --user {LOGNAME}\n".encode())


# -- spamc and Exim against spamfilter spamd -----------------------------------------------


@pytest.fixture
def spamd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Spamd]:
    """spamd with TELL allowed on a free port of 127.0.0.1, its SQLite model trained."""
    drop_settings(monkeypatch)
    overrides = spamd_overrides(allow_tell=True) | {"training_mode": "everything"}
    settings = Settings(
        _env_file=None, database_url=f"sqlite:///{tmp_path / 'spamd.db'}", **overrides
    )
    service: SpamFilter = build_service(settings)
    train(service)
    server = start_spamd(service, settings)
    yield server
    server.stop()
    service.close()


def fresh(seed: int) -> tuple[bytes, bytes]:
    """A spammy and a hammy message the model has not learned (CRLF)."""
    rng = random.Random(seed)
    return spam_message(rng, 92_000 + seed), ham_message(rng, 93_000 + seed)


def test_the_spamc_lines(spamd: Spamd, tmp_path: Path) -> None:
    real = require_program("spamc")
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "spamc").write_text(f'#!/bin/sh\nexec "{real}" -p {spamd.port} "$@"\n')
    (shims / "spamc").chmod(0o755)
    spam, learned = fresh(1)
    (tmp_path / "message.eml").write_bytes(spam)
    (tmp_path / "m.eml").write_bytes(learned)
    env = {"PATH": f"{shims}:/usr/bin:/bin"}
    check, tell, process = snippet("spamc").splitlines()

    def run(line: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["sh", "-c", line], cwd=tmp_path, env=env, capture_output=True, timeout=60
        )

    result = run(check)
    assert result.returncode == 1, result
    assert re.fullmatch(rb"\d+\.\d+/5\.0\n", result.stdout), result
    result = run(tell)
    assert result.returncode == 0 and b"successfully" in result.stdout, result
    assert spamd.service.stats("alice").labels["spam"].messages == 1
    result = run(process)
    assert result.returncode == 0, result
    assert result.stdout.startswith(b"X-Spam-Flag: YES\r\n") and result.stdout.endswith(spam)


def exim_program() -> str:
    """An Exim built with content scanning, or skip (see the module docstring: never in CI)."""
    named = os.environ.get("SPAMFILTER_TEST_EXIM")
    path = named or shutil.which("exim4", path="/usr/sbin:/usr/bin") or shutil.which("exim")
    if not path:
        pytest.skip("no Exim (Debian's exim4 cannot be installed beside postfix)")
    return path


def smtp_session(message: bytes) -> bytes:
    """One SMTP transaction carrying ``message`` (CRLF), dot-stuffed, then QUIT."""
    stuffed = re.sub(rb"(?m)^\.", b"..", message)
    commands = b"EHLO client.example\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<b@example.org>\r\n"
    return commands + b"DATA\r\n" + stuffed + b".\r\nQUIT\r\n"


EXIM_CONFIG = """\
{main}
spool_directory = {folder}
log_file_path = {folder}/%s.log
acl_smtp_rcpt = acl_check_rcpt
acl_smtp_data = acl_check_data

begin acl

acl_check_rcpt:
  accept

acl_check_data:
{acl}
  accept
"""


def test_the_exim_acl_scores_with_spamd(
    spamd: Spamd, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    exim = exim_program()
    # Exim's compiled-in user (Debian-exim on Debian) for an Exim that is not installed, as
    # nobody, who owns the spool in a folder of its own (nobody cannot enter tmp_path).
    account = pwd.getpwnam("nobody")
    nobody = f"{account.pw_uid}:{account.pw_gid}"
    spool = Path(tempfile.mkdtemp(prefix="spamfilter-exim-"))
    request.addfinalizer(lambda: shutil.rmtree(spool, ignore_errors=True))
    os.chown(spool, account.pw_uid, account.pw_gid)
    (tmp_path / "passwd").write_text(
        f"root:x:0:0::/root:/bin/sh\nDebian-exim:x:{nobody}::/tmp:/bin/sh\n"
        f"exim:x:{nobody}::/tmp:/bin/sh\n"
    )
    gid = account.pw_gid
    (tmp_path / "group").write_text(f"root:x:0:\nDebian-exim:x:{gid}:\nexim:x:{gid}:\n")
    env = {
        "PATH": "/usr/bin:/bin",
        "LD_PRELOAD": nss_wrapper(),
        "NSS_WRAPPER_PASSWD": str(tmp_path / "passwd"),
        "NSS_WRAPPER_GROUP": str(tmp_path / "group"),
    }
    version = subprocess.run([exim, "-bV"], env=env, capture_output=True, text=True)
    if "Content_Scanning" not in version.stdout:
        pytest.skip(f"{exim} is built without content scanning (no spam condition)")
    main = snippet("exim-main")
    assert main.endswith(" 783\n"), main
    main = main.removesuffix(" 783\n") + f" {spamd.port}\n"  # the one change: the test's port
    config = tmp_path / "exim.conf"
    config.write_text(EXIM_CONFIG.format(main=main, folder=spool, acl=snippet("exim-acl")))
    spam, ham = fresh(2)
    for message, is_spam in ((spam, True), (ham, False)):
        result = subprocess.run(
            [exim, "-C", str(config), "-bh", "127.0.0.1"],
            input=smtp_session(message), env=env, capture_output=True, timeout=60,
        )  # fmt: skip
        transcript = (result.stdout + result.stderr).decode(errors="replace")
        score = re.search(r"= X-Spam-Score: (-?\d+\.\d)\n", transcript)
        assert score and "250 OK id=" in transcript, transcript
        expected = spamd.service.classify(message).mail_report.score
        assert float(score.group(1)) == round(expected, 1), transcript
        assert (float(score.group(1)) >= 5.0) is is_spam, transcript


@pytest.mark.parametrize("name", ["procmail", "maildrop"])
def test_the_pipe_guide_shows_the_same_rcfile(name: str) -> None:
    guide = (DOCS / "integration" / "pipe.md").read_text()
    assert f"```{name}\n{snippet(name)}```\n" in guide


# The README's one-liners quote the snippets: each is shown there exactly as on the page.
README_QUOTES = (
    ("postfix-main.cf", "smtpd_milters = inet:127.0.0.1:8891"),
    ("spamc", "spamc -c < message.eml"),
    ("spamc", "spamc -u alice -L spam < m.eml"),
    ("exim-main", "spamd_address = 127.0.0.1 783"),
    ("procmail", 'spamfilter-filter --exit-zero --user "$LOGNAME"'),
)


@pytest.mark.parametrize(("name", "quoted"), README_QUOTES)
def test_the_readme_quotes_the_snippets(name: str, quoted: str) -> None:
    assert quoted in snippet(name)
    assert f"`{quoted}`" in README.read_text()


# -- filing on X-Spam-Class (docs/classes.md) ----------------------------------------------


def classed(raw: bytes, flag: str, name: str) -> bytes:
    """``raw`` as the filter hands it on: its X-Spam-Flag and X-Spam-Class fields on top."""
    return f"X-Spam-Flag: {flag}\nX-Spam-Class: {name}\n".encode() + raw


def test_procmail_files_by_class(mail_user: MailUser) -> None:
    # The page's recipes follow the settings of the procmail snippet; the filter recipe is
    # left out, since the messages carry the fields it would add.
    procmail = require_program("procmail")
    settings = "SHELL=/bin/sh\nMAILDIR=$HOME/Maildir\nDEFAULT=$MAILDIR/\n\n"
    (mail_user.home / ".procmailrc").write_text(settings + snippet("classes-procmail"))
    spam, ham = fresh_mail()
    messages = {
        ".Junk": classed(spam, "YES", "spam"),
        ".Newsletters": classed(ham, "NO", "newsletter"),
        "": classed(ham, "NO", "ham"),
    }
    for message in messages.values():
        assert mail_user.run([procmail, "-p"], message).returncode == 0
    for folder, message in messages.items():
        assert mail_user.delivered(folder) == [message], folder


def test_sieve_files_by_class(tmp_path: Path) -> None:
    # sieve-test runs the script as the mail user (nobody), so its files are in a folder of
    # /tmp of their own (pytest's tmp_path is its owner's only).
    sieve_test = require_program("sieve-test")
    folder = Path(tempfile.mkdtemp(prefix="spamfilter-sieve-"))
    try:
        folder.chmod(0o755)
        (folder / "mail").mkdir(mode=0o777)
        (folder / "mail").chmod(0o777)
        config = folder / "dovecot.conf"
        config.write_text(
            "log_path = /dev/stderr\nmail_uid = nobody\nmail_gid = nogroup\n"
            f"mail_location = maildir:{folder / 'mail'}\n"
        )
        script = folder / "classes.sieve"
        script.write_text(snippet("classes.sieve"))
        spam, ham = fresh_mail()
        expected = {
            classed(spam, "YES", "newsletter"): "store message in folder: Junk",
            classed(ham, "NO", "newsletter"): "store message in folder: Newsletters",
            classed(ham, "NO", "notification"): "store message in folder: Notifications",
            classed(ham, "NO", "ham"): "store message in folder: INBOX",
        }
        for number, (message, action) in enumerate(expected.items()):
            path = folder / f"{number}.eml"
            path.write_bytes(message)
            for made in (config, script, path):
                made.chmod(0o644)
            result = subprocess.run(
                [sieve_test, "-c", str(config), str(script), str(path)],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert result.returncode == 0, result.stderr
            performed = result.stdout.split("Performed actions:")[1].split("Implicit keep:")
            done = performed[0] if action != "store message in folder: INBOX" else performed[1]
            assert action in done, result.stdout
    finally:
        shutil.rmtree(folder, ignore_errors=True)
