"""Faults of a SQLite file that the suite can cause for real, even as root.

Root ignores permission bits, so ``chmod a-w`` would not stop SQLite writing in CI. The
immutable attribute (``chattr +i``) stops everyone, root included, on the Linux file systems
that have it (ext4, where tmp_path lives here; a test skips where it is refused):
open(O_RDWR) fails with EPERM, and access(W_OK) says no, just as they do for a
service user facing ``chmod a-w``. SQLite then opens the file read-only and its writes fail
with "attempt to write a readonly database"; an immutable folder refuses the -wal and -shm
files. The attribute is always cleared again, so that tmp_path can be removed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.adapters.peers import unavailable


@contextmanager
def immutable(path: Path) -> Iterator[None]:
    """``path`` (a file or folder) cannot be written, created in or removed, by anyone."""
    chattr = shutil.which("chattr")
    if chattr is None:
        unavailable("chattr (e2fsprogs) is not installed")
    done = subprocess.run([chattr, "+i", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        unavailable(f"chattr +i is refused here: {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)


def remove_database(path: Path) -> None:
    """``rm spamfilter.db spamfilter.db-wal spamfilter.db-shm`` (those that exist)."""
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


UNPRIVILEGED = 65534  # nobody


@contextmanager
def unprivileged_folder() -> Iterator[Path]:
    """A new folder the unprivileged user owns, reachable by it (under the system's /tmp:
    pytest's tmp_path sits in a folder only root may enter)."""
    folder = Path(tempfile.mkdtemp(prefix="spamfilter-unprivileged-"))
    try:
        if os.geteuid() == 0:
            os.chown(folder, UNPRIVILEGED, UNPRIVILEGED)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def as_unprivileged(scenario: Callable[[], object]) -> object:
    """``scenario()``'s result, run as an unprivileged user: chmod binds it, as it binds a
    service user (root ignores mode bits). As root the scenario runs in a forked child that
    drops to ``nobody`` (the modules it needs must be imported before); its result, or the
    text of what it raised, comes back as JSON. Not root already: it runs here."""
    if os.geteuid() != 0:
        return scenario()
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's coverage is not collected
        os.close(reader)
        try:
            os.setgroups([])
            os.setgid(UNPRIVILEGED)
            os.setuid(UNPRIVILEGED)
            outcome: object = {"result": scenario()}
        except BaseException as error:  # every failure must reach the parent
            outcome = {"error": f"{type(error).__name__}: {error}"}
        with os.fdopen(writer, "w") as out:
            json.dump(outcome, out)
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as got:
        text = got.read()
    os.waitpid(child, 0)
    outcome = json.loads(text)
    if "error" in outcome:
        raise AssertionError(f"as the unprivileged user: {outcome['error']}")
    return outcome["result"]
