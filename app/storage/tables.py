"""Table definitions (SQLAlchemy Core). Raw counts only, never probabilities.

- ``token_count``: per scope, token id and label: occurrences and messages containing it.
- ``token``: per scope and token id: occurrences over all labels, so that the vocabulary size
  (distinct tokens with a non-zero count) can be kept exactly under concurrent writers.
- ``label_total``: per scope and label: learned messages, token occurrences, and the sum over
  messages of their distinct tokens (the total under presence counting).
- ``model_scope``: per scope: the vocabulary size.
- ``learned_message``: per scope and digest: label, time, and the exact token ids and counts
  that were added, so forgetting or relabelling restores counts even if the tokenizer changes.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
)

NAMING = {
    "pk": "pk_%(table_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
}

metadata = MetaData(naming_convention=NAMING)

SCOPE_LENGTH = 200
LABEL_LENGTH = 32

token_count = Table(
    "token_count",
    metadata,
    Column("scope", String(SCOPE_LENGTH), nullable=False),
    Column("token_id", BigInteger, nullable=False),
    Column("label", String(LABEL_LENGTH), nullable=False),
    Column("occurrences", BigInteger, nullable=False),
    Column("messages", BigInteger, nullable=False),
    PrimaryKeyConstraint("scope", "token_id", "label"),
    CheckConstraint("occurrences >= 0 AND messages >= 0", name="non_negative"),
)

token = Table(
    "token",
    metadata,
    Column("scope", String(SCOPE_LENGTH), nullable=False),
    Column("token_id", BigInteger, nullable=False),
    Column("occurrences", BigInteger, nullable=False),
    PrimaryKeyConstraint("scope", "token_id"),
    CheckConstraint("occurrences >= 0", name="non_negative"),
)

label_total = Table(
    "label_total",
    metadata,
    Column("scope", String(SCOPE_LENGTH), nullable=False),
    Column("label", String(LABEL_LENGTH), nullable=False),
    Column("messages", BigInteger, nullable=False),
    Column("occurrences", BigInteger, nullable=False),
    Column("token_messages", BigInteger, nullable=False),
    PrimaryKeyConstraint("scope", "label"),
    CheckConstraint(
        "messages >= 0 AND occurrences >= 0 AND token_messages >= 0", name="non_negative"
    ),
)

model_scope = Table(
    "model_scope",
    metadata,
    Column("scope", String(SCOPE_LENGTH), nullable=False),
    Column("vocabulary", BigInteger, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("scope"),
    CheckConstraint("vocabulary >= 0", name="non_negative"),
)

learned_message = Table(
    "learned_message",
    metadata,
    Column("scope", String(SCOPE_LENGTH), nullable=False),
    Column("digest", String(64), nullable=False),
    Column("label", String(LABEL_LENGTH), nullable=False),
    Column("token_count", Integer, nullable=False),
    Column("tokens", LargeBinary, nullable=False),
    Column("learned_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("scope", "digest"),
)
