"""Console sessions shared by every worker: the kept signing key, logout that revokes, and
failed logins throttled per client address (on SQLite and PostgreSQL).

Two consoles made on one database stand for two workers (or replicas): each has its own app,
service and engine, and they share nothing but the database.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.api.console.session import COOKIE
from app.service.console_access import client_key
from app.storage.engine import make_engine
from tests.console.conftest import ADMIN, READER, Console, MakeConsole, csrf_of

THROTTLE = {"login_failures": 3, "login_window_seconds": 600}


def try_login(console: Console, token: str, client: TestClient | None = None) -> int:
    """POST the login form with ``token``; the status code."""
    client = client or console.client
    form = client.get("/ui/login")
    reply = client.post(
        "/ui/login", data={"token": token, "csrf": csrf_of(form.text)}, follow_redirects=False
    )
    return reply.status_code


def status_with(console: Console, cookie: str) -> int:
    """The status page's code for a request carrying the session cookie ``cookie``."""
    reply = console.client.get(
        "/ui/", headers={"cookie": f"{COOKIE}={cookie}"}, follow_redirects=False
    )
    return reply.status_code


def test_a_cookie_taken_before_logout_is_refused_by_every_worker(
    make_console: MakeConsole,
) -> None:
    first, second = make_console(), make_console()
    first.login()
    taken = first.client.cookies.get(COOKIE)
    assert taken
    assert status_with(second, taken) == 200  # both workers sign with the kept key

    out = first.client.post("/ui/logout", data={"csrf": first.csrf()}, follow_redirects=False)
    assert out.status_code == 303

    assert status_with(first, taken) == 303
    assert status_with(second, taken) == 303
    second.login()  # a new session still works
    assert second.client.get("/ui/", follow_redirects=False).status_code == 200


def test_without_a_session_key_the_key_is_a_kept_random_secret_not_the_tokens(
    make_console: MakeConsole,
) -> None:
    console = make_console()
    console.login(READER)
    cookie = console.client.cookies.get(COOKIE)
    assert cookie
    # The key the console used to derive from the tokens signs nothing now.
    body = cookie.rpartition(".")[0]
    joined = "\0".join([ADMIN, "--", READER])
    derived = hashlib.sha256(b"spamfilter-console-derived\0" + joined.encode()).digest()
    forged = hmac.new(derived, body.encode(), hashlib.sha256).digest()
    forged_cookie = f"{body}.{base64.urlsafe_b64encode(forged).decode().rstrip('=')}"
    assert forged_cookie != cookie
    assert status_with(console, forged_cookie) == 303

    engine = make_engine(console.settings.database_url)
    with engine.connect() as conn:
        kept = conn.execute(sa.text("SELECT name, value FROM console_secret")).all()
    engine.dispose()
    assert [name for name, _ in kept] == ["session_key"]
    assert len(kept[0][1]) >= 43 and ADMIN not in kept[0][1]  # 32 random bytes

    # A worker started later (a restart, another replica) reads the same secret.
    later = make_console()
    assert status_with(later, cookie) == 200


def test_a_configured_session_key_is_used_and_nothing_is_kept(make_console: MakeConsole) -> None:
    first = make_console(console={"session_key": "configured-key"})
    first.login()
    cookie = first.client.cookies.get(COOKIE)
    assert cookie
    other = make_console(console={"session_key": "another-key"})
    assert status_with(other, cookie) == 303
    engine = make_engine(first.settings.database_url)
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM console_secret")).scalar() == 0
    engine.dispose()


def test_failed_logins_are_throttled_per_address_in_every_worker(
    make_console: MakeConsole,
) -> None:
    first = make_console(console=THROTTLE)
    second = make_console(console=THROTTLE)
    assert [try_login(first, "guess-1"), try_login(second, "guess-2")] == [401, 401]
    assert try_login(first, "guess-3") == 401
    # The limit is reached: the next attempt is refused in either worker, the right token
    # included (its token is not even checked), and says when to come back.
    for console in (second, first):
        form = console.client.get("/ui/login")
        reply = console.client.post(
            "/ui/login", data={"token": ADMIN, "csrf": csrf_of(form.text)}, follow_redirects=False
        )
        assert reply.status_code == 429
        assert 1 <= int(reply.headers["retry-after"]) <= 600
        assert "Too many failed logins" in reply.text
        assert console.client.cookies.get(COOKIE) is None

    # Another address is not held back.
    with TestClient(
        first.client.app, base_url="https://testserver", client=("203.0.113.9", 1)
    ) as other:
        assert try_login(first, ADMIN, other) == 303
        assert other.cookies.get(COOKIE)


def test_successful_logins_do_not_use_up_the_limit(make_console: MakeConsole) -> None:
    console = make_console(console=THROTTLE)
    for _ in range(THROTTLE["login_failures"] * 3):
        assert try_login(console, READER) == 303
    assert try_login(console, "wrong") == 401


def test_the_window_ends_and_the_client_may_try_again(make_console: MakeConsole) -> None:
    guard = make_console(console=THROTTLE).service.console
    start = datetime(2026, 11, 28, 4, 0, tzinfo=UTC)
    assert [guard.admit_login("192.0.2.1", start) for _ in range(3)] == [None, None, None]
    assert guard.admit_login("192.0.2.1", start + timedelta(seconds=100)) == 500.0
    assert guard.admit_login("192.0.2.2", start) is None  # counted apart
    assert guard.admit_login("192.0.2.1", start + timedelta(seconds=600)) is None


def test_concurrent_attempts_never_check_more_tokens_than_the_limit(
    make_console: MakeConsole,
) -> None:
    """Every attempt counts as it starts, in one transaction per attempt, so attempts racing
    in several threads (workers) are admitted at most ``login_failures`` times."""
    guard = make_console(console=THROTTLE).service.console
    results: list[float | None] = []
    gate = threading.Barrier(12)

    def attempt() -> None:
        gate.wait()
        results.append(guard.admit_login("198.51.100.7"))

    threads = [threading.Thread(target=attempt) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(None) == THROTTLE["login_failures"]


def test_a_limit_of_zero_counts_nothing(make_console: MakeConsole) -> None:
    console = make_console(console={"login_failures": 0})
    assert all(try_login(console, f"guess-{n}") == 401 for n in range(10))
    assert try_login(console, ADMIN) == 303


def test_clients_are_counted_by_address_and_ipv6_by_its_64() -> None:
    assert client_key("192.0.2.1") == "192.0.2.1"
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:ffff::9")
    assert client_key("2001:db8:1:2::1") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key("::ffff:192.0.2.1") == "192.0.2.1"
    assert client_key(None) == "unknown" and client_key("testclient") == "testclient"


def test_a_client_held_back_is_refused_without_a_write(
    make_console: MakeConsole, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flood of refused attempts costs reads only: it never waits for the write lock."""
    service = make_console(console=THROTTLE).service
    guard = service.console
    start = datetime(2026, 11, 28, 4, 0, tzinfo=UTC)
    for _ in range(3):
        assert guard.admit_login("192.0.2.1", start) is None
    store = service._store  # the fault is injected where writes begin
    real = store.transaction

    def reads_only(write: bool) -> Any:
        assert not write, "a refused attempt wrote"
        return real(write)

    monkeypatch.setattr(store, "transaction", reads_only)
    assert guard.admit_login("192.0.2.1", start + timedelta(seconds=1)) == 599.0
