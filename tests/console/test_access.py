"""Logging in and out, roles, the session cookie and CSRF on every POST."""

from __future__ import annotations

from app.api.console.session import COOKIE, Keys, Role
from tests.console.conftest import ADMIN, READER, Console, MakeConsole, csrf_of


def test_every_page_sends_a_visitor_without_a_session_to_the_login_page(
    console: Console,
) -> None:
    for path in ("/ui/", "/ui/traffic", "/ui/history", "/ui/scan", "/ui/accuracy"):
        reply = console.client.get(path, follow_redirects=False)
        assert reply.status_code == 303, path
        assert reply.headers["location"] == "/ui/login"


def test_login_sets_a_strict_http_only_secure_cookie_and_logout_clears_it(
    console: Console,
) -> None:
    console.login()
    cookie = console.client.cookies.get(COOKIE)
    assert cookie and ADMIN not in cookie  # a signed claim, never the token itself
    page = console.client.get("/ui/")
    assert page.status_code == 200 and "Status" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]

    form = console.client.get("/ui/login")
    reply = console.client.post(
        "/ui/login", data={"token": ADMIN, "csrf": csrf_of(form.text)}, follow_redirects=False
    )
    set_cookie = reply.headers["set-cookie"].lower()
    assert "httponly" in set_cookie and "samesite=strict" in set_cookie
    assert "secure" in set_cookie and "max-age=43200" in set_cookie

    out = console.client.post("/ui/logout", data={"csrf": console.csrf()}, follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/ui/login"
    assert console.client.get("/ui/", follow_redirects=False).status_code == 303


def test_a_wrong_token_is_refused_and_opens_no_session(console: Console) -> None:
    form = console.client.get("/ui/login")
    reply = console.client.post(
        "/ui/login", data={"token": "guess", "csrf": csrf_of(form.text)}, follow_redirects=False
    )
    assert reply.status_code == 401
    assert "not configured" in reply.text
    assert console.client.cookies.get(COOKIE) is None


def test_login_without_its_csrf_token_is_refused(console: Console) -> None:
    console.client.get("/ui/login")
    reply = console.client.post("/ui/login", data={"token": ADMIN, "csrf": "forged"})
    assert reply.status_code == 403
    assert console.client.cookies.get(COOKIE) is None


def test_posts_without_the_sessions_csrf_token_are_refused(console: Console) -> None:
    console.login()
    for path, data in (
        ("/ui/scan", {"raw": "Subject: hi\n\nhello", "action": "classify"}),
        ("/ui/logout", {}),
    ):
        assert console.client.post(path, data={**data, "csrf": "x"}).status_code == 403
        assert console.client.post(path, data=data).status_code == 403
    assert console.client.get("/ui/").status_code == 200  # still logged in


def test_a_read_token_may_look_and_scan_but_not_learn(console: Console) -> None:
    console.login(READER)
    page = console.client.get("/ui/scan")
    assert "Learning needs an admin" in page.text
    reply = console.client.post(
        "/ui/scan",
        data={"raw": "Subject: hi\n\nhello there", "action": "spam", "csrf": csrf_of(page.text)},
    )
    assert reply.status_code == 403
    assert console.service.stats().labels["spam"].messages == 0


def test_without_any_token_the_console_is_closed(make_console: MakeConsole) -> None:
    console = make_console(api_tokens=[], read_tokens=[])
    for path in ("/ui/", "/ui/login"):
        reply = console.client.get(path)
        assert reply.status_code == 403
        assert "SPAMFILTER_API_TOKENS" in reply.text


def test_sessions_end_when_they_expire_or_their_token_is_removed(
    make_console: MakeConsole,
) -> None:
    console = make_console()
    keys = Keys(console.settings, "a secret")
    cookie = keys.issue(ADMIN, Role.ADMIN, now=1000.0)
    assert keys.session(cookie, now=1001.0) is not None
    assert keys.session(cookie, now=1000.0 + keys.lifetime) is None
    assert keys.session(cookie[:-2] + "xx", now=1001.0) is None
    forged = cookie.replace("admin.", "read.", 1)
    assert keys.session(forged, now=1001.0) is None
    other = Keys(console.settings.model_copy(update={"api_tokens": ["another"]}), "a secret")
    assert other.session(cookie, now=1001.0) is None


def test_config_show_masks_the_read_tokens_and_the_session_key() -> None:
    from app.cli.config import effective_values

    shown = effective_values(
        {"read_tokens": ["r1"], "api_tokens": ["a1"], "console": {"session_key": "k", "x": 1}}
    )
    assert shown["read_tokens"] == ["***"] and shown["console.session_key"] == "***"
    assert "r1" not in str(shown) and "k" not in str(shown.values())


def test_with_a_session_key_removing_a_token_still_ends_its_sessions(
    make_console: MakeConsole,
) -> None:
    console = make_console(console={"session_key": "fixed"})
    cookie = Keys(console.settings, "fixed").issue(READER, Role.READ, now=1000.0)
    assert Keys(console.settings, "fixed").session(cookie, now=1001.0) is not None
    without = console.settings.model_copy(update={"read_tokens": ["another"]})
    assert Keys(without, "fixed").session(cookie, now=1001.0) is None


def test_a_disabled_console_is_not_served(make_console: MakeConsole) -> None:
    console = make_console(console={"enabled": False})
    assert console.client.get("/ui/login").status_code == 404
    assert console.client.get("/ui/static/console.js").status_code == 404


def test_static_files_are_served_from_the_package_and_nothing_else(console: Console) -> None:
    script = console.client.get("/ui/static/uPlot.iife.min.js")
    assert script.status_code == 200 and script.text.startswith("/*! https://github.com/leeoniya")
    assert "MIT" in console.client.get("/ui/static/uPlot.LICENSE.txt").text
    assert console.client.get("/ui/static/..%2Fsession.py").status_code == 404
    assert console.client.get("/ui/static/session.py").status_code == 404
