"""A mail user for the delivery-agent snippets: a home folder of the test's, as a new user has it.

procmail and maildrop take HOME and LOGNAME from the password database, not from the
environment, so the user is made with nss_wrapper (Debian's libnss-wrapper, a preloaded
library built for tests): a passwd file of the test gives uid 0 the name ``alice`` and the
home folder under ``tmp_path``. Both programs are set-group-id ``mail``, and the dynamic
loader ignores a preloaded library in a set-id process; run with ``setpriv --regid=mail`` the
group is already ``mail``, so nothing is set-id at exec and the library is loaded.

The home folder is what the snippets of docs/mail-servers.md assume of an installed user:
``~/.local/bin/spamfilter-filter`` (``pip install --user``; here a script that runs this
checkout's code), the default database ``~/.local/share/spamfilter/spamfilter.db`` (trained
on generated mail), and the Maildir ``~/Maildir`` with its Junk folder.
"""

from __future__ import annotations

import glob
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from app.bootstrap import build_service
from app.settings.schema import Settings
from tests.adapters.peers import require_program, require_root, unavailable
from tests.adapters.pipe.conftest import train
from tests.builders import ham_message, spam_message

PROJECT = Path(__file__).resolve().parents[1]
LOGNAME = "alice"


def nss_wrapper() -> str:
    """The path of libnss_wrapper.so; skip or fail when it is not installed."""
    found = glob.glob("/usr/lib/*/libnss_wrapper.so") + glob.glob("/usr/lib/libnss_wrapper.so")
    if not found:
        unavailable("libnss_wrapper.so is not installed (apt-get install libnss-wrapper)")
    return found[0]


def fresh_mail() -> tuple[bytes, bytes]:
    """A spammy and a hammy message the model has not learned, with LF line ends (as an
    MTA hands mail to a local delivery agent)."""
    rng = random.Random(5)
    spam, ham = spam_message(rng, 90_005), ham_message(rng, 91_005)
    return spam.replace(b"\r\n", b"\n"), ham.replace(b"\r\n", b"\n")


@dataclass(frozen=True)
class MailUser:
    """The home folder and the environment a delivery agent runs in for ``LOGNAME``."""

    home: Path
    env: dict[str, str]
    setpriv: str

    @property
    def maildir(self) -> Path:
        """The user's Maildir (the inbox)."""
        return self.home / "Maildir"

    def run(self, command: list[str], message: bytes) -> subprocess.CompletedProcess[bytes]:
        """Run ``command`` as the user's delivery agent with ``message`` on stdin, from the
        home folder."""
        args = [self.setpriv, "--regid=mail", "--clear-groups", *command]
        return subprocess.run(
            args, input=message, capture_output=True, env=self.env, cwd=self.home, timeout=60
        )

    def delivered(self, folder: str = "") -> list[bytes]:
        """The messages in ``folder`` of the Maildir ("" for the inbox, else ".NAME")."""
        new = self.maildir / folder / "new"
        return [path.read_bytes() for path in sorted(new.iterdir())] if new.is_dir() else []


def make_mail_user(tmp_path: Path) -> MailUser:
    """The user's home under ``tmp_path``, installed and trained as the module docstring says."""
    require_root("procmail and maildrop run as uid 0, named alice by nss_wrapper")
    setpriv = require_program("setpriv")
    library = nss_wrapper()
    home = tmp_path / "home"
    for folder in (".local/bin", ".local/share/spamfilter", "Maildir"):
        (home / folder).mkdir(parents=True)
    program = home / ".local" / "bin" / "spamfilter-filter"
    program.write_text(
        f'#!/bin/sh\nPYTHONPATH="{PROJECT}" exec "{sys.executable}" -m app.adapters.pipe "$@"\n'
    )
    program.chmod(0o755)
    database = home / ".local" / "share" / "spamfilter" / "spamfilter.db"
    service = build_service(Settings(_env_file=None, database_url=f"sqlite:///{database}"))
    train(service)
    service.close()
    (tmp_path / "passwd").write_text(f"{LOGNAME}:x:0:0:Alice:{home}:/bin/sh\n")
    (tmp_path / "group").write_text("root:x:0:\nmail:x:8:\n")
    # The environment an MTA gives a delivery agent: a bare PATH, no settings of ours.
    env = {
        "PATH": "/usr/bin:/bin",
        "LD_PRELOAD": library,
        "NSS_WRAPPER_PASSWD": str(tmp_path / "passwd"),
        "NSS_WRAPPER_GROUP": str(tmp_path / "group"),
    }
    return MailUser(home, env, setpriv)
