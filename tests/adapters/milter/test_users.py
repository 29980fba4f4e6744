"""Whose model judges at the milter, through the real miltertest: one envelope recipient is
judged by that user's model; several by the site-wide model (``milter.recipients=site``, the
default) or by the first recipient's (``first``).

Alice's model learned the training mail with its labels swapped, and alone (no site-wide
fallback, nothing trained into the site-wide model), so the hammy test message is spam to
her model and ham to everyone else's. Runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import random
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.service import SpamFilter
from app.settings.schema import Settings
from tests.adapters.milter.conftest import TRAINING_MESSAGES, MilterProcess
from tests.builders import ham_message, spam_message

pytestmark = pytest.mark.peer

ALICE, BOB = "<Alice@Example.net>", "<bob@example.net>"
USERS = {"train_site": False, "fallback_strength": 0}


def teach_alice_backwards(service: SpamFilter) -> None:
    rng = random.Random(7)
    for serial in range(TRAINING_MESSAGES):
        service.learn(spam_message(rng, serial), "ham", "alice@example.net")
        service.learn(ham_message(rng, 1000 + serial), "spam", "alice@example.net")


@pytest.mark.parametrize(
    ("several", "recipients", "expect"),
    [
        ("site", [ALICE], "spam"),
        ("site", [BOB], "ham"),
        ("site", [ALICE, BOB], "ham"),
        ("first", [ALICE, BOB], "spam"),
        ("first", [BOB, ALICE], "ham"),
    ],
)
def test_the_recipients_choose_the_model(
    milter_settings: Callable[..., Settings],
    make_service: Callable[..., SpamFilter],
    start_milter: Callable[[Settings, str], MilterProcess],
    miltertest: Callable[..., subprocess.CompletedProcess[str]],
    messages: dict[str, Path],
    several: str,
    recipients: list[str],
    expect: str,
) -> None:
    overrides: dict[str, Any] = {"users": USERS, "milter": {"recipients": several}}
    settings = milter_settings(**overrides)
    service = make_service(settings)
    teach_alice_backwards(service)
    service.close()
    milter = start_milter(settings, "inet:0@127.0.0.1")
    rcpts = ",".join(recipients)
    miltertest("users.lua", milter.socket, milter.output(), HAM=messages["HAM"], RCPTS=rcpts,
               EXPECT=expect)  # fmt: skip
    assert "alice" not in milter.server_log().lower()  # the server log names no recipient


def test_a_recipient_that_names_no_model_is_judged_by_the_site_wide_model(
    milter_settings: Callable[..., Settings],
    start_milter: Callable[[Settings, str], MilterProcess],
    miltertest: Callable[..., subprocess.CompletedProcess[str]],
    messages: dict[str, Path],
) -> None:
    settings = milter_settings(mail={"on_error": "tempfail"})
    milter = start_milter(settings, "inet:0@127.0.0.1")
    odd = '<"two words"@example.net>'  # a quoted local part: white space cannot name a model
    miltertest("users.lua", milter.socket, milter.output(), HAM=messages["HAM"], RCPTS=odd,
               EXPECT="ham")  # fmt: skip
    assert "USERQUEUE1: recipient names no model; site-wide model" in milter.output()
