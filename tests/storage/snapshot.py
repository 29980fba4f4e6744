"""Read a whole database back for comparison, and recompute what its counts should be.

``snapshot(url)`` is every row of every table in ``app.storage.tables.metadata`` (sorted, so
two databases compare with ``==``), with scope ids replaced by scope names (a ``scope``
column: two databases may number their scopes differently), learned-message timestamps,
generations and seen days left out, and token bags decoded. ``recount(snap)`` derives the
count tables from the learned-message records alone; ``assert_consistent(url)``
checks that the stored counts equal that derivation.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import sqlalchemy as sa

from app.domain.labels import LABELS
from app.storage.codec import decode_bag
from app.storage.engine import normalise_url
from app.storage.tables import count_layout, metadata, model_scope

Row = tuple[Any, ...]
Snapshot = dict[str, list[Row]]

# Set by when a write happened, not by what was learned: the only values allowed to differ
# between two databases that hold the same counts (model_scope.created_at also differs
# across databases; pass timestamps=False to leave every timestamp out). Generations and
# seen days have tests of their own.
ALWAYS_SKIPPED = {
    ("learned_message", "learned_at"),
    ("model_scope", "generation"),
    ("token_count", "seen_day"),
}
# The ham scores a model's spam cut-off is chosen from depend on the order messages were
# learned in (each is scored by the model as it was): ``scores=False`` leaves them out when
# two databases that learned the same messages in another order are compared.
SCORE_COLUMNS = {("learned_message", "ham_bin")}
SCORE_TABLES = {"ham_score"}
# Replaced by the scope's name, under the column name "scope".
SCOPE_KEYS = {("model_scope", "id"), ("model_scope", "name")}


def reader(url: str) -> sa.Engine:
    """A plain engine for reading in tests: unlike the app's SQLite engine (which starts every
    transaction with BEGIN IMMEDIATE unless told otherwise) its reads never take a write lock."""
    return sa.create_engine(normalise_url(url), poolclass=sa.NullPool)


def snapshot(
    url: str, timestamps: bool = True, scores: bool = True, classes: tuple[str, ...] = LABELS
) -> Snapshot:
    """Every row of every table, sorted; bags decoded to sorted (token id, count) tuples.
    Without ``scores``, no ham scores (``SCORE_TABLES``, ``SCORE_COLUMNS``). ``token_count``
    is read with the count columns of ``classes``."""
    engine = reader(url)
    try:
        with engine.connect() as conn:
            return {
                table.name: _rows(conn, _table(table.name, classes), timestamps, scores)
                for table in metadata.sorted_tables
                if scores or table.name not in SCORE_TABLES
            }
    finally:
        engine.dispose()


def _table(name: str, classes: tuple[str, ...] = LABELS) -> sa.Table:
    """The table ``name``; ``token_count`` with the count columns of ``classes``."""
    return count_layout(classes).table if name == "token_count" else metadata.tables[name]


def _rows(conn: sa.Connection, table: sa.Table, timestamps: bool, scores: bool) -> list[Row]:
    columns = [expression for _, expression in _kept(table, timestamps, scores)]
    rows = []
    for row in conn.execute(sa.select(*columns)):
        rows.append(
            tuple(_value(column, value) for column, value in zip(columns, row, strict=True))
        )
    return sorted(rows, key=repr)


def _kept(
    table: sa.Table, timestamps: bool, scores: bool = True
) -> list[tuple[str, sa.ColumnElement[Any]]]:
    """(name, expression) of the columns ``snapshot`` keeps for ``table``, in row order."""
    kept: list[tuple[str, sa.ColumnElement[Any]]] = []
    for column in table.columns:
        key = (table.name, column.name)
        if (
            key in ALWAYS_SKIPPED
            or (not scores and key in SCORE_COLUMNS)
            or (not timestamps and isinstance(column.type, sa.DateTime))
        ):
            continue
        if (table.name, column.name) == ("model_scope", "id"):
            continue
        if column.name == "scope_id":
            name = sa.select(model_scope.c.name).where(model_scope.c.id == column)
            kept.append(("scope", name.scalar_subquery()))
        elif (table.name, column.name) == ("model_scope", "name"):
            kept.append(("scope", column))
        else:
            kept.append((column.name, column))
    return kept


def _value(column: sa.ColumnElement[Any], value: Any) -> Any:
    if isinstance(column.type, sa.LargeBinary):
        return tuple(sorted(decode_bag(bytes(value)).items()))
    return value


def columns_of(table: str, timestamps: bool = True, classes: tuple[str, ...] = LABELS) -> list[str]:
    """The column names ``snapshot`` keeps for ``table``, in row order."""
    return [name for name, _ in _kept(_table(table, classes), timestamps)]


def as_dicts(snap: Snapshot, table: str, classes: tuple[str, ...] = LABELS) -> list[dict[str, Any]]:
    """The rows of ``table`` in ``snap`` as dicts (``snap`` must keep timestamps)."""
    names = columns_of(table, classes=classes)
    return [dict(zip(names, row, strict=True)) for row in snap[table]]


def recount(snap: Snapshot) -> dict[str, Any]:
    """The counts implied by the learned-message records of ``snap`` alone.

    Returns ``token_count`` {(scope, id, label): (occurrences, messages)}, ``token``
    {(scope, id): occurrences over all labels}, ``label_total`` {(scope, label): (messages,
    occurrences, token_messages)} and ``vocabulary`` {scope: distinct ids}; zero rows are absent.
    """
    per_token: dict[tuple[str, int, str], list[int]] = defaultdict(lambda: [0, 0])
    overall: Counter[tuple[str, int]] = Counter()
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for record in as_dicts(snap, "learned_message"):
        scope, label, bag = record["scope"], record["label"], dict(record["tokens"])
        assert record["token_count"] == len(bag)
        total = totals[scope, label]
        total[0] += 1
        total[1] += sum(bag.values())
        total[2] += len(bag)
        for tid, n in bag.items():
            per_token[scope, tid, label][0] += n
            per_token[scope, tid, label][1] += 1
            overall[scope, tid] += n
    vocabulary = Counter(scope for scope, _ in overall)
    return {
        "token_count": {k: tuple(v) for k, v in per_token.items()},
        "token": dict(overall),
        "label_total": {k: tuple(v) for k, v in totals.items()},
        "vocabulary": dict(vocabulary),
    }


def stored_counts(snap: Snapshot, classes: tuple[str, ...] = LABELS) -> dict[str, Any]:
    """The count tables of ``snap`` in ``recount``'s shape (all-zero total rows dropped).

    ``token_count`` gets one entry per label a row has counts in; ``token`` is the sum of
    a row's occurrences over the labels (a row without occurrences shows up as a 0).
    """
    token_count = {}
    token = {}
    for r in as_dicts(snap, "token_count", classes):
        key = (r["scope"], r["token_id"])
        token[key] = sum(r[f"{label}_occurrences"] for label in classes)
        for label in classes:
            cell = (r[f"{label}_occurrences"], r[f"{label}_messages"])
            if cell != (0, 0):
                token_count[(*key, label)] = cell
    label_total = {
        (r["scope"], r["label"]): (r["messages"], r["occurrences"], r["token_messages"])
        for r in as_dicts(snap, "label_total")
        if (r["messages"], r["occurrences"], r["token_messages"]) != (0, 0, 0)
    }
    vocabulary = {
        r["scope"]: r["vocabulary"] for r in as_dicts(snap, "model_scope") if r["vocabulary"]
    }
    return {
        "token_count": token_count,
        "token": token,
        "label_total": label_total,
        "vocabulary": vocabulary,
    }


def assert_consistent(url: str, classes: tuple[str, ...] = LABELS) -> Snapshot:
    """Assert that every stored count equals its recount from the learned messages (the
    counts of ``classes``)."""
    snap = snapshot(url, classes=classes)
    stored, expected = stored_counts(snap, classes), recount(snap)
    for name in expected:
        assert stored[name] == expected[name], f"{name} differs from its recount"
    return snap
