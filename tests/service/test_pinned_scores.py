"""Scores pinned bit for bit: moving the model policy between modules must not move a score.

One database learns a small generated corpus (site-wide), a user who receives the spammy
words as ham (enough of each label for verdicts of her own), and a newcomer with three
messages of his own. Each arm then judges the same probes with other model settings. The
expected log-odds are ``float.hex`` strings recorded from the code before the model policy
moved into ``app.domain.scoring``; any change in the order of floating-point operations
shows here as a failure, on SQLite and PostgreSQL alike (counts are read in token-id order).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from app.service import SpamFilter
from app.settings.schema import Settings
from tests.builders import ham_message, spam_message
from tests.service.test_learn_forget import corpus, learn_all

MakeService = Callable[..., SpamFilter]
MakeSettings = Callable[..., Settings]

# Arm -> (user, model settings, users settings).
ARMS: dict[str, tuple[str | None, dict[str, Any], dict[str, Any]]] = {
    "site": (None, {}, {}),
    "site-occurrences": (None, {"counting": "occurrences"}, {}),
    "site-every-token": (
        None,
        {"top_tokens": 0, "normalise_length": False, "distinct_min_messages": 0},
        {},
    ),
    "site-bernoulli": (None, {"kind": "bernoulli"}, {}),
    # kim's own model gives verdicts: on the ham probes (0, 2, 4) her own model calls spam and
    # the blend is served; on the spam probes (1, 3, 5) her own model says ham and overrules it
    "user-overrule": ("kim", {}, {"fallback_strength": 20}),
    "user-overrule-occurrences": ("kim", {"counting": "occurrences"}, {"fallback_strength": 20}),
    "user-bernoulli": ("kim", {"kind": "bernoulli"}, {"fallback_strength": 20}),
    # lee's three messages give no verdicts of his own: the blend alone
    "user-blend": ("lee", {}, {"fallback_strength": 20}),
}

PINNED: dict[str, list[str]] = {
    "site": [
        "-0x1.b414dafe799d4p+5",
        "0x1.98ef2ba1aeeecp+5",
        "-0x1.8a9fa1524029cp+5",
        "0x1.9a6f89d8a7f18p+5",
        "-0x1.a9aa9b328f450p+5",
        "0x1.5fe3a04884d50p+5",
    ],
    "site-occurrences": [
        "-0x1.703a8c40cb6fap+6",
        "0x1.3f167e842ade4p+6",
        "-0x1.53c5ea8b2e872p+6",
        "0x1.8a8b6ea70ad20p+6",
        "-0x1.76fc8d76a0c06p+6",
        "0x1.2153ef7a7c1bep+6",
    ],
    "site-every-token": [
        "-0x1.96cbff9c7fb92p+5",
        "0x1.a28c05e15a69ep+5",
        "-0x1.6ad2c7629ff56p+5",
        "0x1.90622e19dc3bcp+5",
        "-0x1.bf325cca77b18p+5",
        "0x1.315ae554ad1aap+5",
    ],
    "site-bernoulli": [
        "-0x1.06bc494a6ba8ap+6",
        "0x1.1bada2dc154b1p+6",
        "-0x1.c9f4efa18cb60p+5",
        "0x1.055be13930549p+6",
        "-0x1.1794ae39171d1p+6",
        "0x1.91a48bc104f79p+5",
    ],
    "user-overrule": [
        "-0x1.0a0270f5057d0p+3",
        "-0x1.7d41824128860p+5",
        "-0x1.20c2a37b3e120p+2",
        "-0x1.d52f706fd6bc8p+5",
        "-0x1.4a20082115580p+0",
        "-0x1.4e00674ec0becp+5",
    ],
    "user-overrule-occurrences": [
        "-0x1.2d2f96fcbe4d0p+3",
        "-0x1.e69705dc6e438p+5",
        "-0x1.5c4e3a3044ae0p+2",
        "-0x1.5d5cc268da876p+6",
        "-0x1.8349f54fba8c0p+1",
        "-0x1.a8ce94b0c6828p+5",
    ],
    "user-bernoulli": [
        "0x1.7606443f1c0f6p+5",
        "-0x1.8aee8377d5127p+5",
        "0x1.6dd5ecbe14084p+5",
        "-0x1.8b50638a26ec1p+5",
        "0x1.d4d0e1a85d9fap+5",
        "-0x1.23a1a76db72a3p+5",
    ],
    "user-blend": [
        "-0x1.a1a460f238bf0p+5",
        "0x1.7c5b831923754p+5",
        "-0x1.8be10efe81374p+5",
        "0x1.a17ce8d0295fcp+5",
        "-0x1.8b88d2358b8b0p+5",
        "0x1.47db43da72eacp+5",
    ],
}


def _train(service: SpamFilter) -> list[bytes]:
    """The corpus, kim's and lee's mail; the probes to judge."""
    learn_all(service, corpus(seed=41, size=60))
    rng = random.Random(42)
    for n in range(12):  # kim receives these words as ham; her spam is the usual ham words
        service.learn(spam_message(rng, 200 + n), "ham", user="kim")
        service.learn(ham_message(rng, 300 + n), "spam", user="kim")
    service.learn(spam_message(rng, 400), "spam", user="lee")
    service.learn(ham_message(rng, 401), "ham", user="lee")
    service.learn(spam_message(rng, 402), "ham", user="lee")
    return [(spam_message if n % 2 else ham_message)(rng, 900 + n) for n in range(6)]


def test_scores_are_the_ones_pinned(make_settings: MakeSettings, make_service: MakeService) -> None:
    learner = make_service(make_settings(users={"train_site": False}))
    probes = _train(learner)
    for arm, (user, model, users) in ARMS.items():
        service = make_service(make_settings(model=model, users={"train_site": False, **users}))
        found = [service.classify(raw, user=user).log_odds.hex() for raw in probes]
        assert found == PINNED[arm], arm
