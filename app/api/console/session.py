"""Console sessions: a signed cookie naming a role, and a CSRF token bound to it.

The cookie holds ``role.expiry.token-fingerprint.nonce`` and an HMAC-SHA256 over them; no
token is stored in it, only a keyed fingerprint, checked against the configured tokens on
every request, so removing a token from the settings ends its sessions. The key is made from
a secret: ``console.session_key``, or else a random one the database keeps
(``app.service.console_access``), so that every worker process, replica and restart agrees
on it. Never from the tokens: then one cookie would let its holder test guesses of a token
offline. A session ended by logging out is refused by its nonce (``access``).

A form's CSRF token is an HMAC of the session's nonce: a page from another site can neither
read it nor forge it. The login form, before any session exists, is bound the same way to
a random nonce in a short-lived cookie of its own.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from enum import StrEnum

from app.settings.schema import Settings

COOKIE = "spamfilter_console"
LOGIN_COOKIE = "spamfilter_console_login"


class Role(StrEnum):
    """What a console session may do: read (status, history, scan) or admin (also learn)."""

    READ = "read"
    ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class Session:
    """A valid console session."""

    role: Role
    expires: int
    nonce: str

    @property
    def is_admin(self) -> bool:
        """True when the session may learn and forget."""
        return self.role is Role.ADMIN


class Keys:
    """The signing key and the configured tokens of one app."""

    def __init__(self, settings: Settings, secret: str) -> None:
        """Keys for the tokens of ``settings``, signing with a key made from ``secret``."""
        self._admin = list(settings.api_tokens)
        self._read = list(settings.read_tokens)
        self._key = hashlib.sha256(b"spamfilter-console-key\0" + _bytes(secret)).digest()
        self._lifetime = int(settings.console.session_hours * 3600)

    @property
    def configured(self) -> bool:
        """True when any token is configured (without one the console refuses everyone)."""
        return bool(self._admin or self._read)

    @property
    def lifetime(self) -> int:
        """Seconds a session lasts."""
        return self._lifetime

    def role_of(self, token: str) -> Role | None:
        """The role ``token`` grants (admin wins), None for a token not configured (an empty
        one never is)."""
        if not token:
            return None
        given = _bytes(token)
        admin = [hmac.compare_digest(given, _bytes(t)) for t in self._admin if t]
        read = [hmac.compare_digest(given, _bytes(t)) for t in self._read if t]
        if any(admin):
            return Role.ADMIN
        return Role.READ if any(read) else None

    def issue(self, token: str, role: Role, now: float | None = None) -> str:
        """A cookie value for a session of ``role`` opened with ``token``."""
        expires = int(now if now is not None else time.time()) + self._lifetime
        body = f"{role.value}.{expires}.{self._fingerprint(token)}.{secrets.token_urlsafe(16)}"
        return f"{body}.{self._sign(body)}"

    def session(self, cookie: str | None, now: float | None = None) -> Session | None:
        """The session a cookie value proves, or None (forged, expired, token removed)."""
        if not cookie:
            return None
        body, _, signature = cookie.rpartition(".")
        if not body or not hmac.compare_digest(_bytes(signature), _bytes(self._sign(body))):
            return None
        try:
            role_name, expires_text, fingerprint, nonce = body.split(".")
            role, expires = Role(role_name), int(expires_text)
        except ValueError:
            return None
        if expires <= (now if now is not None else time.time()):
            return None
        tokens = self._admin if role is Role.ADMIN else self._read
        known = [
            hmac.compare_digest(_bytes(fingerprint), _bytes(self._fingerprint(t)))
            for t in tokens
            if t
        ]
        if not any(known):
            return None
        return Session(role, expires, nonce)

    def csrf(self, nonce: str) -> str:
        """The CSRF token of forms in the session (or login form) with ``nonce``."""
        return self._sign("csrf." + nonce)

    def csrf_ok(self, nonce: str, given: str | None) -> bool:
        """True when ``given`` is the CSRF token bound to ``nonce``."""
        return bool(given) and hmac.compare_digest(_bytes(self.csrf(nonce)), _bytes(given or ""))

    def _fingerprint(self, token: str) -> str:
        return self._sign("token." + token)[:22]

    def _sign(self, text: str) -> str:
        digest = hmac.new(self._key, _bytes(text), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _bytes(text: str) -> bytes:
    """``text`` as bytes for a comparison or a MAC: any string, even one holding lone
    surrogates or characters outside ASCII (hmac.compare_digest refuses those as str)."""
    return text.encode("utf-8", "surrogatepass")


def new_nonce() -> str:
    """A random nonce for a login form."""
    return secrets.token_urlsafe(16)
