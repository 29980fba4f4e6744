"""A private Dovecot for the tests: its own config, folders and ports, the project's files.

The config is written under ``tmp_path`` and loaded with ``dovecot -c FILE -F``; state_dir,
the log, the learner and the filter wrapper are there too. IMAP listens on a free port of
127.0.0.1 with one passwd-file user (mail is delivered with dovecot-lda on the same config).
The project's snippets are included unchanged, then the installed paths they name are
pointed at copies under the test's folders (a later setting wins).

Dovecot refuses to run mail processes as root, so the mail user is ``nobody``. What that user
and Dovecot's own unprivileged processes must reach (base_dir with the programs' sockets, the
passwd-file, the Maildir and the sieve scripts) is in a folder of /tmp of its own, since
pytest's tmp_path is under a folder only its owner may enter. For the same reason the two
programs run through Dovecot's "script" service as root (91-spamfilter-learn-service.conf
does so for the learner, as user ``spamfilter``; for the filter this is the test's own
addition): this Python and its virtual environment may sit where ``nobody`` cannot go (a
pyenv under /root), so sieve_pipe_bin_dir and sieve_filter_bin_dir are not what is run here.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[3]
FILES = PROJECT / "docs" / "integration" / "dovecot"
SNIPPETS = (
    "90-spamfilter-imapsieve.conf",
    "91-spamfilter-learn-service.conf",
    "92-spamfilter-delivery.conf",
    "93-spamfilter-learn-classes.conf",
)
SCRIPTS = ("report-spam.sieve", "report-ham.sieve", "report-class.sieve", "spam-to-junk.sieve")
LEARNER = "spamfilter-learn"
FILTER = "spamfilter-filter"


def spamfilter_program(path: Path) -> Path:
    """An executable ``spamfilter`` at ``path`` that runs this checkout's code: Dovecot and
    the wrappers give their programs an almost empty environment, so the installed console
    script would import whichever copy of the package is installed."""
    path.write_text(
        f'#!/bin/sh\nPYTHONPATH="{PROJECT}" exec "{sys.executable}" '
        '-c "from app.cli import main; main()" "$@"\n'
    )
    path.chmod(0o755)
    return path


USER, PASSWORD = "alice@example.org", "secret"
MAIL_USER = "nobody"


@dataclass(frozen=True, slots=True)
class Layout:
    """Where one instance keeps its files."""

    root: Path  # the test's tmp_path: config, state_dir, log, the learner and the filter
    mail: Path  # reachable by the mail user: base_dir, passwd-file, home folder, sieve scripts
    port: int  # IMAP

    @property
    def config(self) -> Path:
        """The dovecot.conf of this instance."""
        return self.root / "dovecot.conf"

    @property
    def log(self) -> Path:
        """Dovecot's log file (errors and info)."""
        return self.root / "dovecot.log"

    @property
    def pipe_dir(self) -> Path:
        """Where spamfilter-learn and its spamfilter.env are installed."""
        return self.root / "sieve-pipe"

    @property
    def filter_dir(self) -> Path:
        """Where spamfilter-filter (the Sieve wrapper) and its spamfilter.env are installed."""
        return self.root / "sieve-filter"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (at the time of asking)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def prepare(root: Path, settings: dict[str, str]) -> Layout:
    """Write the config and install the project's scripts; ``settings`` go to spamfilter.env."""
    (root / "state").mkdir(parents=True)
    mail = Path(tempfile.mkdtemp(prefix="spamfilter-dovecot-"))
    layout = Layout(root, mail, free_port())
    try:
        _install(layout, settings)
    except BaseException:
        shutil.rmtree(layout.mail, ignore_errors=True)
        raise
    return layout


def _install(layout: Layout, settings: dict[str, str]) -> None:
    mail = layout.mail
    for name in ("base", "home", "sieve"):
        (mail / name).mkdir()
    for script in SCRIPTS:
        shutil.copy(FILES / script, mail / "sieve" / script)
    account = pwd.getpwnam(MAIL_USER)
    for path in (mail, mail / "home", mail / "sieve", *(mail / "sieve").iterdir()):
        os.chown(path, account.pw_uid, account.pw_gid)
    # Read by the auth process, which runs as Dovecot's internal user: not under tmp_path.
    mail.chmod(0o755)
    (mail / "users").write_text(f"{USER}:{{PLAIN}}{PASSWORD}::::{mail / 'home'}::\n")
    lines = "".join(f"{name}={value}\n" for name, value in settings.items())
    for bin_dir, program in ((layout.pipe_dir, LEARNER), (layout.filter_dir, FILTER)):
        bin_dir.mkdir()
        shutil.copy(FILES / program, bin_dir / program)
        (bin_dir / "spamfilter.env").write_text(lines)
    layout.config.write_text(config(layout, account.pw_uid, account.pw_gid))


