"""The count columns of declared classes, outside the migrations: added only for classes
beyond ham and spam, nothing else differs from the schema the migrations build, and once a
class is dropped the database matches that schema exactly again (SQLite and PostgreSQL)."""

from __future__ import annotations

import sqlalchemy as sa

from app.storage.class_columns import stored_columns
from app.storage.rows import TokenStats
from app.storage.store import Store
from app.storage.tables import count_layout, token_count
from tests.test_migrations import schema_differences

WIDER = ("ham", "spam", "newsletter", "phishing")


def columns(engine: sa.Engine) -> set[str]:
    with engine.connect() as conn:
        return stored_columns(conn)


def test_ham_and_spam_alone_change_nothing(engine: sa.Engine) -> None:
    before = columns(engine)
    assert Store(engine).prepare_classes() == []
    assert columns(engine) == before == {c.name for c in token_count.c}
    assert schema_differences(engine) == []
    assert count_layout().table is token_count


def test_declared_classes_add_their_columns_once_and_nothing_else(engine: sa.Engine) -> None:
    store = Store(engine, 0, WIDER)
    assert store.prepare_classes() == ["newsletter", "phishing"]
    assert store.prepare_classes() == []
    added = columns(engine) - {c.name for c in token_count.c}
    assert added == {
        "newsletter_messages",
        "newsletter_occurrences",
        "phishing_messages",
        "phishing_occurrences",
    }
    # What the migrations' model lacks is exactly those columns, nothing else.
    differences = schema_differences(engine)
    assert sorted((d[0], d[2], d[3].name) for d in differences) == sorted(
        ("remove_column", "token_count", name) for name in added
    )


def test_an_added_column_counts_from_zero_for_rows_learned_before(engine: sa.Engine) -> None:
    plain = Store(engine)
    with plain.transaction(write=True) as tx:
        tx.add("s", "spam", {1: 2, 2: 1}, vocabulary=True)
    wider = Store(engine, 0, WIDER)
    wider.prepare_classes()
    with wider.transaction(write=True) as tx:
        assert {tid: dict(per) for tid, per in tx.counts("s", [1, 2]).items()} == {
            1: {"spam": TokenStats(2, 1)},
            2: {"spam": TokenStats(1, 1)},
        }
        tx.add("s", "phishing", {2: 3, 3: 1}, vocabulary=True)
        assert tx.totals("s").vocabulary == 3
        assert dict(tx.counts("s", [2])[2]) == {
            "spam": TokenStats(1, 1),
            "phishing": TokenStats(3, 1),
        }


def test_dropping_a_class_gives_back_the_migrated_schema(engine: sa.Engine) -> None:
    store = Store(engine, 0, WIDER)
    store.prepare_classes()
    with store.transaction(write=True) as tx:
        assert tx.drop_class("newsletter") == 0
        assert tx.drop_class("phishing") == 0
    assert schema_differences(engine) == []


def test_expiry_takes_a_declared_class_s_counts_out_of_its_totals(engine: sa.Engine) -> None:
    store = Store(engine, 0, WIDER)
    store.prepare_classes()
    with store.transaction(write=True) as tx:
        tx.add("s", "phishing", {1: 1, 2: 5}, vocabulary=True)
        tx.add("s", "newsletter", {2: 1, 3: 4}, vocabulary=True)
    with store.transaction(write=True) as tx:
        # Two rows over the cap of one: the rarest go first (token 1, then token 3).
        report = tx.expiry().expire("s", 0, 0, 1, dry_run=False)
        assert report.by_size == 2
    with store.transaction(write=False) as tx:
        totals = tx.totals("s")
        assert totals.vocabulary == 1
        assert (totals.of("phishing").occurrences, totals.of("phishing").token_messages) == (5, 1)
        assert (totals.of("newsletter").occurrences, totals.of("newsletter").token_messages) == (
            1,
            1,
        )
        assert {tid: dict(per) for tid, per in tx.counts("s", [1, 2, 3]).items()} == {
            2: {"phishing": TokenStats(5, 1), "newsletter": TokenStats(1, 1)}
        }
