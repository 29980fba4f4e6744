"""The pipe filter's --user: the direct path and the HTTP client judge with that user's model.

Runs on SQLite and PostgreSQL. Alice's model learned the training mail with its labels
swapped, so the models disagree on every message.
"""

from __future__ import annotations

import random
import sys
import urllib.parse
from collections.abc import Callable

import pytest

from app.adapters.pipe import client
from app.service import SpamFilter
from app.settings.schema import Settings
from tests.adapters.pipe.conftest import RunFilter, train
from tests.adapters.pipe.daemons import http_service
from tests.builders import ham_message, spam_message

ALICE = "alice@example.org"
CLI_FILTER = (sys.executable, "-c", "from app.cli import main; main()", "filter")
# Alice's model alone judges her mail in the direct runs below.
ALONE = {"SPAMFILTER_USERS__FALLBACK_STRENGTH": "0"}


@pytest.fixture
def two_models(
    make_settings: Callable[..., Settings], make_service: Callable[..., SpamFilter]
) -> SpamFilter:
    """The site-wide model trained as usual, Alice's backwards (and not into the site's)."""
    service = make_service(make_settings(users={"train_site": False}))
    train(service)
    rng = random.Random(7)
    for serial in range(20):
        service.learn(spam_message(rng, serial), "ham", ALICE)
        service.learn(ham_message(rng, 1000 + serial), "spam", ALICE)
    return service


def test_the_direct_path_uses_the_users_model(
    two_models: SpamFilter, run_filter: RunFilter
) -> None:
    raw = ham_message(random.Random(30), 3000)
    site = run_filter(raw)
    mine = run_filter(raw, "--user", ALICE, env=ALONE)
    assert (site.returncode, mine.returncode) == (1, 0), mine.stderr  # ham, spam
    assert mine.stdout.startswith(b"X-Spam-Flag: YES\r\n")
    cli = run_filter(raw, "-u", "Alice@Example.org", env=ALONE, command=CLI_FILTER)
    assert (cli.returncode, cli.stdout) == (0, mine.stdout)


@pytest.mark.parametrize("command", [(), CLI_FILTER], ids=["filter", "cli"])
def test_a_user_that_names_no_model_passes_the_message_through(
    two_models: SpamFilter, run_filter: RunFilter, command: tuple[str, ...]
) -> None:
    raw = ham_message(random.Random(31), 3001)
    kwargs = {"command": command} if command else {}
    result = run_filter(raw, "--user", "a/b", **kwargs)
    assert (result.returncode, result.stdout) == (3, raw)
    assert b"invalid_user: user name 'a/b' holds '/'" in result.stderr


def test_the_http_client_passes_the_user_on(
    two_models: SpamFilter, run_filter: RunFilter, database_url: str
) -> None:
    raw = spam_message(random.Random(32), 3002)
    daemon = {client.URL_VARIABLE: ""}
    with http_service(database_url) as url:
        daemon[client.URL_VARIABLE] = url
        remote = run_filter(raw, "--user", ALICE, env=daemon)
        remote_site = run_filter(raw, env=daemon)
        bad = run_filter(raw, "--user", "a b", env=daemon)
    direct = run_filter(raw, "--user", ALICE)
    assert remote.stderr == b""
    assert (remote.returncode, remote.stdout) == (direct.returncode, direct.stdout)
    assert remote.stdout != remote_site.stdout  # her counts moved the score
    assert (bad.returncode, bad.stdout) == (3, raw)
    assert b"invalid_user" in bad.stderr and b"classifying directly" not in bad.stderr


def test_a_user_is_percent_encoded_in_the_query() -> None:
    name = "Zoë Smith+tag@example.org/&?=#%"
    encoded = client.query_value(name)
    assert encoded.isascii() and not set(encoded) & set(" +/&?=#")
    assert urllib.parse.unquote(encoded) == name
    assert client.query_value("a.b-c_d~e") == "a.b-c_d~e"
