"""Expiry through the Store: which rows go, and the totals and vocabulary staying the sums
over the rows that remain, through later forgets and relabels too."""

from __future__ import annotations

import random
from typing import Any

import pytest
import sqlalchemy as sa

from app.domain.labels import LABELS
from app.storage.expiry import ExpiryReport
from app.storage.store import Store
from app.storage.tables import label_total, model_scope, token_count
from tests.storage.snapshot import reader

TODAY = 20_000


def set_seen_days(engine: sa.Engine, days: dict[int, int]) -> None:
    """Give the rows of these token ids these seen days."""
    with engine.begin() as conn:
        for token_id, day in days.items():
            conn.execute(
                sa.update(token_count)
                .where(token_count.c.token_id == token_id)
                .values(seen_day=day)
            )


def token_ids(engine: sa.Engine, scope: str = "s") -> set[int]:
    url = engine.url.render_as_string(hide_password=False)
    other = reader(url)
    try:
        with other.connect() as conn:
            query = (
                sa.select(token_count.c.token_id)
                .join(model_scope, model_scope.c.id == token_count.c.scope_id)
                .where(model_scope.c.name == scope)
            )
            return set(conn.execute(query).scalars())
    finally:
        other.dispose()


def assert_sums(url: str) -> None:
    """The invariants expiry must keep: per scope and label, ``label_total`` occurrences and
    token messages are the sums over the rows; the vocabulary is the row count; every row
    has some occurrences; nothing is negative."""
    engine = reader(url)
    try:
        with engine.connect() as conn:
            scopes = {row.id: row for row in conn.execute(sa.select(model_scope))}
            totals = {
                (row.scope_id, row.label): row for row in conn.execute(sa.select(label_total))
            }
            rows = list(conn.execute(sa.select(token_count)))
    finally:
        engine.dispose()
    for scope_id, scope in scopes.items():
        mine = [r._mapping for r in rows if r.scope_id == scope_id]
        assert scope.vocabulary == len(mine), f"vocabulary of {scope.name}"
        for row in mine:
            assert sum(row[f"{label}_occurrences"] for label in LABELS) > 0, "an empty row"
            assert all(v >= 0 for k, v in row.items() if k.endswith(("_messages", "_occurrences")))
        for label in LABELS:
            total = totals.get((scope_id, label))
            occurrences = sum(r[f"{label}_occurrences"] for r in mine)
            messages = sum(r[f"{label}_messages"] for r in mine)
            found = (0, 0) if total is None else (total.occurrences, total.token_messages)
            assert found == (occurrences, messages), f"{scope.name} {label} totals"
            assert total is None or total.messages >= 0


