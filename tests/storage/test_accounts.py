"""Listing the scopes under a prefix and deleting one scope whole, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.errors import StorageConflict
from app.storage.store import Store
from app.storage.tables import label_total, learned_message, model_scope, token_count

BAG = {11: 2, -12: 1, 13: 4}


def learn(store: Store, scope: str, digest: str, label: str, bag: dict[int, int]) -> None:
    with store.transaction(write=True) as tx:
        assert tx.claim(scope, digest, label, bag)
        tx.add(scope, label, bag, vocabulary=True)


def rows(engine: sa.Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {
            str(table.name): int(
                conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            )
            for table in (model_scope, token_count, label_total, learned_message)
        }


def test_scopes_under_a_prefix_in_one_list(engine: sa.Engine) -> None:
    store = Store(engine)
    learn(store, "global", "d0", "ham", BAG)
    learn(store, "global/user:b_1", "d1", "spam", BAG)
    learn(store, "global/user:b_1", "d2", "ham", {99: 1})
    learn(store, "global/user:a%", "d3", "ham", {5: 1})
    learn(store, "global/user:bX1", "d4", "ham", {6: 1})  # "_" must not match any character
    with store.transaction(write=False) as tx:
        found = tx.scopes_under("global/user:b_")
        everyone = tx.scopes_under("global/user:")
    assert [(s.name, s.messages, s.vocabulary) for s in found] == [
        ("global/user:b_1", {"ham": 1, "spam": 1}, 4)
    ]
    # By code point whatever the database's collation ("X" < "_").
    assert [s.name for s in everyone] == ["global/user:a%", "global/user:bX1", "global/user:b_1"]


def test_dropping_a_scope_deletes_its_rows_and_no_others(engine: sa.Engine) -> None:
    store = Store(engine)
    learn(store, "global", "d0", "ham", BAG)
    before = rows(engine)
    learn(store, "global/user:alice", "d1", "spam", BAG)
    learn(store, "global/user:alice", "d2", "ham", {99: 1})
    with store.transaction(write=True) as tx:
        dropped = tx.drop_scope("global/user:alice")
        assert tx.drop_scope("global/user:nobody") is None
    assert dropped is not None and (dropped.messages, dropped.tokens) == (2, 4)
    assert rows(engine) == before
    with store.transaction(write=False) as tx:
        assert tx.totals("global").of("ham").messages == 1


def test_a_write_to_a_scope_deleted_meanwhile_is_a_conflict(engine: sa.Engine) -> None:
    if engine.dialect.name == "sqlite":
        pytest.skip("SQLite writers never overlap: no delete can come between find and write")
    store = Store(engine)
    learn(store, "global/user:alice", "d1", "spam", BAG)
    with pytest.raises(StorageConflict), store.transaction(write=True) as tx:
        assert tx.totals("global/user:alice").vocabulary == 3  # its id is known from here on
        with engine.begin() as other:  # another session deletes the user meanwhile
            other.execute(sa.delete(model_scope).where(model_scope.c.name == "global/user:alice"))
        tx.add("global/user:alice", "ham", {7: 1}, vocabulary=True)
