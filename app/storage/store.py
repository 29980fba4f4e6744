"""The database: engine set-up, units of work, and every query the service needs.

Storage functions never commit: ``Store.transaction`` opens one transaction, the service owns
it, and it commits when the ``with`` block ends without an error. Only this package speaks SQL;
the dialect-specific parts (upsert, "greatest", array parameters) are in ``dialect.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, delete, select, text, update
from sqlalchemy.exc import DBAPIError

from app.errors import StorageUnavailable
from app.storage import dialect
from app.storage.codec import decode_bag, encode_bag
from app.storage.failures import is_file_fault, translate
from app.storage.sqlite_file import database_file
from app.storage.tables import label_total, learned_message, model_scope, token, token_count

NOT_MIGRATED = "the database schema is not at the newest revision; run 'spamfilter db upgrade'"


@dataclass(frozen=True, slots=True)
class TokenStats:
    """Learned counts of one token for one label."""

    occurrences: int
    messages: int


@dataclass(frozen=True, slots=True)
class LabelStats:
    """Per-label totals: learned messages, token occurrences, and Σ distinct tokens/message."""

    messages: int = 0
    occurrences: int = 0
    token_messages: int = 0


@dataclass(frozen=True, slots=True)
class ModelTotals:
    """Totals of one scope: per-label statistics and the vocabulary size |V|."""

    labels: dict[str, LabelStats]
    vocabulary: int

    def of(self, label: str) -> LabelStats:
        """The totals of ``label``: zeros for a label that has learned nothing."""
        return self.labels.get(label, _NOTHING)


_NOTHING = LabelStats()


@dataclass(frozen=True, slots=True)
class LearnedRecord:
    """A learned message: its label and the exact token ids and counts that were added."""

    digest: str
    label: str
    bag: dict[int, int]
    learned_at: datetime


class Store:
    """An engine and the units of work over it.

    On SQLite the store also watches the database file (see ``sqlite_file.py``): a write is
    refused, and the pool renewed, when the path no longer names the file the connections
    have open (deleted or replaced) or cannot be written; a file put back at the path is
    used again once it is at the newest schema.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._file = database_file(engine)
        self._readonly = False
        self._file_lock = threading.Lock()
        # Bumped whenever the pool is renewed: a connection checked out before that is closed
        # when its transaction ends, never returned for another one.
        self._generation = 0
        if self._file is not None:
            self._file.attach(engine)

    @property
    def dialect_name(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._engine.dialect.name

    @contextmanager
    def transaction(self, write: bool) -> Iterator[Transaction]:
        """One transaction; committed on normal exit, rolled back on an exception.

        On SQLite a writing transaction starts with BEGIN IMMEDIATE, so concurrent writers
        queue on the database lock (busy_timeout) instead of failing at their first write.
        A write raises StorageUnavailable, and is never reported done, unless the database
        file at the path is the one the connection wrote to both before and after it.
        """
        if write:
            self._check_file()
        generation = self._generation
        try:
            with self._engine.connect() as conn:
                try:
                    conn.execution_options(spamfilter_write=write)
                    with conn.begin():
                        yield Transaction(conn)
                finally:
                    if generation != self._generation:
                        conn.invalidate()
        except DBAPIError as error:
            if is_file_fault(error):
                self._renew_pool()
            raise translate(error) from error
        if write:
            self._check_committed()

    def schema_revision(self) -> str | None:
        """The Alembic revision the database is at (None when never migrated)."""
        with self.transaction(write=False) as tx:
            return tx.schema_revision()

    def is_migrated(self) -> bool:
        """True when the database is at the newest revision the code ships."""
        return self.schema_revision() == _head_revision()

    def readiness(self) -> str | None:
        """None when the database answers, is at the newest revision and (SQLite) its file is
        in place and writable; else why not, in one line safe to show a client."""
        try:
            self._check_file()
            if not self.is_migrated():
                return NOT_MIGRATED
        except StorageUnavailable as error:
            return str(error)
        return None

    def dispose(self) -> None:
        """Close every pooled connection."""
        self._engine.dispose()

    def _renew_pool(self) -> None:
        """Close the pooled connections; those in use are closed when their work ends."""
        self._generation += 1
        self._engine.dispose()

    def _check_file(self) -> None:
        """Raise StorageUnavailable unless the SQLite file is the known one, and writable.

        One stat and two or three access() calls: ~9 µs measured, against ~3 ms for a learn.
        Under a lock, so that no thread adopts a new file while another still closes the
        connections to the old one.
        """
        file = self._file
        if file is None:
            return
        with self._file_lock:
            found = file.found()
            if found is None:
                self._renew_pool()
                file.known = None  # whatever comes back is checked before it is used
                raise StorageUnavailable(
                    "the database file is missing; restore it or run 'spamfilter db upgrade'"
                )
            if file.known is not None and found != file.known:
                self._renew_pool()
                file.known = None  # the next call adopts the file now at the path
                raise StorageUnavailable("the database file was replaced while in use; retry")
            if not file.writable():
                if not self._readonly:
                    self._readonly = True
                    self._renew_pool()
                raise StorageUnavailable("the database file or its folder is read-only")
            if self._readonly:
                # Connections opened while the file was read-only stay read-only: start afresh.
                self._readonly = False
                self._renew_pool()
            if file.known is None:
                if not self.is_migrated():
                    raise StorageUnavailable(NOT_MIGRATED)
                file.known = found

    def _check_committed(self) -> None:
        """After a commit: raise StorageUnavailable if the path no longer names the file
        written to (it was replaced or deleted during the transaction: the write is lost)."""
        file = self._file
        if file is None:
            return
        with self._file_lock:
            if file.found() != file.known:
                self._renew_pool()
                file.known = None
                raise StorageUnavailable(
                    "the database file was replaced or deleted during this write; retry"
                )


def _head_revision() -> str:
    # Alembic is imported here, not at the top: it costs ~0.14 s, and the pipe filter,
    # which builds a service per message, never needs it.
    from app.storage.migrate import head_revision

    return head_revision()


class Transaction:
    """Repository functions bound to one open transaction (never commits by itself)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def schema_revision(self) -> str | None:
        """The alembic_version row, or None when the table does not exist."""
        try:
            with self._conn.begin_nested():
                row = self._conn.execute(text("SELECT version_num FROM alembic_version")).first()
        except DBAPIError:
            return None
        return None if row is None else str(row[0])

    def counts(self, scope: str, token_ids: list[int]) -> dict[int, dict[str, TokenStats]]:
        """Per-label counts for the given token ids (ids never learned are absent)."""
        result: dict[int, dict[str, TokenStats]] = {}
        if not token_ids:
            return result
        query = select(
            token_count.c.token_id,
            token_count.c.label,
            token_count.c.occurrences,
            token_count.c.messages,
        ).where(
            token_count.c.scope == scope,
            dialect.id_filter(self._conn, token_count.c.token_id, token_ids),
        )
        for token_id, label, occurrences, messages in self._conn.execute(query):
            result.setdefault(token_id, {})[label] = TokenStats(occurrences, messages)
        return result

    def all_message_counts(self, scope: str) -> Iterator[dict[str, int]]:
        """Per-label message counts of every token in the vocabulary (for the Bernoulli model)."""
        query = (
            select(token_count.c.token_id, token_count.c.label, token_count.c.messages)
            .where(token_count.c.scope == scope, token_count.c.messages > 0)
            .order_by(token_count.c.token_id)
        )
        current: dict[str, int] = {}
        current_id: int | None = None
        for token_id, label, messages in self._conn.execute(query):
            if token_id != current_id and current:
                yield current
                current = {}
            current_id = token_id
            current[label] = messages
        if current:
            yield current

    def totals(self, scope: str) -> ModelTotals:
        """Per-label totals and vocabulary size of a scope (zeros for a new scope), in one query.

        A scope has a vocabulary only once it has learned a message, and so label rows.
        """
        vocabulary = (
            select(model_scope.c.vocabulary).where(model_scope.c.scope == scope).scalar_subquery()
        )
        rows = self._conn.execute(
            select(label_total, vocabulary.label("vocabulary")).where(label_total.c.scope == scope)
        ).all()
        labels = {
            row.label: LabelStats(row.messages, row.occurrences, row.token_messages) for row in rows
        }
        return ModelTotals(labels, int(rows[0].vocabulary or 0) if rows else 0)

    def learned(self, scope: str, digest: str) -> LearnedRecord | None:
        """The learned-message record, locked for update where the database supports it."""
        query = (
            select(learned_message)
            .where(learned_message.c.scope == scope, learned_message.c.digest == digest)
            .with_for_update()
        )
        row = self._conn.execute(query).first()
        if row is None:
            return None
        return LearnedRecord(row.digest, row.label, decode_bag(row.tokens), row.learned_at)

    def claim(self, scope: str, digest: str, label: str, bag: Mapping[int, int]) -> bool:
        """Record a message as learned; False (and no change) if it already was."""
        values = {
            "scope": scope,
            "digest": digest,
            "label": label,
            "token_count": len(bag),
            "tokens": encode_bag(bag),
            "learned_at": datetime.now(UTC),
        }
        return dialect.insert_if_absent(self._conn, learned_message, values)

    def relabel(self, scope: str, digest: str, label: str) -> None:
        """Change the label of a learned-message record."""
        self._conn.execute(
            update(learned_message)
            .where(learned_message.c.scope == scope, learned_message.c.digest == digest)
            .values(label=label, learned_at=datetime.now(UTC))
        )

    def unclaim(self, scope: str, digest: str) -> None:
        """Delete a learned-message record."""
        self._conn.execute(
            delete(learned_message).where(
                learned_message.c.scope == scope, learned_message.c.digest == digest
            )
        )

    def add(self, scope: str, label: str, bag: Mapping[int, int], vocabulary: bool) -> None:
        """Add one message's tokens to ``label``: counts and totals.

        With ``vocabulary`` true the per-token totals and the vocabulary size grow too; a
        relabel passes false, because the tokens only move between labels.
        """
        ids = sorted(bag)
        dialect.increment(self._conn, token_count, _count_rows(scope, label, bag, ids))
        self._bump_totals(scope, label, bag, grow=True)
        if vocabulary:
            rows = [{"scope": scope, "token_id": i, "occurrences": bag[i]} for i in ids]
            new = dialect.increment_returning_new(self._conn, token, rows)
            self._bump_vocabulary(scope, new, grow=True)

    def subtract(self, scope: str, label: str, bag: Mapping[int, int], vocabulary: bool) -> None:
        """Remove one message's tokens from ``label`` (counts clamp at zero).

        With ``vocabulary`` false (a relabel, the tokens move to another label) the per-token
        totals and the vocabulary are left alone.
        """
        ids = sorted(bag)
        dialect.decrement(self._conn, token_count, _count_rows(scope, label, bag, ids))
        self._conn.execute(
            delete(token_count).where(
                token_count.c.scope == scope,
                token_count.c.label == label,
                dialect.id_filter(self._conn, token_count.c.token_id, ids),
                token_count.c.occurrences == 0,
            )
        )
        self._bump_totals(scope, label, bag, grow=False)
        if vocabulary:
            dialect.decrement(
                self._conn,
                token,
                [{"scope": scope, "token_id": i, "occurrences": bag[i]} for i in ids],
            )
            gone = self._conn.execute(
                delete(token).where(
                    token.c.scope == scope,
                    dialect.id_filter(self._conn, token.c.token_id, ids),
                    token.c.occurrences == 0,
                )
            ).rowcount
            self._bump_vocabulary(scope, gone, grow=False)

    def _bump_totals(self, scope: str, label: str, bag: Mapping[int, int], grow: bool) -> None:
        """One message more (``grow``) or less in ``label``'s totals."""
        row = {
            "scope": scope,
            "label": label,
            "messages": 1,
            "occurrences": sum(bag.values()),
            "token_messages": len(bag),
        }
        (dialect.increment if grow else dialect.decrement)(self._conn, label_total, [row])

    def _bump_vocabulary(self, scope: str, tokens: int, grow: bool) -> None:
        """``tokens`` more (``grow``) or fewer distinct tokens in the scope's vocabulary."""
        if tokens:
            row = {"scope": scope, "vocabulary": tokens, "created_at": datetime.now(UTC)}
            bump = dialect.increment if grow else dialect.decrement
            bump(self._conn, model_scope, [row], exclude=("created_at",))


def _count_rows(
    scope: str, label: str, bag: Mapping[int, int], ids: list[int]
) -> list[dict[str, object]]:
    """token_count rows for one message: its occurrences of each token, and 1 message each."""
    return [
        {"scope": scope, "token_id": i, "label": label, "occurrences": bag[i], "messages": 1}
        for i in ids
    ]
