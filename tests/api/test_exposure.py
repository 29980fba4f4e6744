"""What the HTTP API gives away: learned header/address/URL tokens only to token holders, and
never a database host, port or password in an error."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from app.errors import StorageConflict, StorageUnavailable
from app.service.exposure import hide_token
from tests.api.conftest import Api, MakeApi
from tests.api.samples import HAMMY, SPAMMY

TOKEN = "exposure-test-token"
TRUSTED = {"Authorization": f"Bearer {TOKEN}"}
# Values the sample spam teaches as header tokens: senders' addresses and domains.
LEARNED_VALUES = ("win.biz", "rx.biz", "z@win.biz")


@pytest.mark.parametrize(
    ("token", "shown"),
    [
        ("viagra", "viagra"),
        ("from:addr:alice@example.org", "from:addr:*"),
        ("from:domain:example.org", "from:domain:*"),
        ("from:name:alice", "from:name:*"),
        ("subject:free", "subject:*"),
        ("received:ip:10.1.2", "received:ip:*"),
        ("received:ip6:2001:db8::/32", "received:ip6:*"),
        ("url:host:intranet.example.org", "url:host:*"),
        ("mime:charset:utf-8", "mime:charset:*"),
        ("subject:skip:x:40", "subject:skip:*"),
        ("x-mailer:outlook:16", "x-mailer:*"),
        ("meta:truncated", "meta:*"),
    ],
)
def test_hide_token_keeps_the_namespace_and_hides_the_value(token: str, shown: str) -> None:
    assert hide_token(token) == shown


@pytest.fixture
def trained(make_api: MakeApi) -> Api:
    """An app with an API token, trained on the sample ham and spam."""
    api = make_api(api_tokens=[TOKEN])
    api.train(TOKEN)
    return api


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token"], ids=["none", "wrong"])
def test_classify_without_a_token_hides_learned_header_values(
    trained: Api, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    anonymous = trained.client.post("/v1/classify", content=SPAMMY, headers=headers)
    trusted = trained.client.post("/v1/classify", content=SPAMMY, headers=TRUSTED)
    assert anonymous.status_code == trusted.status_code == 200
    seen, full = anonymous.json(), trusted.json()
    for key in ("verdict", "log_odds", "spam_probability", "log_posteriors", "digest"):
        assert seen[key] == full[key], key
    assert seen["verdict"] == "spam"
    assert [c["weight"] for c in seen["clues"]] == [c["weight"] for c in full["clues"]]
    assert [c["token"] for c in seen["clues"]] == [hide_token(c["token"]) for c in full["clues"]]
    fields = [c["token"] for c in seen["clues"] if ":" in c["token"]]
    assert fields, "the sample spam is decided by header tokens too"
    assert all(token.endswith(":*") for token in fields)
    for value in LEARNED_VALUES:
        assert value not in anonymous.text  # in neither the clues nor the X-Spam headers
    assert any(value in trusted.text for value in LEARNED_VALUES)


def test_body_words_are_shown_to_everyone(trained: Api) -> None:
    seen = trained.client.post("/v1/classify", content=SPAMMY).json()
    assert any(":" not in clue["token"] for clue in seen["clues"])


def test_without_tokens_configured_every_clue_is_shown(api: Api) -> None:
    api.train()
    seen = api.client.post("/v1/classify", content=SPAMMY).json()
    assert any(":" in c["token"] and not c["token"].endswith(":*") for c in seen["clues"])


OUTAGE = (
    'connection to server at "10.1.2.3", port 5432 failed: FATAL: password authentication '
    'failed for user "spamfilter" (postgresql://spamfilter:hunter2-secret@10.1.2.3:5432/mail)'
)
SECRETS = ("10.1.2.3", "5432", "hunter2-secret", "postgresql://", 'user "spamfilter"')


def _raise(error: Exception) -> Any:
    def fail(*_args: object, **_kwargs: object) -> Any:
        raise error

    return fail


@pytest.mark.parametrize(
    ("method", "path", "call"),
    [
        ("POST", "/v1/classify", "classify"),
        ("POST", "/v1/feedback?label=ham", "learn"),
        ("POST", "/v1/forget", "forget"),
        ("GET", "/v1/stats", "stats"),
    ],
)
@pytest.mark.parametrize("error_class", [StorageUnavailable, StorageConflict])
def test_a_database_outage_never_shows_its_host_port_or_password(
    api: Api,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    method: str,
    path: str,
    call: str,
    error_class: type[Exception],
) -> None:
    monkeypatch.setattr(api.service, call, _raise(error_class(OUTAGE)))
    with caplog.at_level(logging.WARNING, logger="app.api"):
        reply = api.client.request(method, path, content=HAMMY if method == "POST" else None)
    assert reply.status_code == 503
    assert set(reply.json()) == {"error", "detail"}
    assert "retry shortly" in reply.json()["detail"]
    for secret in SECRETS:
        assert secret not in reply.text
        assert secret not in str(reply.headers)
    assert OUTAGE in caplog.text  # the whole story is in the server log


def test_readyz_in_an_outage_never_shows_its_host_port_or_password(
    api: Api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Readiness is asked either way the route may ask it: a failed check or a reason.
    monkeypatch.setattr(api.service, "is_ready", _raise(StorageUnavailable(OUTAGE)))
    monkeypatch.setattr(api.service, "readiness", lambda: OUTAGE, raising=False)
    monkeypatch.setattr(api.service, "unready", lambda: StorageUnavailable(OUTAGE), raising=False)
    with caplog.at_level(logging.WARNING, logger="app.api"):
        reply = api.client.get("/readyz")
    assert reply.status_code == 503
    assert reply.json()["error"] == "storage_unavailable"
    for secret in SECRETS:
        assert secret not in reply.text
    assert OUTAGE in caplog.text


@pytest.mark.parametrize("error_class", [RecursionError, MemoryError, KeyError, RuntimeError])
def test_an_unexpected_error_shows_no_traceback(
    make_api: MakeApi, error_class: type[Exception]
) -> None:
    api = make_api(raise_errors=False)
    api.service.classify = _raise(error_class(OUTAGE))  # type: ignore[method-assign]
    reply = api.client.post("/v1/classify", content=HAMMY)
    assert reply.status_code == 500
    assert reply.json() == {"error": "internal_error", "detail": "internal server error"}
    for secret in (*SECRETS, "Traceback", error_class.__name__):
        assert secret not in reply.text
    assert api.app.state.budget.held == 0
