"""The compact layout's invariants, through the Store: rows, vocabulary, seen days,
generations, and scopes that reads never create."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from app.storage.rows import token_stats
from app.storage.store import Store, TokenStats
from app.storage.tables import label_columns, learned_message, model_scope, token_count
from tests.storage.snapshot import reader


def table_rows(engine: sa.Engine, table: sa.Table) -> list[tuple[Any, ...]]:
    """Every row of ``table`` (every column), as another connection sees them."""
    other = reader(engine.url.render_as_string(hide_password=False))
    try:
        with other.connect() as conn:
            return sorted(tuple(row) for row in conn.execute(sa.select(table)))
    finally:
        other.dispose()


def scope_row(engine: sa.Engine, name: str = "s") -> dict[str, Any]:
    other = reader(engine.url.render_as_string(hide_password=False))
    try:
        with other.connect() as conn:
            row = conn.execute(sa.select(model_scope).where(model_scope.c.name == name)).one()
            return dict(row._mapping)
    finally:
        other.dispose()


def bags(seed: int, n: int) -> Iterator[tuple[str, dict[int, int]]]:
    """``n`` (label, bag) pairs over a small shared pool of ids, so bags overlap."""
    rng = random.Random(seed)
    pool = [rng.randrange(-(2**63), 2**63) for _ in range(60)]
    for _ in range(n):
        ids = rng.sample(pool, rng.randint(1, 25))
        yield rng.choice(("ham", "spam")), {i: rng.randint(1, 4) for i in ids}


def today() -> int:
    return int(time.time() // 86_400)


def test_learn_then_forget_restores_every_row_and_the_vocabulary(engine: sa.Engine) -> None:
    store = Store(engine)
    first, later = list(bags(1, 20)), list(bags(2, 30))
    for label, bag in first:
        with store.transaction(write=True) as tx:
            tx.add("s", label, bag, vocabulary=True)
    before = table_rows(engine, token_count)
    vocabulary = scope_row(engine)["vocabulary"]
    assert vocabulary == len(before)

    for label, bag in later:
        with store.transaction(write=True) as tx:
            tx.add("s", label, bag, vocabulary=True)
    assert scope_row(engine)["vocabulary"] == len(table_rows(engine, token_count))
    for label, bag in reversed(later):
        with store.transaction(write=True) as tx:
            tx.subtract("s", label, bag, vocabulary=True)

    assert table_rows(engine, token_count) == before  # seen days too: all learned today
    assert scope_row(engine)["vocabulary"] == vocabulary
    for label, bag in first:
        with store.transaction(write=True) as tx:
            tx.subtract("s", label, bag, vocabulary=True)
    assert table_rows(engine, token_count) == []
    assert scope_row(engine)["vocabulary"] == 0


@pytest.mark.parametrize("add_first", [True, False])
def test_a_relabel_moves_counts_and_keeps_every_row_and_the_vocabulary(
    engine: sa.Engine, add_first: bool
) -> None:
    store = Store(engine)
    bag = {1: 2, 2: 1, 3: 5}
    with store.transaction(write=True) as tx:
        tx.add("s", "spam", bag, vocabulary=True)
        tx.add("s", "ham", {3: 1}, vocabulary=True)
    rows = len(table_rows(engine, token_count))
    with store.transaction(write=True) as tx:
        if add_first:
            tx.add("s", "ham", bag, vocabulary=False)
            tx.subtract("s", "spam", bag, vocabulary=False)
        else:
            tx.subtract("s", "spam", bag, vocabulary=False)
            tx.add("s", "ham", bag, vocabulary=False)
        assert tx.counts("s", [1, 2, 3]) == {
            1: {"ham": TokenStats(2, 1)},
            2: {"ham": TokenStats(1, 1)},
            3: {"ham": TokenStats(6, 2)},
        }
    assert len(table_rows(engine, token_count)) == rows == 3
    assert scope_row(engine)["vocabulary"] == 3


def test_a_subtract_without_vocabulary_deletes_no_row_and_clamps(engine: sa.Engine) -> None:
    store = Store(engine)
    with store.transaction(write=True) as tx:
        tx.add("s", "spam", {1: 2}, vocabulary=True)
    with store.transaction(write=True) as tx:
        tx.subtract("s", "spam", {1: 5}, vocabulary=False)
        tx.subtract("s", "spam", {1: 5}, vocabulary=False)
        assert tx.counts("s", [1]) == {}
    spam = label_columns("spam")
    [row] = table_rows(engine, token_count)
    named = dict(zip(token_count.c.keys(), row, strict=True))
    assert named[spam.messages.name] == named[spam.occurrences.name] == 0
    assert all(named[c] >= 0 for c in named if c.endswith(("_messages", "_occurrences")))
    assert scope_row(engine)["vocabulary"] == 1


def seen_days(engine: sa.Engine) -> dict[int, int]:
    """token id -> seen day."""
    return {row[1]: row[-1] for row in table_rows(engine, token_count)}


def test_seen_day_is_set_by_every_add_and_kept_by_subtract(engine: sa.Engine) -> None:
    store = Store(engine)
    with store.transaction(write=True) as tx:
        tx.add("s", "ham", {1: 3, 2: 1}, vocabulary=True)
    assert set(seen_days(engine).values()) <= {today() - 1, today()}
    with engine.begin() as conn:
        conn.execute(sa.update(token_count).values(seen_day=5))
    with store.transaction(write=True) as tx:
        tx.subtract("s", "ham", {1: 1}, vocabulary=True)
        tx.subtract("s", "ham", {1: 1, 2: 1}, vocabulary=False)
    assert seen_days(engine) == {1: 5, 2: 5}
    with store.transaction(write=True) as tx:
        tx.add("s", "spam", {2: 1}, vocabulary=False)
    assert seen_days(engine)[1] == 5
    assert seen_days(engine)[2] in (today(), today() + 1)


def test_every_transaction_that_changes_counts_bumps_the_generation_once(
    engine: sa.Engine,
) -> None:
    store = Store(engine)

    def generation() -> int:
        return int(scope_row(engine)["generation"])

    with store.transaction(write=True) as tx:
        assert tx.claim("s", "d" * 64, "spam", {1: 1})
    assert generation() == 0  # a record alone changes no count
    with store.transaction(write=True) as tx:
        tx.add("s", "spam", {1: 1}, vocabulary=True)
        tx.add("s", "spam", {2: 1}, vocabulary=True)
    assert generation() == 1
    with store.transaction(write=True) as tx:
        tx.add("s", "ham", {1: 1}, vocabulary=False)
        tx.subtract("s", "spam", {1: 1}, vocabulary=False)
    assert generation() == 2
    with store.transaction(write=True) as tx:
        tx.subtract("s", "ham", {1: 1}, vocabulary=True)
        tx.add("other", "ham", {1: 1}, vocabulary=True)
    assert generation() == 3
    assert scope_row(engine, "other")["generation"] == 1
    with store.transaction(write=False) as tx:
        tx.totals("s")
        tx.counts("s", [1, 2])
    assert generation() == 3


def test_reads_of_an_unknown_scope_are_empty_and_create_nothing(engine: sa.Engine) -> None:
    with Store(engine).transaction(write=True) as tx:
        totals = tx.totals("ghost")
        assert (totals.labels, totals.vocabulary) == ({}, 0)
        assert tx.counts("ghost", [1, 2]) == {}
        assert tx.learned("ghost", "d" * 64) is None
        assert list(tx.all_message_counts("ghost")) == []
        tx.subtract("ghost", "spam", {1: 1}, vocabulary=True)
        tx.relabel("ghost", "d" * 64, "ham")
        tx.unclaim("ghost", "d" * 64)
    assert table_rows(engine, model_scope) == []


def test_a_label_without_columns_is_refused() -> None:
    assert label_columns("spam").occurrences.name == "spam_occurrences"
    with pytest.raises(LookupError, match="phish"):
        label_columns("phish")


def test_two_writers_creating_one_scope_share_its_row(engine: sa.Engine) -> None:
    """The second insert waits for the first transaction and then takes its id."""
    store = Store(engine)
    errors: list[BaseException] = []

    def second() -> None:
        try:
            with store.transaction(write=True) as tx:
                assert tx.claim("new", "b" * 64, "ham", {2: 1})
                tx.add("new", "ham", {2: 1}, vocabulary=True)
        except BaseException as error:  # reported below
            errors.append(error)

    thread = threading.Thread(target=second)
    with store.transaction(write=True) as tx:
        assert tx.claim("new", "a" * 64, "spam", {1: 1})
        tx.add("new", "spam", {1: 1}, vocabulary=True)
        thread.start()
        time.sleep(0.3)  # the other writer is now waiting on this one
    thread.join(timeout=30)
    assert not thread.is_alive() and errors == []
    [scope] = table_rows(engine, model_scope)
    assert scope[model_scope.c.keys().index("vocabulary")] == 2
    assert {row[0] for row in table_rows(engine, learned_message)} == {scope[0]}
    assert {row[0] for row in table_rows(engine, token_count)} == {scope[0]}


@given(
    st.lists(st.integers(0, 3), min_size=6, max_size=6),
    st.sampled_from([("ham", "spam"), ("spam", "ham"), ("ham", "spam", "news")]),
)
def test_a_rows_counts_read_per_label_as_the_layout_writes_them(
    values: list[int], labels: tuple[str, ...]
) -> None:
    """``token_stats`` (two labels unrolled) gives each label with a count its occurrences
    and messages, in the layout's order, and leaves out the labels with neither."""
    values = values[: 2 * len(labels)]
    expected = {
        label: TokenStats(values[2 * k], values[2 * k + 1])
        for k, label in enumerate(labels)
        if values[2 * k] or values[2 * k + 1]
    }
    found = token_stats(values, labels)
    assert list(found.items()) == list(expected.items())
