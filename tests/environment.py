"""The process environment of a test: a developer's SPAMFILTER_* settings must not leak in.

The SPAMFILTER_TEST_* variables (which database or peers the suite may use) are kept.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import pytest


def is_setting(name: str) -> bool:
    """Whether ``name`` is a spamfilter setting (SPAMFILTER_*, but not SPAMFILTER_TEST_*)."""
    return name.startswith("SPAMFILTER_") and not name.startswith("SPAMFILTER_TEST_")


def drop_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset every spamfilter setting in this process for the test's duration."""
    for name in [name for name in os.environ if is_setting(name)]:
        monkeypatch.delenv(name)


def without_settings(extra: Mapping[str, str] = {}) -> dict[str, str]:
    """os.environ without spamfilter settings, plus ``extra``: for a child process."""
    env = {name: value for name, value in os.environ.items() if not is_setting(name)}
    env.update(extra)
    return env
