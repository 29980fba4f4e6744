"""Messages learned while the digest left out only our own X-Spam fields are still found:
relearning them changes nothing, and relabelling and forgetting act on the old record."""

from __future__ import annotations

import random

from app.service import Analysed, Outcome, SpamFilter
from tests.builders import ham_message, spam_message
from tests.storage.snapshot import snapshot

# A field another filter (or a sender) adds: left out of the digest now, kept in it before.
CHECKER = b"X-Spam-Checker-Version: SpamAssassin 3.4.6 on mx.example.org\n"


def learned_by_an_older_version(service: SpamFilter, raw: bytes, label: str) -> str:
    """Learn ``raw`` as the older digest named it; returns that digest."""
    analysed = service.analyse(raw, legacy=True)
    assert analysed.legacy_digest is not None and analysed.legacy_digest != analysed.digest
    older = Analysed(analysed.legacy_digest, analysed.tokens, analysed.truncated)
    assert service.learn(older, label).outcome == Outcome.LEARNED
    return analysed.legacy_digest


def test_a_message_learned_under_the_older_digest_is_not_learned_twice(
    service: SpamFilter, database_url: str
) -> None:
    rng = random.Random(3)
    assert service.learn(spam_message(rng, 0), "spam").outcome == Outcome.LEARNED
    assert service.learn(ham_message(rng, 0), "ham").outcome == Outcome.LEARNED
    before = snapshot(database_url)
    raw = CHECKER + spam_message(rng, 1)
    learned_by_an_older_version(service, raw, "spam")
    once = snapshot(database_url)

    assert service.learn(raw, "spam").outcome == Outcome.UNCHANGED
    assert snapshot(database_url) == once
    assert service.learn(raw, "ham").outcome == Outcome.RELABELLED
    assert service.stats().labels["ham"].messages == 2
    assert service.stats().labels["spam"].messages == 1
    assert service.forget(raw).outcome == Outcome.FORGOTTEN
    assert snapshot(database_url) == before
    assert service.forget(raw).outcome == Outcome.UNKNOWN
