"""A private Postfix instance on loopback for end-to-end milter tests.

Its own config_directory, queue_directory and data_directory, an smtpd on 127.0.0.1 at a free
port with ``smtpd_milters`` pointing at our milter, and the virtual(8) delivery agent writing
every message for example.test to one Maildir. It logs to a file (``maillog_file``; there is no
syslog in the test machine) which failure messages quote.

Postfix drops privileges: the master opens data_directory as ``postfix`` and virtual(8)
delivers as ``nobody``, and neither may enter pytest's tmp_path (mode 0700 below
/tmp/pytest-of-root). So the instance lives in a folder of its own under /tmp, readable by
them, and its log is copied to tmp_path when it stops.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.readme import snippet

MAILBOX = "user@example.test"
# The milter lines are docs/mail-servers.md's (snippet "postfix-main.cf"), with the milter's
# address replaced by the test milter's: what a reader copies is what these tests run.
PAGE_MILTER = "inet:127.0.0.1:8891"
_MAIN_CF = """\
compatibility_level = 3.6
queue_directory = {base}/queue
data_directory = {base}/data
mail_owner = postfix
setgid_group = postdrop
maillog_file = {base}/postfix.log
maillog_file_prefixes = {base}
myhostname = mx.spamfilter.test
mydomain = spamfilter.test
myorigin = $myhostname
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
smtpd_peername_lookup = no
alias_maps =
alias_database =
biff = no
virtual_mailbox_domains = example.test
virtual_mailbox_base = {base}/mail
virtual_mailbox_maps = static:inbox/
virtual_uid_maps = static:{uid}
virtual_gid_maps = static:{gid}
{milter_lines}milter_connect_timeout = 10s
milter_command_timeout = 10s
milter_content_timeout = 20s
"""
_MASTER_CF = """\
127.0.0.1:{port} inet n - n - - smtpd
pickup    unix  n - n 60   1 pickup
cleanup   unix  n - n -    0 cleanup
qmgr      unix  n - n 300  1 qmgr
rewrite   unix  - - n -    - trivial-rewrite
bounce    unix  - - n -    0 bounce
defer     unix  - - n -    0 bounce
trace     unix  - - n -    0 bounce
verify    unix  - - n -    1 verify
flush     unix  n - n 1000? 0 flush
proxymap  unix  - - n -    - proxymap
showq     unix  n - n -    - showq
error     unix  - - n -    - error
retry     unix  - - n -    - error
discard   unix  - - n -    - discard
virtual   unix  - n n -    - virtual
anvil     unix  - - n -    1 anvil
scache    unix  - - n -    1 scache
postlog   unix-dgram n - n - 1 postlogd
"""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def milter_lines(milter: str) -> str:
    """docs/mail-servers.md's main.cf milter lines, pointing at ``milter`` (Postfix notation)."""
    lines = snippet("postfix-main.cf")
    assert PAGE_MILTER in lines, f"the page's main.cf lines name no {PAGE_MILTER}"
    return lines.replace(PAGE_MILTER, milter)


def postfix_socket(libmilter_socket: str) -> str:
    """``inet:PORT@HOST`` (libmilter, our milter's notation) as Postfix writes it."""
    port, _, host = libmilter_socket.removeprefix("inet:").partition("@")
    return f"inet:{host}:{port}"


@dataclass
class PostfixInstance:
    """One private Postfix; ``start`` it, ``send`` mail with swaks, read ``delivered``."""

    postfix: str
    swaks: str
    milter: str  # in Postfix's notation: inet:127.0.0.1:PORT
    keep_log: Path
    base: Path = Path()
    port: int = 0

    def start(self, timeout: float = 20.0) -> None:
        """Write the configuration, start Postfix and wait until smtpd answers."""
        self.base = Path(tempfile.mkdtemp(prefix="spamfilter-postfix-", dir="/tmp"))
        self.base.chmod(0o755)
        self.port = free_port()
        nobody = pwd.getpwnam("nobody")
        for name in ("conf", "queue", "data", "mail"):
            (self.base / name).mkdir()
        shutil.chown(self.base / "data", "postfix")
        shutil.chown(self.base / "mail", nobody.pw_uid, nobody.pw_gid)
        main = _MAIN_CF.format(
            base=self.base,
            uid=nobody.pw_uid,
            gid=nobody.pw_gid,
            milter_lines=milter_lines(self.milter),
        )
        (self.base / "conf" / "main.cf").write_text(main)
        (self.base / "conf" / "master.cf").write_text(_MASTER_CF.format(port=self.port))
        self._postfix("start")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"Postfix did not listen on {self.port}\n{self.log()}")

    def stop(self) -> None:
        """Stop Postfix (abort if it lingers), keep its log, remove its folder."""
        if not self.base.name:
            return
        try:
            master = self._master_pid()
            self._postfix("stop", check=False)
            deadline = time.monotonic() + 10
            while master and _alive(master) and time.monotonic() < deadline:
                time.sleep(0.05)
            if master and _alive(master):
                self._postfix("abort", check=False)
        finally:
            if (self.base / "postfix.log").exists():
                shutil.copyfile(self.base / "postfix.log", self.keep_log)
            shutil.rmtree(self.base, ignore_errors=True)

    def send(self, message: Path, sender: str = "sender@example.org") -> str:
        """Send ``message`` with swaks to MAILBOX; swaks' transcript."""
        result = subprocess.run(
            [self.swaks, "--server", f"127.0.0.1:{self.port}", "--from", sender,
             "--to", MAILBOX, "--data", str(message), "--timeout", "30"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        return result.stdout + result.stderr

    def delivered(self, count: int, timeout: float = 20.0) -> list[bytes]:
        """The first ``count`` messages delivered to MAILBOX, waiting up to ``timeout`` s."""
        new = self.base / "mail" / "inbox" / "new"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = sorted(new.iterdir()) if new.is_dir() else []
            if len(found) >= count:
                return [path.read_bytes() for path in found]
            time.sleep(0.1)
        raise AssertionError(f"{count} deliveries expected within {timeout:.0f} s\n{self.log()}")

    def held(self, timeout: float = 20.0) -> list[str]:
        """Queue ids in the hold queue (where quarantined mail waits), once there is one."""
        postqueue = str(Path(self.postfix).with_name("postqueue"))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listing = subprocess.run(
                [postqueue, "-c", str(self.base / "conf"), "-j"],
                capture_output=True, text=True, timeout=30, check=False,
            )  # fmt: skip
            entries = [json.loads(line) for line in listing.stdout.splitlines() if line]
            held = [e["queue_id"] for e in entries if e.get("queue_name") == "hold"]
            if held:
                return held
            time.sleep(0.1)
        raise AssertionError(f"nothing in the hold queue within {timeout:.0f} s\n{self.log()}")

    def log(self) -> str:
        """Postfix's log so far (for failure messages)."""
        path = self.base / "postfix.log"
        text = path.read_text(errors="replace") if path.exists() else "(no log)"
        return f"--- Postfix log ({path})\n{text}"

    def _master_pid(self) -> int:
        try:
            return int((self.base / "queue" / "pid" / "master.pid").read_text().strip())
        except (OSError, ValueError):
            return 0

    def _postfix(self, command: str, check: bool = True) -> None:
        result = subprocess.run(
            [self.postfix, "-c", str(self.base / "conf"), command],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        if check and result.returncode != 0:
            raise AssertionError(
                f"postfix {command} exited {result.returncode}\n{result.stdout}{result.stderr}"
                f"{self.log()}"
            )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
