"""The daemons' listeners under the one bind rule: every daemon decides the same way."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from app.binding import Endpoint, Listener, check_bind
from app.daemons import http_listener, milter_listener, spamd_listener
from app.errors import ConfigurationError
from app.settings.schema import Settings

ListenerOn = Callable[[str, bool], Listener]


def _http(host: str, allow: bool) -> Listener:
    server = {"host": host, "allow_public_bind": allow}
    return http_listener(Settings(_env_file=None, server=server))


def _spamd(host: str, allow: bool) -> Listener:
    return spamd_listener(Settings(_env_file=None, spamd={"host": host}), allow)


def _milter(host: str, allow: bool) -> Listener:
    return milter_listener(Endpoint("inet", host=host, port=8891), allow)


DAEMONS = pytest.mark.parametrize(
    "listener", [_http, _spamd, _milter], ids=["http", "spamd", "milter"]
)


@DAEMONS
@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.53", "::1", "[::1]", "localhost"])
def test_loopback_is_always_allowed(listener: ListenerOn, host: str) -> None:
    check_bind(listener(host, False))


@DAEMONS
@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "mail.example.org"])
def test_any_other_address_needs_the_opt_in(listener: ListenerOn, host: str) -> None:
    refused = listener(host, False)
    with pytest.raises(ConfigurationError) as raised:
        check_bind(refused)
    assert str(raised.value) == refused.refusal
    assert str(raised.value).startswith("refusing to listen on ")
    check_bind(listener(host, True))


def test_a_unix_socket_is_never_refused() -> None:
    check_bind(milter_listener(Endpoint("unix", path="/run/milter.sock"), False))


def test_api_tokens_allow_a_public_http_address() -> None:
    settings = Settings(_env_file=None, server={"host": "0.0.0.0"}, api_tokens=["s3cret"])
    check_bind(http_listener(settings))
    with pytest.raises(ConfigurationError, match="without API tokens"):
        check_bind(http_listener(settings.model_copy(update={"api_tokens": []})))
