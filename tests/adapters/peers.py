"""Finding the real peer programs the adapter tests drive (spamc, miltertest, postfix, ...).

A missing program skips its test on a developer's machine; with
SPAMFILTER_TEST_REQUIRE_PEERS=1 (set by .ci/run, which installs them all) it fails instead,
so CI can never pass by skipping the real-peer tests.
"""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest


def require_program(name: str) -> str:
    """The path of ``name`` on PATH (or /usr/sbin); skip or fail when it is missing."""
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/sbin")
    if path:
        return path
    unavailable(f"{name} is not installed (apt-get install it, or run .ci/run)")


def require_root(why: str) -> None:
    """Skip or fail unless the tests run as root; ``why`` says what needs it."""
    if os.geteuid() != 0:
        unavailable(why)


def unavailable(message: str) -> NoReturn:
    """Skip the test, or fail it when CI requires every peer (SPAMFILTER_TEST_REQUIRE_PEERS=1)."""
    if os.environ.get("SPAMFILTER_TEST_REQUIRE_PEERS") == "1":
        pytest.fail(message)
    pytest.skip(message)
