"""Counts never go below zero: CHECK constraints refuse it, decrements clamp instead."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from app.storage import dialect
from app.storage.store import Store
from app.storage.tables import label_total, model_scope, token_count

COUNTS = ("ham_messages", "ham_occurrences", "spam_messages", "spam_occurrences")
SCOPE_ID = {"scope_id": 1}

NEGATIVE_ROWS: list[tuple[sa.Table, dict[str, Any]]] = [
    *(
        (
            token_count,
            {**SCOPE_ID, "token_id": 1, "seen_day": 0, **{c: -1 if c == n else 0 for c in COUNTS}},
        )
        for n in COUNTS
    ),
    (
        label_total,
        {**SCOPE_ID, "label": "ham", "messages": -1, "occurrences": 0, "token_messages": 0},
    ),
    (
        label_total,
        {**SCOPE_ID, "label": "ham", "messages": 0, "occurrences": -1, "token_messages": 0},
    ),
    (
        label_total,
        {**SCOPE_ID, "label": "ham", "messages": 0, "occurrences": 0, "token_messages": -1},
    ),
    (model_scope, {"name": "s", "vocabulary": -1, "generation": 0, "created_at": sa.func.now()}),
    (model_scope, {"name": "s", "vocabulary": 0, "generation": -1, "created_at": sa.func.now()}),
]


@pytest.mark.parametrize(
    ("table", "values"),
    NEGATIVE_ROWS,
    ids=[f"{t.name}-{next(k for k, v in r.items() if v == -1)}" for t, r in NEGATIVE_ROWS],
)
def test_check_constraints_refuse_negative_counts(
    engine: sa.Engine, table: sa.Table, values: dict[str, Any]
) -> None:
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.execute(sa.insert(table).values(**values))


def test_subtracting_more_than_was_added_clamps_at_zero(engine: sa.Engine) -> None:
    store = Store(engine)
    with store.transaction(write=True) as tx:
        tx.add("s", "spam", {1: 2, 2: 1}, vocabulary=True)
    with store.transaction(write=True) as tx:
        tx.subtract("s", "spam", {1: 5, 2: 1, 3: 4}, vocabulary=True)
        tx.subtract("s", "spam", {1: 1}, vocabulary=True)
    with store.transaction(write=False) as tx:
        totals = tx.totals("s")
        assert tx.counts("s", [1, 2, 3]) == {}
    assert totals.vocabulary == 0
    spam = totals.labels["spam"]
    assert (spam.messages, spam.occurrences, spam.token_messages) == (0, 0, 0)


def test_decrement_clamps_every_column_separately(engine: sa.Engine) -> None:
    key = {"scope_id": 1, "label": "ham"}
    with engine.begin() as conn:
        dialect.increment(
            conn, label_total, [{**key, "messages": 3, "occurrences": 1, "token_messages": 10}]
        )
        dialect.decrement(
            conn, label_total, [{**key, "messages": 1, "occurrences": 5, "token_messages": 10}]
        )
        row = conn.execute(
            sa.select(
                label_total.c.messages, label_total.c.occurrences, label_total.c.token_messages
            )
        ).one()
    assert tuple(row) == (2, 0, 0)
