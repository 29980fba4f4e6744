"""Pipe-filter fixtures: a trained model on this test's database, and the filter as a process.

``trained`` learns generated spam and ham (tests/builders.py) until the model gives verdicts;
``run_filter`` runs the real entry point (``python -m app.adapters.pipe``, what the
``spamfilter-filter`` console script runs) with SPAMFILTER_DATABASE_URL on this test's
database and no other SPAMFILTER_* variable of the developer's environment.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence

import pytest

from app.service import SpamFilter
from tests.builders import ham_message, spam_message
from tests.environment import without_settings

FILTER = (sys.executable, "-m", "app.adapters.pipe")
RunFilter = Callable[..., subprocess.CompletedProcess[bytes]]


def train(service: SpamFilter, count: int = 20, seed: int = 7) -> None:
    """Learn ``count`` generated spam and ``count`` generated ham messages."""
    rng = random.Random(seed)
    for serial in range(count):
        service.learn(spam_message(rng, serial), "spam")
        service.learn(ham_message(rng, 1000 + serial), "ham")


@pytest.fixture
def trained(service: SpamFilter) -> SpamFilter:
    """The test's service with enough spam and ham learned for verdicts."""
    train(service)
    return service


@pytest.fixture
def run_filter(database_url: str) -> RunFilter:
    """Run the filter process on ``raw``; ``env`` adds variables, ``command`` replaces FILTER."""

    def run(
        raw: bytes,
        *args: str,
        env: Mapping[str, str] = {},
        command: Sequence[str] = FILTER,
    ) -> subprocess.CompletedProcess[bytes]:
        variables = without_settings({"SPAMFILTER_DATABASE_URL": database_url, **env})
        return subprocess.run(
            [*command, *args], input=raw, capture_output=True, env=variables, timeout=60
        )

    return run
