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

import shutil
import subprocess
from collections.abc import Iterator
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
