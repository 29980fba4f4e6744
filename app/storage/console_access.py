"""The console's access tables (``tables.py``): the signing secret, revoked sessions and
failed logins per client.

``ConsoleAccess`` is bound to one open transaction, like every repository here, and never
commits. Times are timezone-aware UTC datetimes; SQLite hands them back naive, and they are
read as UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, delete, select, update

from app.storage import dialect
from app.storage.tables import console_login, console_revoked, console_secret


@dataclass(frozen=True, slots=True)
class LoginWindow:
    """One client's failed logins counted since ``started_at``."""

    started_at: datetime
    failures: int


class ConsoleAccess:
    """Reads and writes of the console's access tables in one transaction."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def secret(self, name: str) -> str | None:
        """The secret called ``name``, None when none was made yet."""
        table = console_secret
        found = self._conn.execute(select(table.c.value).where(table.c.name == name)).first()
        return None if found is None else str(found[0])

    def keep_secret(self, name: str, value: str, now: datetime) -> str:
        """Keep ``value`` as the secret ``name`` unless one is kept already (another process
        may have made it first); the secret kept."""
        row = {"name": name, "value": value, "created_at": now}
        dialect.insert_if_absent(self._conn, console_secret, row)
        kept = self.secret(name)
        assert kept is not None  # inserted now, or by the writer that won
        return kept

    def revoke(self, nonce: str, expires_at: datetime, now: datetime) -> None:
        """Note that the session ``nonce`` ended; forget sessions that have expired since."""
        table = console_revoked
        self._conn.execute(delete(table).where(table.c.expires_at <= now))
        dialect.insert_if_absent(self._conn, table, {"nonce": nonce, "expires_at": expires_at})

    def is_revoked(self, nonce: str) -> bool:
        """True when the session ``nonce`` was ended."""
        table = console_revoked
        return (
            self._conn.execute(select(table.c.nonce).where(table.c.nonce == nonce)).first()
            is not None
        )

    def current_window(self, client: str) -> LoginWindow | None:
        """``client``'s failed logins as they are, None when none are counted; no lock."""
        table = console_login
        found = self._conn.execute(
            select(table.c.window_started_at, table.c.failures).where(table.c.client == client)
        ).first()
        return None if found is None else LoginWindow(_utc(found[0]), int(found[1]))

    def login_window(self, client: str, now: datetime) -> LoginWindow:
        """``client``'s failed logins, its row locked until the transaction ends (a new
        client starts a window at ``now``)."""
        table = console_login
        row = {"client": client, "window_started_at": now, "failures": 0}
        dialect.insert_if_absent(self._conn, table, row)
        found = self._conn.execute(
            select(table.c.window_started_at, table.c.failures)
            .where(table.c.client == client)
            .with_for_update()
        ).one()
        return LoginWindow(_utc(found[0]), int(found[1]))

    def set_login_window(self, client: str, window: LoginWindow) -> None:
        """Store ``client``'s failed logins."""
        table = console_login
        self._conn.execute(
            update(table)
            .where(table.c.client == client)
            .values(window_started_at=window.started_at, failures=window.failures)
        )

    def forget_login_windows(self, started_before: datetime) -> None:
        """Delete the windows of every client that started before ``started_before``."""
        table = console_login
        self._conn.execute(delete(table).where(table.c.window_started_at < started_before))


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
