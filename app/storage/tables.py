"""Table definitions (SQLAlchemy Core). Raw counts only, never probabilities.

- ``model_scope``: one row per scope (a model: the global one, later one per user): its name,
  the vocabulary size, and a generation bumped by every transaction that changes its counts.
- ``token_count``: per scope id and token id, per label: messages containing the token and its
  occurrences, and the day it was last learned. A row exists exactly while some label has
  occurrences, so the vocabulary size is the number of rows (kept in ``model_scope``).
- ``label_total``: per scope id and label: learned messages, token occurrences, and the sum
  over messages of their distinct tokens (the total under presence counting).
- ``learned_message``: per scope id and digest: label, time, and the exact token ids and counts
  that were added, so forgetting or relabelling restores counts even if the tokenizer changes;
  for new ham, the ``ham_score`` bin its score went to.
- ``ham_score``: per scope id and bin, how many ham messages scored in that bin before they
  were learned (the histogram ``app.domain.cutoff`` chooses the spam cut-off from).

Rows refer to ``model_scope.id`` without database-level foreign keys (SQLite would need
``PRAGMA foreign_keys`` on every connection); deleting a scope deletes its rows explicitly.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)

from app.domain.labels import LABELS

NAMING = {
    "pk": "pk_%(table_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
}

metadata = MetaData(naming_convention=NAMING)

# The newest revision of migrations/versions: the schema these tables describe. Readiness
# and the processes that never migrate (the pipe filter) compare the database's revision
# with it without importing Alembic; tests/test_migrations.py holds it to Alembic's head.
SCHEMA_REVISION = "0007"
# Alembic's table of the revision the database is at (read without Alembic at start-up).
VERSION_TABLE = "alembic_version"
SCOPE_LENGTH = 200
LABEL_LENGTH = 32


def label_column_names(label: str) -> tuple[str, str]:
    """The names of ``label``'s messages and occurrences columns in ``token_count``."""
    return f"{label}_messages", f"{label}_occurrences"


_COUNT_NAMES = [name for label in LABELS for name in label_column_names(label)]

