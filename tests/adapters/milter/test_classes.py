"""X-Spam-Class through the real milter process and Debian's miltertest: the most likely
class where the site declares more than two classes, no such header where it declares ham
and spam only."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from app.service import SpamFilter
from app.settings.schema import Settings
from tests.adapters.milter.conftest import MilterProcess, hammy_message, spammy_message

pytestmark = pytest.mark.peer

THREE = {"model": {"classes": ["ham", "spam", "newsletter"], "junk_classes": ["spam"]}}
Miltertest = Callable[..., subprocess.CompletedProcess[str]]


def expect_classes(
    miltertest: Miltertest, milter: MilterProcess, messages: dict[str, Path], spam: str, ham: str
) -> None:
    """Run lua/classes.lua: SPAM must get X-Spam-Class ``spam``, HAM ``ham`` ("none": no
    such header)."""
    files = {"SPAM": messages["SPAM"], "HAM": messages["HAM"]}
    miltertest(
        "classes.lua", milter.socket, milter.output(), **files, SPAM_CLASS=spam, HAM_CLASS=ham
    )


def test_the_milter_inserts_the_most_likely_class(
    milter_settings: Callable[..., Settings],
    start_milter: Callable[[Settings, str], MilterProcess],
    miltertest: Miltertest,
    make_service: Callable[..., SpamFilter],
    messages: dict[str, Path],
) -> None:
    settings = milter_settings(**THREE)
    service = make_service(settings)
    spam_class = service.classify(spammy_message()).class_name
    ham_class = service.classify(hammy_message()).class_name
    assert {spam_class, ham_class} <= set(settings.model.classes)
    milter = start_milter(settings, "inet:0@127.0.0.1")
    expect_classes(miltertest, milter, messages, spam_class, ham_class)


def test_a_ham_and_spam_site_gets_no_class_header(
    milter_settings: Callable[..., Settings],
    start_milter: Callable[[Settings, str], MilterProcess],
    miltertest: Miltertest,
    messages: dict[str, Path],
) -> None:
    milter = start_milter(milter_settings(), "inet:0@127.0.0.1")
    expect_classes(miltertest, milter, messages, "none", "none")
