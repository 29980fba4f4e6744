"""spamc -u USER: the user's own model judges, and TELL trains it (real spamc).

Runs on SQLite and PostgreSQL. The site-wide model learns nothing from a user's feedback
here (users.train_site false) and is not blended in (fallback_strength 0), so a verdict
can only come from the user's model.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from app.service import SpamFilter
from app.settings.schema import Settings
from tests.adapters.spamd.conftest import Spamc, Spamd, exchange, spamd_overrides
from tests.builders import ham_message, spam_message
from tests.conftest import ServiceFactory, SettingsFactory

pytestmark = pytest.mark.peer

EX_ISSPAM = 1
TRAINED = 10


@pytest.fixture
def spamd(
    make_settings: SettingsFactory,
    make_service: ServiceFactory,
    run_spamd: Callable[[SpamFilter, Settings], Spamd],
) -> Spamd:
    """An untrained server that accepts TELL, users kept apart from the site-wide model."""
    users = {"train_site": False, "fallback_strength": 0}
    settings = make_settings(users=users, **spamd_overrides(allow_tell=True))
    return run_spamd(make_service(settings), settings)


def counts(service: SpamFilter, user: str | None) -> tuple[int, int]:
    labels = service.stats(user).labels
    return labels["spam"].messages, labels["ham"].messages


def test_tell_trains_and_check_uses_the_users_model(spamd: Spamd, spamc: Spamc) -> None:
    rng = random.Random(21)
    spams = [spam_message(rng, serial) for serial in range(TRAINED)]
    hams = [ham_message(rng, serial) for serial in range(TRAINED)]
    for spam, ham in zip(spams, hams, strict=True):
        for kind, message in (("spam", spam), ("ham", ham)):
            told = spamc(spamd.port, "-u", "Alice", "-L", kind, message=message)
            assert told.returncode == 0, told
    assert counts(spamd.service, "alice") == (TRAINED, TRAINED)
    assert counts(spamd.service, None) == (0, 0)
    assert counts(spamd.service, "bob") == (0, 0)

    spammy = spam_message(rng, 500)
    assert spamc(spamd.port, "-u", "alice", "-c", message=spammy).returncode == EX_ISSPAM
    assert spamc(spamd.port, "-c", message=spammy).returncode == 0  # untrained: not spam
    assert spamc(spamd.port, "-u", "bob", "-c", message=spammy).returncode == 0

    forgot = spamc(spamd.port, "-u", "alice", "-L", "forget", message=spams[0])
    assert (forgot.returncode, forgot.stdout) == (0, b"Message successfully un/learned\n")
    assert counts(spamd.service, "alice") == (TRAINED - 1, TRAINED)


def test_a_user_that_cannot_name_a_model_is_a_usage_error(spamd: Spamd) -> None:
    message = spam_message(random.Random(3), 1)
    head = b"CHECK SPAMC/1.5\r\nUser: a/b\r\nContent-length: %d\r\n\r\n" % len(message)
    reply = exchange(spamd.port, head + message)
    assert reply == b"SPAMD/1.0 64 Usage error: user name 'a/b' holds '/', which is not allowed\r\n"
    assert spamd.service.stats().labels["spam"].messages == 0