# A minimal IMAP server, the project's snippets, then the test's paths and program services.
CONFIG = """\
base_dir = {base_dir}
state_dir = {state_dir}
instance_name = spamfilter-test-{port}
listen = 127.0.0.1
protocols = imap
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain
log_path = {log}
mail_uid = {uid}
mail_gid = {gid}
mail_location = maildir:~/Maildir
passdb {{
  driver = passwd-file
  args = scheme=PLAIN {users}
}}
userdb {{
  driver = passwd-file
  args = {users}
}}
namespace inbox {{
  inbox = yes
  separator = /
  mailbox Junk {{
    special_use = \\Junk
    auto = create
  }}
  mailbox Trash {{
    special_use = \\Trash
    auto = create
  }}
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
{includes}
plugin {{
  imapsieve_mailbox1_before = file:{sieve}/report-spam.sieve
  imapsieve_mailbox2_before = file:{sieve}/report-ham.sieve
  imapsieve_mailbox3_before = file:{sieve}/report-class.sieve
  sieve_before = {sieve}/spam-to-junk.sieve
  sieve_pipe_bin_dir = {pipe_dir}
  sieve_filter_bin_dir = {filter_dir}
  sieve_filter_socket_dir = .
}}
service spamfilter-learn {{
  executable = script {learner}
  user = root
  unix_listener spamfilter-learn {{
    user = {mail_user}
  }}
}}
service spamfilter-filter {{
  executable = script {filter}
  user = root
  unix_listener spamfilter-filter {{
    user = {mail_user}
  }}
}}
"""


def config(layout: Layout, uid: int, gid: int) -> str:
    """dovecot.conf for ``layout``, the mail processes running as ``uid``:``gid``."""
    includes = "".join(f"!include {FILES / snippet}\n" for snippet in SNIPPETS)
    return CONFIG.format(
        base_dir=layout.mail / "base",
        state_dir=layout.root / "state",
        port=layout.port,
        log=layout.log,
        uid=uid,
        gid=gid,
        users=layout.mail / "users",
        includes=includes,
        sieve=layout.mail / "sieve",
        pipe_dir=layout.pipe_dir,
        filter_dir=layout.filter_dir,
        learner=layout.pipe_dir / LEARNER,
        filter=layout.filter_dir / FILTER,
        mail_user=MAIL_USER,
    )


def lda(program: str) -> str:
    """dovecot-lda beside the installed ``dovecot`` (not on PATH: in Dovecot's libexec)."""
    for folder in ("/usr/lib/dovecot", "/usr/libexec/dovecot"):
        path = Path(folder) / "dovecot-lda"
        if path.exists():
            return str(path)
    raise AssertionError(f"{program} is installed but dovecot-lda is not in its libexec folder")


class Dovecot:
    """``dovecot -F`` on a prepared layout; a context manager that stops it."""

    def __init__(self, program: str, layout: Layout) -> None:
        self.layout = layout
        self._program = program
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Dovecot:
        self._process = subprocess.Popen(
            [self._program, "-c", str(self.layout.config), "-F"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 15
        while not self._answers():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dovecot did not start:\n{self.diagnostics()}")
            time.sleep(0.05)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.communicate()
        shutil.rmtree(self.layout.mail, ignore_errors=True)

    def deliver(self, raw: bytes, recipient: str) -> subprocess.CompletedProcess[bytes]:
        """Deliver ``raw`` to ``recipient`` with dovecot-lda on this instance's config."""
        command = [lda(self._program), "-c", str(self.layout.config), "-d", recipient]
        return subprocess.run(
            [*command, "-f", "sender@example.net"], input=raw, capture_output=True, timeout=60
        )

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.layout.port), timeout=0.5) as sock:
                return sock.recv(64).startswith(b"* OK")
        except OSError:
            return False

    def diagnostics(self) -> str:
        """Dovecot's log so far, for assertion messages."""
        log = self.layout.log
        return log.read_text(errors="replace") if log.exists() else "(no log file)"
