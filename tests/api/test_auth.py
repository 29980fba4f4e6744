"""Bearer tokens on feedback, forget, stats and metrics; classify, health and readiness stay
open; the bind check."""

from __future__ import annotations

import pytest

from app.binding import check_bind
from app.daemons import http_listener
from app.errors import ConfigurationError
from tests.api.conftest import Api, MakeApi, MakeSettings
from tests.api.samples import HAMMY

TOKENS = ["first-secret-token", "second-secret-token"]
PROTECTED = ["/v1/feedback?label=ham", "/v1/forget"]
PROTECTED_GETS = ["/v1/stats", "/metrics"]


@pytest.fixture
def secured(make_api: MakeApi) -> Api:
    """An app with two API tokens configured."""
    return make_api(api_tokens=TOKENS)


@pytest.mark.parametrize("path", PROTECTED)
@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", "Bearer ", "Basic Zmlyc3Qtc2VjcmV0LXRva2Vu", TOKENS[0]],
    ids=["missing", "wrong", "empty", "basic", "no-scheme"],
)
def test_protected_routes_refuse_without_a_valid_token(
    secured: Api, path: str, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    reply = secured.client.post(path, content=HAMMY, headers=headers)
    assert reply.status_code == 401
    assert reply.json()["error"] == "not_authenticated"
    assert set(reply.json()) == {"error", "detail"}
    assert reply.headers["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize("path", PROTECTED)
@pytest.mark.parametrize("token", TOKENS)
def test_protected_routes_accept_any_configured_token(secured: Api, path: str, token: str) -> None:
    reply = secured.client.post(path, content=HAMMY, headers={"Authorization": f"Bearer {token}"})
    assert reply.status_code == 200


def test_the_token_is_checked_before_the_body_is_judged(secured: Api) -> None:
    reply = secured.client.post("/v1/forget", content=b"")
    assert reply.status_code == 401


def test_open_routes_need_no_token(secured: Api) -> None:
    assert secured.client.post("/v1/classify", content=HAMMY).status_code == 200
    for path in ("/healthz", "/readyz", "/openapi.json"):
        assert secured.client.get(path).status_code == 200, path


@pytest.mark.parametrize("path", PROTECTED_GETS)
@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token"], ids=["missing", "wrong"])
def test_stats_and_metrics_refuse_without_a_valid_token(
    secured: Api, path: str, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    reply = secured.client.get(path, headers=headers)
    assert reply.status_code == 401
    assert reply.json()["error"] == "not_authenticated"
    assert reply.headers["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize("path", PROTECTED_GETS)
def test_stats_and_metrics_answer_a_valid_token(secured: Api, path: str) -> None:
    reply = secured.client.get(path, headers={"Authorization": f"Bearer {TOKENS[1]}"})
    assert reply.status_code == 200


@pytest.mark.parametrize("path", PROTECTED_GETS)
def test_stats_and_metrics_are_open_without_tokens_configured(api: Api, path: str) -> None:
    assert api.client.get(path).status_code == 200


@pytest.mark.parametrize("path", PROTECTED)
def test_without_tokens_configured_everything_is_open(api: Api, path: str) -> None:
    assert api.client.post(path, content=HAMMY).status_code == 200


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_check_bind_allows_loopback_without_tokens(
    make_api_settings: MakeSettings, host: str
) -> None:
    check_bind(http_listener(make_api_settings(server={"host": host})))


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "mail.example.org"])
def test_check_bind_refuses_public_address_without_tokens(
    make_api_settings: MakeSettings, host: str
) -> None:
    with pytest.raises(ConfigurationError, match="API tokens"):
        check_bind(http_listener(make_api_settings(server={"host": host})))


@pytest.mark.parametrize(
    "overrides",
    [{"api_tokens": TOKENS}, {"server": {"host": "0.0.0.0", "allow_public_bind": True}}],
    ids=["tokens", "opt-out"],
)
def test_check_bind_allows_public_address_with_tokens_or_opt_out(
    make_api_settings: MakeSettings, overrides: dict[str, object]
) -> None:
    check_bind(http_listener(make_api_settings(**{"server": {"host": "0.0.0.0"}, **overrides})))