model_scope = Table(
    "model_scope",
    metadata,
    Column("id", Integer, nullable=False, autoincrement=True),
    Column("name", String(SCOPE_LENGTH), nullable=False),
    Column("vocabulary", BigInteger, nullable=False),
    Column("generation", BigInteger, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("id"),
    UniqueConstraint("name"),
    CheckConstraint("vocabulary >= 0 AND generation >= 0", name="non_negative"),
)

token_count = Table(
    "token_count",
    metadata,
    Column("scope_id", Integer, nullable=False, autoincrement=False),
    Column("token_id", BigInteger, nullable=False, autoincrement=False),
    *(Column(name, BigInteger, nullable=False) for name in _COUNT_NAMES),
    Column("seen_day", Integer, nullable=False),
    PrimaryKeyConstraint("scope_id", "token_id"),
    CheckConstraint(" AND ".join(f"{name} >= 0" for name in _COUNT_NAMES), name="non_negative"),
    # Rows are only ever found by their key: without a rowid the key is the table (one b-tree
    # instead of a table plus a key index).
    sqlite_with_rowid=False,
)

label_total = Table(
    "label_total",
    metadata,
    Column("scope_id", Integer, nullable=False, autoincrement=False),
    Column("label", String(LABEL_LENGTH), nullable=False),
    Column("messages", BigInteger, nullable=False),
    Column("occurrences", BigInteger, nullable=False),
    Column("token_messages", BigInteger, nullable=False),
    PrimaryKeyConstraint("scope_id", "label"),
    CheckConstraint(
        "messages >= 0 AND occurrences >= 0 AND token_messages >= 0", name="non_negative"
    ),
)

learned_message = Table(
    "learned_message",
    metadata,
    Column("scope_id", Integer, nullable=False, autoincrement=False),
    Column("digest", String(64), nullable=False),
    Column("label", String(LABEL_LENGTH), nullable=False),
    Column("token_count", Integer, nullable=False),
    Column("tokens", LargeBinary, nullable=False),
    Column("learned_at", DateTime(timezone=True), nullable=False),
    # The ``ham_score`` bin this message added to, learned as new ham (else NULL): forgetting
    # or relabelling it takes that score back out.
    Column("ham_bin", Integer),
    PrimaryKeyConstraint("scope_id", "digest"),
)

ham_score = Table(
    "ham_score",
    metadata,
    Column("scope_id", Integer, nullable=False, autoincrement=False),
    Column("bin", Integer, nullable=False, autoincrement=False),
    Column("ham", BigInteger, nullable=False),
    PrimaryKeyConstraint("scope_id", "bin"),
    CheckConstraint("ham >= 0", name="non_negative"),
    sqlite_with_rowid=False,
)

# Every table with rows of one scope (``scope_id``): what deleting or replacing a model empties.
SCOPED_TABLES = (token_count, label_total, learned_message, ham_score)


# The console's activity (see ``app.storage.activity``): recent verdicts, and per-minute counts
# written by each process (``source``) into rows of its own, so daemons never contend for one.
LATENCY_BUCKETS = 13
ACTIVITY_TEXT = 256

activity_entry = Table(
    "activity_entry",
    metadata,
    Column("id", Integer, nullable=False, autoincrement=True),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("adapter", String(16), nullable=False),
    Column("user_name", String(SCOPE_LENGTH)),
    Column("sender", String(ACTIVITY_TEXT)),
    Column("subject", String(ACTIVITY_TEXT)),
    Column("message_id", String(ACTIVITY_TEXT)),
    Column("digest", String(64), nullable=False),
    Column("verdict", String(16), nullable=False),
    Column("log_odds", Float, nullable=False),
    Column("ms", Float, nullable=False),
    Column("form", String(16), nullable=False),
    Column("clues", Text, nullable=False),
    Column("tokens", LargeBinary),
    Column("learned", String(LABEL_LENGTH)),
    # A classify by a caller that proved nothing (``Event.anonymous``): kept within a cap of
    # its own, found newest first by the index below.
    Column("anonymous", Boolean, nullable=False, server_default=false()),
    PrimaryKeyConstraint("id"),
    Index("ix_activity_entry_at", "at"),
    Index("ix_activity_entry_digest", "digest"),
    Index("ix_activity_entry_anonymous_id", "anonymous", "id"),
)

activity_minute = Table(
    "activity_minute",
    metadata,
    Column("minute", Integer, nullable=False, autoincrement=False),
    Column("source", String(32), nullable=False),
    Column("adapter", String(16), nullable=False),
    Column("action", String(16), nullable=False),
    Column("outcome", String(32), nullable=False),
    Column("count", BigInteger, nullable=False),
    Column("ms_total", Float, nullable=False),
    *(Column(f"lat_{i}", BigInteger, nullable=False) for i in range(LATENCY_BUCKETS)),
    PrimaryKeyConstraint("minute", "source", "adapter", "action", "outcome"),
)


# The console's access (see ``app.storage.console_access``), shared by every worker and
# replica: the cookie signing key made once, the sessions ended by logging out (until they
# would have expired), and failed logins per client address in the current window.
NONCE_LENGTH = 64
CLIENT_LENGTH = 64

console_secret = Table(
    "console_secret",
    metadata,
    Column("name", String(32), nullable=False),
    Column("value", String(128), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("name"),
)

console_revoked = Table(
    "console_revoked",
    metadata,
    Column("nonce", String(NONCE_LENGTH), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("nonce"),
    Index("ix_console_revoked_expires_at", "expires_at"),
)

console_login = Table(
    "console_login",
    metadata,
    Column("client", String(CLIENT_LENGTH), nullable=False),
    Column("window_started_at", DateTime(timezone=True), nullable=False),
    Column("failures", Integer, nullable=False),
    PrimaryKeyConstraint("client"),
    Index("ix_console_login_window_started_at", "window_started_at"),
)


@dataclass(frozen=True, slots=True)
class LabelColumns:
    """The two ``token_count`` columns that hold one label's counts."""

    label: str
    messages: Column[int]
    occurrences: Column[int]


@dataclass(frozen=True, slots=True)
class CountLayout:
    """``token_count`` as a site's classes see it: the table with a pair of count columns
    per class, in the order of ``classes`` (the order counts are read, stored and scored)."""

    classes: tuple[str, ...]
    table: Table

    def of(self, label: str) -> LabelColumns:
        """The columns of ``label``; LookupError when the table has none.

        The one place a label is mapped to its columns. A label that is not one of the
        layout's classes fails here, at its first use, rather than silently counting
        nowhere."""
        messages, occurrences = label_column_names(label)
        if label not in self.classes:
            raise LookupError(
                f"token_count has no columns for label {label!r}; declare the class "
                f"(model.classes) so that {messages} and {occurrences} are added"
            )
        return LabelColumns(label, self.table.c[messages], self.table.c[occurrences])

    def columns(self) -> list[LabelColumns]:
        """The columns of every class, in class order."""
        return [self.of(label) for label in self.classes]

    def count_names(self) -> list[str]:
        """Every class's occurrences and messages columns, class by class: the order
        ``rows.token_stats`` reads a row's counts in."""
        return [name for label in self.classes for name in label_column_names(label)[::-1]]


def count_layout(classes: tuple[str, ...] = LABELS) -> CountLayout:
    """The layout of ``token_count`` for ``classes``: the shipped table for ham and spam
    (the schema the migrations make), else the table with a pair of columns for each
    further class (``class_columns.prepare`` adds them to the database)."""
    if classes == LABELS:
        return _DEFAULT
    return _extended(classes)


@functools.lru_cache(maxsize=64)
def _extended(classes: tuple[str, ...]) -> CountLayout:
    """A ``token_count`` Table with every class's columns, in a MetaData of its own (never
    created from: the migrations make the table, ``class_columns`` adds the columns)."""
    extra = [label for label in classes if label not in LABELS]
    table = Table(
        token_count.name,
        MetaData(naming_convention=NAMING),
        *(Column(c.name, c.type, nullable=c.nullable, autoincrement=False) for c in token_count.c),
        *(
            Column(name, BigInteger, nullable=False, autoincrement=False)
            for label in extra
            for name in label_column_names(label)
        ),
        PrimaryKeyConstraint("scope_id", "token_id"),
    )
    return CountLayout(classes, table)


_DEFAULT = CountLayout(LABELS, token_count)


def label_columns(label: str) -> LabelColumns:
    """The ``token_count`` columns of ``label`` in the shipped (ham and spam) layout."""
    return _DEFAULT.of(label)
