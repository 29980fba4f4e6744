"""Hostile and malformed requests to the console: refused plainly, never a 500, never a
session for an empty token, never an unbounded read."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from app.api.app import create_app
from app.api.console.session import COOKIE, Keys
from app.service.events import Event
from app.telemetry.recorder import Recorder
from tests.console.conftest import Console, MakeConsole, csrf_of


def test_a_blank_token_in_the_settings_opens_nothing(make_console: MakeConsole) -> None:
    console = make_console(api_tokens=["", "  ", "real-admin"])
    assert console.settings.api_tokens == ["real-admin"]
    form = console.client.get("/ui/login")
    for data in ({"token": ""}, {}):  # an empty token, and no token field at all
        reply = console.client.post("/ui/login", data={**data, "csrf": csrf_of(form.text)})
        assert reply.status_code == 401, reply.text
    assert Keys(console.settings, "a secret").role_of("") is None


def test_odd_cookies_and_csrf_values_are_refused_not_crashed(console: Console) -> None:
    odd = f"{COOKIE}=admin.1.x.y.é".encode("latin-1")
    reply = console.client.get("/ui/", headers={"cookie": odd}, follow_redirects=False)
    assert reply.status_code in (302, 303, 307), reply.text  # to the login page
    console.login()
    reply = console.client.post("/ui/scan", data={"raw": "x", "csrf": "é"})
    assert reply.status_code == 403


@pytest.mark.parametrize("before", ["²", "99999999999999999999", "-1", "1e3"])
def test_odd_history_positions_are_ignored(console: Console, before: str) -> None:
    console.login()
    assert console.client.get("/ui/history", params={"before": before}).status_code == 200


@pytest.mark.parametrize("entry", ["99999999999999999999", "0", "-5"])
def test_impossible_history_ids_are_422(console: Console, entry: str) -> None:
    console.login()
    assert console.client.get(f"/ui/history/{entry}").status_code == 422


def test_a_raw_byte_in_a_form_is_read_as_text(console: Console) -> None:
    console.login()
    body = (
        b"raw=Subject%3A+x%0A%0Ahello+\xff&action=classify&csrf="
        + console.csrf("/ui/scan").encode()
    )
    reply = console.client.post(
        "/ui/scan",
        content=body,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert reply.status_code == 200, reply.text


def test_the_login_form_is_read_under_a_small_cap(console: Console) -> None:
    form = console.client.get("/ui/login")
    reply = console.client.post(
        "/ui/login", data={"token": "x" * 20_000, "csrf": csrf_of(form.text)}
    )
    assert reply.status_code == 413


def test_a_form_that_never_arrives_is_408(make_console: MakeConsole) -> None:
    """The login form is read under the API's read deadline (a stalled client is cut off)."""
    console = make_console(server={"read_timeout_seconds": 0.05})
    app = create_app(console.settings, console.service)
    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        await asyncio.sleep(3600)  # the body never comes
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "https",
        "path": "/ui/login",
        "raw_path": b"/ui/login",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/x-www-form-urlencoded"), (b"host", b"t")],
        "client": ("127.0.0.1", 1),
        "server": ("t", 443),
        "app": app,
        "state": {},
    }

    async def run() -> None:
        async with asyncio.timeout(10):
            await app.router.lifespan_context(app).__aenter__()
            await app(scope, receive, send)

    asyncio.run(run())
    starts = [m for m in sent if m["type"] == "http.response.start"]
    assert starts and starts[0]["status"] == 408


def test_the_recorder_keeps_a_classifys_tokens_only(console: Console) -> None:
    kept: list[Event] = []
    recorder = Recorder(kept.extend, 60, 100, 100, keep_tokens=True)
    dropping = Recorder(kept.extend, 60, 100, 100, keep_tokens=False)
    now = datetime.now(UTC)
    for call in ("classify", "learn"):
        event = Event(now, call, "http", None, "ham", 0.001, tokens={"word": 1})
        recorder.observe(event)
        dropping.observe(event)
    recorder.flush()
    dropping.flush()
    assert [e.tokens for e in kept] == [{"word": 1}, None, None, None]


def test_the_api_docs_may_not_be_framed(console: Console) -> None:
    for path in ("/docs", "/redoc"):
        reply = console.client.get(path)
        assert reply.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in reply.headers["content-security-policy"]
