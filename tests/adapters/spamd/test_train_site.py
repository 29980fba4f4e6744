"""users.train_site over spamd TELL with a user (``spamc -u NAME -L ...``): the trade-off the
Per-user models page (docs/per-user.md) reports, measured here on a small deterministic model.

Default settings (thick training) but for a low ``decision.min_messages``. A site-wide
model learns 20 generated spam and 20 ham. Bob has no model of his own, so the
site-wide model judges his mail. Then, over spamd:

* mallory tells 10 spam as ham (poisoning). With train_site on, Bob's 40 other spam go from
  40/40 judged spam to 0/40; with it off, they stay 40/40.
* alice tells 10 messages of a new spam campaign as spam (honest feedback). With train_site
  on, Bob's 40 other messages of that campaign go from 0/40 judged spam to 40/40; with it
  off, they stay 0/40 (37 unsure, 3 ham).

Runs on SQLite and PostgreSQL, with the same figures.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from app.service import SpamFilter
from app.settings.schema import Settings
from tests.adapters.spamd.conftest import Spamd, exchange, spamd_overrides, train
from tests.builders import spam_message, word_message
from tests.conftest import ServiceFactory, SettingsFactory

TOLD = 10
JUDGED = 40
CAMPAIGN = (
    "wallet", "airdrop", "token", "presale", "staking", "yield", "metamask", "seed", "phrase",
    "mint",
)  # fmt: skip
CAMPAIGN_SENDERS = ("Airdrop Team <team@drop.example>",)


def tell(port: int, user: str, label: str, message: bytes) -> None:
    head = f"TELL SPAMC/1.5\r\nMessage-class: {label}\r\nSet: local\r\nUser: {user}\r\n"
    reply = exchange(port, head.encode() + b"Content-length: %d\r\n\r\n" % len(message) + message)
    assert reply.startswith(b"SPAMD/1.1 0 EX_OK\r\n"), reply


def judged_spam(port: int, user: str, messages: list[bytes]) -> int:
    """How many of ``messages`` a CHECK for ``user`` calls spam."""
    spam = 0
    for message in messages:
        head = f"CHECK SPAMC/1.5\r\nUser: {user}\r\nContent-length: {len(message)}\r\n\r\n"
        reply = exchange(port, head.encode() + message)
        assert reply.startswith(b"SPAMD/1.1 0 EX_OK\r\n"), reply
        spam += b"Spam: True ;" in reply
    return spam


def campaign(seed: int, first: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    return [
        word_message(rng, CAMPAIGN, serial, senders=CAMPAIGN_SENDERS)
        for serial in range(first, first + count)
    ]


@pytest.fixture
def make_spamd_for(
    make_settings: SettingsFactory,
    make_service: ServiceFactory,
    run_spamd: Callable[[SpamFilter, Settings], Spamd],
) -> Callable[[bool], Spamd]:
    def make(train_site: bool) -> Spamd:
        overrides = spamd_overrides(allow_tell=True)
        users = {"train_site": train_site}
        settings = make_settings(training_mode="thick", users=users, **overrides)
        service = make_service(settings)
        train(service)
        return run_spamd(service, settings)

    return make


@pytest.mark.parametrize(("train_site", "after"), [(True, 0), (False, JUDGED)])
def test_one_users_mislabelled_spam_moves_others_verdicts_only_with_train_site(
    make_spamd_for: Callable[[bool], Spamd], train_site: bool, after: int
) -> None:
    spamd = make_spamd_for(train_site)
    bobs = [spam_message(random.Random(30), serial) for serial in range(500, 500 + JUDGED)]
    assert judged_spam(spamd.port, "bob", bobs) == JUDGED
    rng = random.Random(31)
    for serial in range(2000, 2000 + TOLD):
        tell(spamd.port, "mallory", "ham", spam_message(rng, serial))
    assert spamd.service.stats("mallory").labels["ham"].messages == TOLD
    assert judged_spam(spamd.port, "bob", bobs) == after


@pytest.mark.parametrize(("train_site", "after"), [(True, JUDGED), (False, 0)])
def test_one_users_honest_feedback_helps_others_only_with_train_site(
    make_spamd_for: Callable[[bool], Spamd], train_site: bool, after: int
) -> None:
    spamd = make_spamd_for(train_site)
    bobs = campaign(40, 500, JUDGED)
    assert judged_spam(spamd.port, "bob", bobs) == 0  # a campaign the site has not seen
    for message in campaign(41, 2000, TOLD):
        tell(spamd.port, "alice", "spam", message)
    assert spamd.service.stats("alice").labels["spam"].messages == TOLD
    assert judged_spam(spamd.port, "bob", bobs) == after
