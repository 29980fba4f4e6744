"""The dialect-specific statements, on real databases: big upserts, clamped decrements.

"Many" rows is more than any batch a driver or SQLAlchemy splits statements into (SQLite's
bound-parameter limit, insertmanyvalues pages of 1,000, earlier 2,000-row chunks), so a
batch boundary that loses or repeats rows shows up here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
import sqlalchemy as sa

from app.storage import dialect
from app.storage.tables import learned_message, token_count

SCOPE = 7
MANY = 4500
# token_count columns an upsert of ham occurrences only writes when it inserts.
OTHERS = ("ham_messages", "spam_messages", "spam_occurrences")


def token_rows(ids: Sequence[int], occurrences: int = 1) -> list[dict[str, Any]]:
    """token_count rows counting ``occurrences`` of ham for each of ``ids``."""
    return [
        {
            "scope_id": SCOPE,
            "token_id": i,
            "ham_occurrences": occurrences,
            **dict.fromkeys(OTHERS, 0),
            "seen_day": 0,
        }
        for i in sorted(ids)
    ]


def stored(conn: sa.Connection) -> dict[int, int]:
    """token id -> ham occurrences."""
    query = sa.select(token_count.c.token_id, token_count.c.ham_occurrences).where(
        token_count.c.scope_id == SCOPE
    )
    return {tid: n for tid, n in conn.execute(query)}


def spread(n: int) -> list[int]:
    """``n`` distinct ids of both signs, spread over the 64-bit range."""
    return sorted(((i * 0x9E3779B97F4A7C15) % 2**64) - 2**63 for i in range(1, n + 1))


@pytest.mark.parametrize("n", [1, 1001, 2001, MANY])
def test_increment_inserts_then_adds(engine: sa.Engine, n: int) -> None:
    ids = spread(n)
    with engine.begin() as conn:
        dialect.increment(conn, token_count, token_rows(ids, 2), exclude=OTHERS)
    with engine.begin() as conn:
        dialect.increment(conn, token_count, token_rows(ids[::2], 3), exclude=OTHERS)
    with engine.connect() as conn:
        counts = stored(conn)
    assert len(counts) == n
    assert all(counts[i] == (5 if k % 2 == 0 else 2) for k, i in enumerate(ids))


def test_increment_of_every_count_column_and_excluded_and_replaced_columns(
    engine: sa.Engine,
) -> None:
    ids = spread(MANY)
    rows = [
        {
            "scope_id": SCOPE,
            "token_id": i,
            "ham_messages": 0,
            "ham_occurrences": 0,
            "spam_messages": 1,
            "spam_occurrences": 4,
            "seen_day": day,
        }
        for i in ids
        for day in [i % 5]
    ]
    later = [{**row, "seen_day": 100} for row in rows]
    with engine.begin() as conn:
        dialect.increment(conn, token_count, rows)
        dialect.increment(
            conn, token_count, later, exclude=("spam_messages",), replace=["seen_day"]
        )
    with engine.connect() as conn:
        found = conn.execute(
            sa.select(
                token_count.c.ham_messages,
                token_count.c.ham_occurrences,
                token_count.c.spam_messages,
                token_count.c.spam_occurrences,
                token_count.c.seen_day,
            ).where(token_count.c.scope_id == SCOPE)
        ).all()
    assert len(found) == len(ids)
    assert set(found) == {(0, 0, 1, 8, 100)}


def returned(conn: sa.Connection, rows: list[dict[str, Any]]) -> dict[int, int]:
    """Increment ``rows``; token id -> the ham occurrences the upsert returned for it."""
    after = dialect.increment_returning(
        conn, token_count, rows, ["ham_occurrences"], exclude=OTHERS
    )
    assert [scope for scope, *_ in after] == [SCOPE] * len(rows)
    return {tid: n for _scope, tid, n in after}


def test_increment_returning_gives_every_row_as_it_is_after(engine: sa.Engine) -> None:
    old = spread(2 * MANY)[::2]  # rows already there
    new = spread(2 * MANY)[1::2]  # rows that are not
    with engine.begin() as conn:
        assert returned(conn, token_rows(old)) == dict.fromkeys(old, 1)
    with engine.begin() as conn:
        mixed = token_rows(sorted(old + new), 2)
        assert returned(conn, mixed) == {**dict.fromkeys(old, 3), **dict.fromkeys(new, 2)}
        assert returned(conn, mixed) == {**dict.fromkeys(old, 5), **dict.fromkeys(new, 4)}
    with engine.connect() as conn:
        counts = stored(conn)
    assert {counts[i] for i in old} == {5}
    assert {counts[i] for i in new} == {4}


def decrement_rows(ids: Sequence[int], occurrences: int) -> list[dict[str, Any]]:
    return [{"scope_id": SCOPE, "token_id": i, "ham_occurrences": occurrences} for i in sorted(ids)]


def test_decrement_many_rows_clamps_at_zero(engine: sa.Engine) -> None:
    ids = spread(MANY)
    with engine.begin() as conn:
        dialect.increment(conn, token_count, token_rows(ids, 3))
    with engine.begin() as conn:
        dialect.decrement(conn, token_count, decrement_rows(ids[: len(ids) // 2], 2))
        dialect.decrement(conn, token_count, decrement_rows(ids[len(ids) // 2 :], 10))
    with engine.connect() as conn:
        counts = stored(conn)
    half = len(ids) // 2
    assert {counts[i] for i in ids[:half]} == {1}
    assert {counts[i] for i in ids[half:]} == {0}


def test_decrement_of_missing_rows_inserts_nothing(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        dialect.decrement(conn, token_count, decrement_rows([1, 2, 3], 1))
        dialect.decrement(conn, token_count, [])
    with engine.connect() as conn:
        assert stored(conn) == {}


def test_id_filter_with_many_ids(engine: sa.Engine) -> None:
    ids = spread(MANY)
    with engine.begin() as conn:
        dialect.increment(conn, token_count, token_rows(ids))
    wanted = [*ids[::3], 12345]  # one id that is not stored
    with engine.connect() as conn:
        found = conn.execute(
            sa.select(token_count.c.token_id).where(
                dialect.id_filter(conn, token_count.c.token_id, wanted)
            )
        ).scalars()
        assert sorted(found) == sorted(ids[::3])


def learned_values(digest: str) -> Mapping[str, Any]:
    return {
        "scope_id": SCOPE,
        "digest": digest,
        "label": "ham",
        "token_count": 0,
        "tokens": b"",
        "learned_at": sa.func.now(),
    }


def test_insert_if_absent_tells_whether_it_inserted(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        assert dialect.insert_if_absent(conn, learned_message, learned_values("a")) is True
        assert dialect.insert_if_absent(conn, learned_message, learned_values("a")) is False
        assert dialect.insert_if_absent(conn, learned_message, learned_values("b")) is True
    with engine.connect() as conn:
        digests = conn.execute(sa.select(learned_message.c.digest)).scalars()
        assert sorted(digests) == ["a", "b"]
