"""The console's activity tables: recent verdicts and per-minute counts (``tables.py``).

``Activity`` is bound to one open transaction, like every repository here. Per-minute rows
carry the writing process (``source``): each process adds to rows of its own, so concurrent
daemons never update the same row, and readers sum over sources.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import ColumnElement, Connection, delete, func, select, text, update

from app.storage import dialect
from app.storage.tables import (
    ACTIVITY_TEXT,
    LATENCY_BUCKETS,
    activity_entry,
    activity_minute,
)

_LATENCY = [activity_minute.c[f"lat_{i}"] for i in range(LATENCY_BUCKETS)]


@dataclass(slots=True)
class EntryRow:
    """One verdict in the history (``id`` None until stored)."""

    at: datetime
    adapter: str
    user: str | None
    sender: str | None
    subject: str | None
    message_id: str | None
    digest: str
    verdict: str
    log_odds: float
    ms: float
    form: str
    clues: str
    tokens: bytes | None
    learned: str | None = None
    id: int | None = None
    anonymous: bool = False


@dataclass(slots=True)
class MinuteRow:
    """Counts of one minute for one adapter, call and outcome; ``latency`` per bucket."""

    minute: int
    adapter: str
    action: str
    outcome: str
    count: int = 0
    ms_total: float = 0.0
    latency: list[int] = field(default_factory=lambda: [0] * LATENCY_BUCKETS)


@dataclass(slots=True)
class Judged:
    """What the history holds of a message: the newest verdict, and the label it was learned
    as since (None: not learned, or forgotten)."""

    verdict: str
    learned: str | None


@dataclass(frozen=True, slots=True)
class EntryFilter:
    """Which history entries to list: every field that is set must match."""

    verdict: str | None = None
    adapter: str | None = None
    user: str | None = None
    text: str | None = None  # in the sender or the subject
    before_id: int | None = None


def _cut(value: str | None) -> str | None:
    return None if value is None else value[:ACTIVITY_TEXT]


class Activity:
    """Reads and writes of the activity tables in one transaction (never commits)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def add_entries(self, entries: Sequence[EntryRow]) -> None:
        """Store verdicts in the history."""
        if not entries:
            return
        rows = [
            {
                "at": e.at,
                "adapter": e.adapter,
                "user_name": e.user,
                "sender": _cut(e.sender),
                "subject": _cut(e.subject),
                "message_id": _cut(e.message_id),
                "digest": e.digest,
                "verdict": e.verdict,
                "log_odds": e.log_odds,
                "ms": e.ms,
                "form": e.form,
                "clues": e.clues,
                "tokens": e.tokens,
                "learned": e.learned,
                "anonymous": e.anonymous,
            }
            for e in entries
        ]
        self._conn.execute(activity_entry.insert(), rows)

    def judged(self, digests: Collection[str]) -> dict[str, Judged]:
        """Per digest with a history entry: the newest entry's verdict and learned label."""
        table = activity_entry
        found: dict[str, Judged] = {}
        for chunk in _chunks(sorted(digests)):
            query = (
                select(table.c.digest, table.c.verdict, table.c.learned)
                .where(table.c.digest.in_(chunk))
                .order_by(table.c.id)
            )
            for digest, verdict, learned in self._conn.execute(query):
                found[digest] = Judged(verdict, learned)
        return found

    def set_learned(self, digests: Collection[str], label: str | None) -> None:
        """Note on every entry of ``digests`` the label they were learned as (None:
        forgotten)."""
        table = activity_entry
        for chunk in _chunks(sorted(digests)):
            self._conn.execute(update(table).where(table.c.digest.in_(chunk)).values(learned=label))

    def entries(self, chosen: EntryFilter, limit: int) -> list[EntryRow]:
        """The newest entries matching ``chosen``, newest first, tokens left out."""
        columns = [c for c in activity_entry.c if c.name != "tokens"]
        query = select(*columns).order_by(activity_entry.c.id.desc()).limit(limit)
        for condition in _conditions(chosen):
            query = query.where(condition)
        return [_entry(row) for row in self._conn.execute(query)]

    def entry(self, entry_id: int) -> EntryRow | None:
        """One entry with its tokens (None when they are no longer kept)."""
        row = self._conn.execute(
            select(activity_entry).where(activity_entry.c.id == entry_id)
        ).first()
        return None if row is None else _entry(row)

    def prune_entries(
        self, older_than: datetime, keep: int, keep_anonymous: int, tokens_before: datetime
    ) -> None:
        """Delete entries older than ``older_than``, those past the newest ``keep`` that are
        not anonymous and those past the newest ``keep_anonymous`` that are (each kind
        counted apart), and drop the tokens of entries older than ``tokens_before``."""
        table = activity_entry
        self._conn.execute(delete(table).where(table.c.at < older_than))
        for anonymous, kept in ((False, keep), (True, keep_anonymous)):
            kind = table.c.anonymous == anonymous
            oldest_gone = self._conn.execute(
                select(table.c.id).where(kind).order_by(table.c.id.desc()).offset(kept).limit(1)
            ).scalar()
            if oldest_gone is not None:
                self._conn.execute(delete(table).where(kind, table.c.id <= oldest_gone))
        self._conn.execute(
            update(table)
            .where(table.c.at < tokens_before, table.c.tokens.is_not(None))
            .values(tokens=None)
        )

    def add_minutes(self, source: str, rows: Sequence[MinuteRow]) -> None:
        """Add ``rows`` (one per minute, adapter, action and outcome) to this source's
        per-minute counts."""
        values = sorted(
            ({**_minute_key(r, source), **_minute_values(r)} for r in rows),
            key=lambda row: (row["minute"], row["adapter"], row["action"], row["outcome"]),
        )
        dialect.increment(self._conn, activity_minute, values)

    def minutes(self, since: int, width: int) -> list[MinuteRow]:
        """Counts from minute ``since`` on, summed over sources into periods of ``width``
        minutes (each row's ``minute`` is its period's first minute)."""
        table = activity_minute
        period = ((table.c.minute // width) * width).label("period")
        query = (
            select(
                period,
                table.c.adapter,
                table.c.action,
                table.c.outcome,
                func.sum(table.c.count),
                func.sum(table.c.ms_total),
                *(func.sum(c) for c in _LATENCY),
            )
            .where(table.c.minute >= since)
            .group_by(period, table.c.adapter, table.c.action, table.c.outcome)
            .order_by(period)
        )
        return [
            MinuteRow(
                int(row[0]),
                row[1],
                row[2],
                row[3],
                int(row[4]),
                float(row[5]),
                [int(n) for n in row[6:]],
            )
            for row in self._conn.execute(query)
        ]

    def prune_minutes(self, before: int) -> None:
        """Delete per-minute counts older than minute ``before``."""
        self._conn.execute(delete(activity_minute).where(activity_minute.c.minute < before))

    def database_bytes(self) -> int | None:
        """The size of the whole database in bytes (None when the dialect cannot say)."""
        if self._conn.dialect.name == "sqlite":
            pages = self._conn.execute(text("PRAGMA page_count")).scalar()
            size = self._conn.execute(text("PRAGMA page_size")).scalar()
            return int(pages or 0) * int(size or 0)
        if self._conn.dialect.name == "postgresql":
            found = self._conn.execute(text("SELECT pg_database_size(current_database())"))
            return int(found.scalar() or 0)
        return None


def _chunks(values: list[str], size: int = 500) -> list[list[str]]:
    return [values[i : i + size] for i in range(0, len(values), size)]


def _conditions(chosen: EntryFilter) -> list[ColumnElement[bool]]:
    table = activity_entry
    found: list[ColumnElement[bool]] = []
    if chosen.verdict:
        found.append(table.c.verdict == chosen.verdict)
    if chosen.adapter:
        found.append(table.c.adapter == chosen.adapter)
    if chosen.user:
        found.append(table.c.user_name == chosen.user)
    if chosen.text:
        pattern = "%" + chosen.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        pattern += "%"
        found.append(
            table.c.sender.ilike(pattern, escape="\\") | table.c.subject.ilike(pattern, escape="\\")
        )
    if chosen.before_id is not None:
        found.append(table.c.id < chosen.before_id)
    return found


def _entry(row: object) -> EntryRow:
    m = row._mapping  # type: ignore[attr-defined]
    return EntryRow(
        at=m["at"],
        adapter=m["adapter"],
        user=m["user_name"],
        sender=m["sender"],
        subject=m["subject"],
        message_id=m["message_id"],
        digest=m["digest"],
        verdict=m["verdict"],
        log_odds=float(m["log_odds"]),
        ms=float(m["ms"]),
        form=m["form"],
        clues=m["clues"],
        tokens=m.get("tokens"),
        learned=m["learned"],
        id=int(m["id"]),
        anonymous=bool(m["anonymous"]),
    )


def _minute_key(row: MinuteRow, source: str) -> dict[str, object]:
    return {
        "minute": row.minute,
        "source": source,
        "adapter": row.adapter,
        "action": row.action,
        "outcome": row.outcome,
    }


def _minute_values(row: MinuteRow) -> dict[str, object]:
    return {
        "count": row.count,
        "ms_total": row.ms_total,
        **{c.name: n for c, n in zip(_LATENCY, row.latency, strict=True)},
    }
