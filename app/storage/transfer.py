"""Whole models in and out, row by row: what export and import need from the database.

Reads stream: each table of a scope is one query whose rows arrive in batches
(``yield_per``: a server-side cursor on PostgreSQL; SQLite steps its cursor), so exporting
millions of tokens holds one batch at a time. ``snapshot`` makes the reads of one transaction
agree with each other on PostgreSQL (SQLite's read transaction is a snapshot already).

Writes come in batches from the caller and add to what is there (counts and totals summed,
the later seen day kept), so one code path serves a merge and, after ``clear``, a replace.
``over_cap`` then finds a sum past what the caller allows, before it commits.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, delete, func, or_, select, update

from app.storage import dialect
from app.storage.scopes import ScopeIds
from app.storage.tables import (
    SCOPED_TABLES,
    CountLayout,
    ham_score,
    label_total,
    learned_message,
    model_scope,
)

BATCH = 5_000  # rows a read fetches, and a write sends, at once

TokenRow = tuple[int, Mapping[str, tuple[int, int]], int]
"""(token id, label -> (messages, occurrences), seen day)."""


@dataclass(frozen=True, slots=True)
class LearnedRow:
    """A learned-message record as stored: ``bag`` encoded (``app.storage.codec``)."""

    digest: str
    label: str
    learned_at: datetime
    bag: bytes
    token_count: int
    ham_bin: int | None = None


class ModelRows:
    """Reads and writes whole scopes inside one open transaction (never commits)."""

    def __init__(self, conn: Connection, scopes: ScopeIds, layout: CountLayout) -> None:
        self._conn = conn
        self._scopes = scopes
        self._layout = layout
        self._labels = layout.columns()
        self._count_columns = [c for lc in self._labels for c in (lc.messages, lc.occurrences)]

    def snapshot(self) -> None:
        """Make every later read of this transaction see one state of the database.

        Must come before any other statement of the transaction."""
        dialect.snapshot_reads(self._conn)

    def scopes_under(self, prefix: str) -> list[str]:
        """The names of the scopes that start with ``prefix``."""
        query = select(model_scope.c.name).where(
            model_scope.c.name.startswith(prefix, autoescape=True)
        )
        return [str(name) for name in self._conn.execute(query).scalars()]

    def has_rows(self, scope: str) -> bool:
        """True when the scope holds any count, total or learned message."""
        scope_id = self._scopes.find(scope)
        if scope_id is None:
            return False
        for table in SCOPED_TABLES:
            query = select(table.c.scope_id).where(table.c.scope_id == scope_id).limit(1)
            if self._conn.execute(query).first() is not None:
                return True
        return False

    def totals(self, scope: str) -> list[tuple[str, int, int, int]]:
        """(label, messages, occurrences, token_messages) per class stored, in class order."""
        scope_id = self._scopes.find(scope)
        if scope_id is None:
            return []
        query = select(
            label_total.c.label,
            label_total.c.messages,
            label_total.c.occurrences,
            label_total.c.token_messages,
        ).where(label_total.c.scope_id == scope_id)
        rows = {
            str(label): (str(label), int(messages), int(occurrences), int(token_messages))
            for label, messages, occurrences, token_messages in self._conn.execute(query)
        }
        return [rows[label] for label in self._layout.classes if label in rows]

    def ham_scores(self, scope: str) -> list[tuple[int, int]]:
        """(bin, count) of the scope's ham scores, by ascending bin, bins above 0 only."""
        scope_id = self._scopes.find(scope)
        if scope_id is None:
            return []
        query = (
            select(ham_score.c.bin, ham_score.c.ham)
            .where(ham_score.c.scope_id == scope_id, ham_score.c.ham > 0)
            .order_by(ham_score.c.bin)
        )
        return [(int(index), int(count)) for index, count in self._conn.execute(query)]

    def tokens(self, scope: str) -> Iterator[Sequence[int]]:
        """(token_id, messages and occurrences per label in class order, seen_day) of every
        token of the scope, by ascending id, a batch in memory at a time."""
        scope_id = self._scopes.find(scope)
        if scope_id is None:
            return
        token_count = self._layout.table
        query = (
            select(token_count.c.token_id, *self._count_columns, token_count.c.seen_day)
            .where(token_count.c.scope_id == scope_id)
            .order_by(token_count.c.token_id)
        )
        yield from self._stream(query)

    def learned(self, scope: str) -> Iterator[LearnedRow]:
        """The learned-message records of the scope, by digest (byte order), streamed."""
        scope_id = self._scopes.find(scope)
        if scope_id is None:
            return
        digest = dialect.bytewise(self._conn, learned_message.c.digest)
        query = (
            select(
                learned_message.c.digest,
                learned_message.c.label,
                learned_message.c.learned_at,
                learned_message.c.tokens,
                learned_message.c.token_count,
                learned_message.c.ham_bin,
            )
            .where(learned_message.c.scope_id == scope_id)
            .order_by(digest)
        )
        for digest_value, label, learned_at, tokens, count, ham_bin in self._stream(query):
            yield LearnedRow(digest_value, label, _utc(learned_at), bytes(tokens), count, ham_bin)

    def held(self, scope: str, token_ids: Sequence[int]) -> set[int]:
        """Those of ``token_ids`` (ascending) the scope holds a token row of."""
        scope_id = self._scopes.find(scope)
        if scope_id is None or not token_ids:
            return set()
        table = self._layout.table
        found = dialect.counts_by_ids(self._conn, table, ["seen_day"], scope_id, token_ids)
        return {int(row[0]) for row in found}

    def _stream(self, query: Any) -> Iterator[Any]:
        result = self._conn.execute(query, execution_options={"yield_per": BATCH})
        try:
            for partition in result.partitions():
                yield from partition
        finally:
            result.close()

    def prepare(self, scope: str, replace: bool) -> None:
        """Get ``scope`` ready to be written: created if new, its generation bumped (caches
        of its counts are stale), and with ``replace`` emptied of counts, totals, ham scores
        and learned messages."""
        scope_id = self._scopes.changing(scope)
        if replace:
            for table in SCOPED_TABLES:
                self._conn.execute(delete(table).where(table.c.scope_id == scope_id))

    def add_totals(self, scope: str, rows: Sequence[tuple[str, int, int, int]]) -> None:
        """Add (label, messages, occurrences, token_messages) to the scope's totals."""
        scope_id = self._scopes.changing(scope)
        values = [
            {"scope_id": scope_id, "label": label, "messages": m, "occurrences": o,
             "token_messages": t}
            for label, m, o, t in rows
        ]  # fmt: skip
        dialect.increment(self._conn, label_total, values)

    def add_ham_scores(self, scope: str, rows: Sequence[tuple[int, int]]) -> None:
        """Add (bin, count) to the scope's ham scores."""
        if not rows:
            return
        scope_id = self._scopes.changing(scope)
        values = [{"scope_id": scope_id, "bin": index, "ham": count} for index, count in rows]
        dialect.increment(self._conn, ham_score, values)

    def add_tokens(self, scope: str, rows: Sequence[TokenRow]) -> None:
        """Add token rows (ascending, unique ids) to the scope: counts summed, the later
        seen day kept. A label a row does not name counts zero."""
        if not rows:
            return
        scope_id = self._scopes.changing(scope)
        columns = [(lc.label, lc.messages.name, lc.occurrences.name) for lc in self._labels]
        values = []
        for token_id, counts, seen_day in rows:
            value = {"scope_id": scope_id, "token_id": token_id, "seen_day": seen_day}
            for label, messages, occurrences in columns:
                value[messages], value[occurrences] = counts.get(label, (0, 0))
            values.append(value)
        dialect.merge_counts(self._conn, self._layout.table, values, latest=["seen_day"])

    def add_learned(self, scope: str, rows: Sequence[LearnedRow]) -> list[str]:
        """Insert the learned-message records whose digest the scope does not hold yet; the
        digests it already held (left as they were) are returned."""
        if not rows:
            return []
        scope_id = self._scopes.changing(scope)
        digests = [row.digest for row in rows]
        held = set(
            self._conn.execute(
                select(learned_message.c.digest).where(
                    learned_message.c.scope_id == scope_id,
                    learned_message.c.digest.in_(digests),
                )
            ).scalars()
        )
        values = [
            {"scope_id": scope_id, "digest": row.digest, "label": row.label,
             "token_count": row.token_count, "tokens": row.bag, "learned_at": row.learned_at,
             "ham_bin": row.ham_bin}
            for row in rows
            if row.digest not in held
        ]  # fmt: skip
        dialect.insert_many(self._conn, learned_message, values)
        return [digest for digest in digests if digest in held]

    def over_cap(self, scope: str, cap: int) -> str | None:
        """What of the scope holds a count or total above ``cap`` (the first found, as
        ``total LABEL`` or ``token ID``), or None: one query a table, each stopping at the
        first such row."""
        scope_id = self._scopes.find(scope)
        if scope_id is None:
            return None
        totals = [label_total.c.messages, label_total.c.occurrences, label_total.c.token_messages]
        query = (
            select(label_total.c.label)
            .where(label_total.c.scope_id == scope_id, or_(*(c > cap for c in totals)))
            .order_by(label_total.c.label)
            .limit(1)
        )
        label = self._conn.execute(query).scalar()
        if label is not None:
            return f"total {label}"
        token_count = self._layout.table
        query = (
            select(token_count.c.token_id)
            .where(
                token_count.c.scope_id == scope_id,
                or_(*(c > cap for c in self._count_columns)),
            )
            .limit(1)
        )
        token_id = self._conn.execute(query).scalar()
        if token_id is not None:
            return f"token {token_id}"
        query = (
            select(ham_score.c.bin)
            .where(ham_score.c.scope_id == scope_id, ham_score.c.ham > cap)
            .order_by(ham_score.c.bin)
            .limit(1)
        )
        index = self._conn.execute(query).scalar()
        return None if index is None else f"hamscore {index}"

    def recount_vocabulary(self, scope: str) -> int:
        """Set the scope's vocabulary to its number of token rows (what it is by
        definition), and return it."""
        scope_id = self._scopes.changing(scope)
        token_count = self._layout.table
        rows = (
            select(func.count())
            .select_from(token_count)
            .where(token_count.c.scope_id == scope_id)
            .scalar_subquery()
        )
        self._conn.execute(
            update(model_scope).where(model_scope.c.id == scope_id).values(vocabulary=rows)
        )
        query = select(model_scope.c.vocabulary).where(model_scope.c.id == scope_id)
        return int(self._conn.execute(query).scalar_one())


def _utc(value: datetime) -> datetime:
    """A stored time in UTC: SQLite gives it back naive (it was written as UTC)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