def url_of(engine: sa.Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def expire(store: Store, dry_run: bool = False, **limits: int) -> ExpiryReport:
    with store.transaction(write=not dry_run) as tx:
        return tx.expiry().expire(
            "s", TODAY, limits.get("age", 0), limits.get("cap", 0), dry_run=dry_run
        )


def generation(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        query = sa.select(model_scope.c.generation).where(model_scope.c.name == "s")
        return int(conn.execute(query).scalar_one())


def learn(store: Store, label: str, bag: dict[int, int]) -> None:
    with store.transaction(write=True) as tx:
        tx.add("s", label, bag, vocabulary=True)


def test_age_removes_rows_not_seen_since_the_cutoff_and_their_counts(engine: sa.Engine) -> None:
    store = Store(engine)
    learn(store, "spam", {1: 1, 2: 3, 3: 1})
    learn(store, "ham", {3: 2, 4: 1})
    set_seen_days(engine, {1: TODAY - 31, 2: TODAY - 30, 3: TODAY - 100, 4: TODAY})
    before = generation(engine)

    report = expire(store, age=30)

    assert report == ExpiryReport("s", 4, by_age=2, by_size=0)
    assert token_ids(engine) == {2, 4}
    assert generation(engine) == before + 1
    assert_sums(url_of(engine))
    with store.transaction(write=False) as tx:
        totals = tx.totals("s")
    assert (totals.of("spam").messages, totals.of("ham").messages) == (1, 1)  # learned stays


def test_the_cap_takes_hapaxes_first_oldest_first_then_rarer_before_commoner(
    engine: sa.Engine,
) -> None:
    store = Store(engine)
    learn(store, "spam", {10: 1, 11: 1, 12: 1, 20: 2, 30: 3})
    learn(store, "ham", {20: 1, 40: 5})
    # Totals over labels: 10, 11, 12 once; 20 three times; 30 three; 40 five.
    set_seen_days(engine, {10: TODAY - 1, 11: TODAY - 5, 12: TODAY - 3, 20: TODAY - 9})

    assert expire(store, cap=4) == ExpiryReport("s", 6, by_age=0, by_size=2)
    assert token_ids(engine) == {10, 20, 30, 40}  # the two oldest hapaxes went
    assert expire(store, cap=2) == ExpiryReport("s", 4, by_age=0, by_size=2)
    assert token_ids(engine) == {30, 40}  # then the last hapax, then the older of the 3s
    assert expire(store, cap=2).by_size == 0
    assert_sums(url_of(engine))


def test_age_goes_first_and_the_cap_counts_what_is_left(engine: sa.Engine) -> None:
    store = Store(engine)
    learn(store, "spam", {1: 1, 2: 1, 3: 1, 4: 2, 5: 2})
    set_seen_days(engine, {1: TODAY - 50, 4: TODAY - 50})

    assert expire(store, age=10, cap=2) == ExpiryReport("s", 5, by_age=2, by_size=1)
    assert token_ids(engine) == {3, 5}  # 2 and 3 are hapaxes of one day: the lower id goes
    assert_sums(url_of(engine))


def test_a_dry_run_counts_the_same_rows_and_changes_nothing(engine: sa.Engine) -> None:
    store = Store(engine)
    rng = random.Random(5)
    for _ in range(30):
        learn(store, rng.choice(LABELS), {rng.randrange(200): rng.randint(1, 3) for _ in range(9)})
    set_seen_days(engine, {i: TODAY - rng.randrange(60) for i in range(200)})
    ids, before = token_ids(engine), generation(engine)

    planned = expire(store, dry_run=True, age=40, cap=50)

    assert token_ids(engine) == ids
    assert generation(engine) == before
    assert planned.by_age > 0 and planned.by_size > 0
    assert expire(store, age=40, cap=50) == planned
    assert planned.after == len(token_ids(engine)) == 50


def test_nothing_to_do_changes_nothing(engine: sa.Engine) -> None:
    store = Store(engine)
    assert expire(store, age=1, cap=1) == ExpiryReport("s", 0)  # no such scope: none made
    learn(store, "ham", {1: 1})
    before = generation(engine)
    assert expire(store, age=30, cap=5) == ExpiryReport("s", 1)
    assert generation(engine) == before


def test_forget_after_expiry_takes_only_what_is_left(engine: sa.Engine) -> None:
    store = Store(engine)
    bag = {1: 2, 2: 1, 3: 1}
    learn(store, "spam", bag)
    learn(store, "spam", {3: 1, 4: 1})
    set_seen_days(engine, {1: TODAY - 90, 3: TODAY - 90})
    expire(store, age=30)
    # Token 3 comes back from a newer message; forgetting the old one must not take it.
    learn(store, "spam", {3: 1})
    with store.transaction(write=True) as tx:
        tx.subtract("s", "spam", bag, vocabulary=True)
    assert_sums(url_of(engine))
    assert token_ids(engine) == {4}
    with store.transaction(write=False) as tx:
        assert tx.totals("s").of("spam").occurrences == 1


@pytest.mark.parametrize("add_first", [True, False])
def test_a_relabel_after_expiry_brings_expired_rows_back_into_the_vocabulary(
    engine: sa.Engine, add_first: bool
) -> None:
    store = Store(engine)
    bag = {1: 1, 2: 2, 3: 1}
    learn(store, "spam", bag)
    learn(store, "ham", {3: 1})
    set_seen_days(engine, {1: TODAY - 90, 3: TODAY - 90})
    expire(store, age=30)
    assert token_ids(engine) == {2}
    with store.transaction(write=True) as tx:
        moves = [tx.add, tx.subtract] if add_first else [tx.subtract, tx.add]
        for move in moves:
            move("s", "ham" if move == tx.add else "spam", bag, vocabulary=False)
    assert token_ids(engine) == {1, 2, 3}
    assert_sums(url_of(engine))
    with store.transaction(write=False) as tx:
        totals = tx.totals("s")
    spam, ham = totals.of("spam"), totals.of("ham")
    assert (spam.messages, spam.occurrences, spam.token_messages) == (0, 0, 0)
    assert (ham.messages, ham.occurrences, ham.token_messages) == (2, 4, 3)


def test_scope_names_lists_every_scope(engine: sa.Engine) -> None:
    store = Store(engine)
    for scope in ("b", "a/user:x", "a"):
        with store.transaction(write=True) as tx:
            tx.add(scope, "ham", {1: 1}, vocabulary=True)
    with store.transaction(write=False) as tx:
        assert tx.expiry().scope_names() == ["a", "a/user:x", "b"]


def test_an_add_reports_the_vocabulary_it_left(engine: sa.Engine) -> None:
    store = Store(engine)
    with store.transaction(write=True) as tx:
        tx.add("s", "ham", {1: 1, 2: 1}, vocabulary=True)
        tx.add("s", "ham", {1: 1}, vocabulary=True)  # grows nothing
        tx.add("t", "spam", {1: 1}, vocabulary=True)
        grown: dict[str, Any] = tx.grown()
    assert grown == {"s": 2, "t": 1}
