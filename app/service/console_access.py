"""Who may use the console, in the database so that every worker and replica agrees.

* The key that signs session cookies, when ``console.session_key`` is not set: a random
  secret made once, on first use, and kept. Never derived from the API tokens: a cookie
  signed with a key made from them would let whoever holds one cookie test guesses of a weak
  token offline.
* Logging out revokes the session: its nonce is kept until the session would have expired,
  and a cookie naming it is refused by every process.
* Failed logins are counted per client address in a fixed window (like Postfix's anvil
  counting per client): past ``console.login_failures`` in ``console.login_window_seconds``
  the client is refused, without its token being checked, until the window ends. Every
  attempt counts when it starts and a successful one is given back, so that concurrent
  attempts in several workers can never check more tokens than the limit allows.

Each call is one transaction.
"""

from __future__ import annotations

import ipaddress
import math
import secrets
from datetime import UTC, datetime, timedelta

from app.settings.schema import Settings
from app.storage.console_access import LoginWindow
from app.storage.store import Store

SESSION_SECRET = "session_key"
# An IPv6 client is counted by its /64: one host is usually given a whole /64, and counting
# its addresses one by one would let it try 2**64 times as often.
IPV6_CLIENT_PREFIX = 64


def client_key(host: str | None) -> str:
    """The name failed logins are counted under for a client at ``host``: the IPv4 address,
    the IPv6 /64 network (an IPv4 address mapped into IPv6 is the IPv4 address), or the
    text as given when it is not an address (at most 64 characters)."""
    if not host:
        return "unknown"
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host[:64]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_CLIENT_PREFIX), strict=False))
    return str(address)


class ConsoleGuard:
    """The console's signing secret, revoked sessions and login throttle."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self._limit = settings.console.login_failures
        self._window = timedelta(seconds=settings.console.login_window_seconds)

    def session_secret(self) -> str:
        """The kept signing secret, made now if none exists yet (the first process to ask
        makes it; every other one reads the same)."""
        with self._store.transaction(write=False) as tx:
            kept = tx.console_access().secret(SESSION_SECRET)
        if kept is not None:
            return kept
        with self._store.transaction(write=True) as tx:
            made = secrets.token_urlsafe(32)
            return tx.console_access().keep_secret(SESSION_SECRET, made, _now())

    def revoke(self, nonce: str, expires_at: datetime) -> None:
        """End the session ``nonce`` (which would expire at ``expires_at``) everywhere."""
        with self._store.transaction(write=True) as tx:
            tx.console_access().revoke(nonce, expires_at, _now())

    def is_revoked(self, nonce: str) -> bool:
        """True when the session ``nonce`` was ended by logging out."""
        with self._store.transaction(write=False) as tx:
            return tx.console_access().is_revoked(nonce)

    def admit_login(self, client: str, now: datetime | None = None) -> float | None:
        """Count a login attempt from ``client`` (see ``client_key``) before its token is
        checked: None when it may go on, else the seconds until the client may try again
        (its failures reached ``console.login_failures`` in the current window). A limit of
        0 admits every attempt and counts nothing."""
        if self._limit == 0:
            return None
        now = now or _now()
        # A client already held back is told so by a read: a flood of refused attempts
        # writes nothing, and never waits for the database's write lock.
        with self._store.transaction(write=False) as tx:
            wait = self._wait(tx.console_access().current_window(client), now)
        if wait is not None:
            return wait
        with self._store.transaction(write=True) as tx:
            access = tx.console_access()
            access.forget_login_windows(now - self._window)
            window = access.login_window(client, now)
            if window.started_at + self._window <= now:
                window = LoginWindow(now, 0)
            wait = self._wait(window, now)
            if wait is None:
                counted = LoginWindow(window.started_at, window.failures + 1)
                access.set_login_window(client, counted)
        return wait

    def _wait(self, window: LoginWindow | None, now: datetime) -> float | None:
        """Seconds until a client with ``window`` may try again, None when it may now."""
        if window is None or window.failures < self._limit:
            return None
        left = (window.started_at + self._window - now).total_seconds()
        return None if left <= 0 else float(max(1, math.ceil(left)))

    def login_succeeded(self, client: str, now: datetime | None = None) -> None:
        """Give back the attempt ``admit_login`` counted for ``client``: its token was right."""
        if self._limit == 0:
            return
        now = now or _now()
        with self._store.transaction(write=True) as tx:
            access = tx.console_access()
            window = access.login_window(client, now)
            failures = max(window.failures - 1, 0)
            access.set_login_window(client, LoginWindow(window.started_at, failures))


def _now() -> datetime:
    return datetime.now(UTC)
