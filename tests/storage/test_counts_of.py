"""Two models read at once (``totals_of``, ``counts_of``): what a user's judgement reads of
its own model and the site-wide one in one query each is, scope by scope, what ``totals``
and ``counts`` read alone, in the same order; each scope's cache is checked and filled on
its own, and only the ids a scope's cache lacks are asked for (SQLite and PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from app.storage.engine import make_engine
from app.storage.store import Store, TokenStats

WIDER = ("ham", "spam", "newsletter")
IDS = list(range(1, 13))


@pytest.fixture
def writer(engine: sa.Engine) -> Store:
    store = Store(engine, cache_tokens=0, classes=WIDER)
    store.prepare_classes()
    return store


@pytest.fixture
def reader(engine: sa.Engine) -> Iterator[Store]:
    other = make_engine(engine.url.render_as_string(hide_password=False))
    yield Store(other, classes=WIDER)
    other.dispose()


def learn(store: Store, scope: str, label: str, bag: dict[int, int]) -> None:
    with store.transaction(write=True) as tx:
        tx.add(scope, label, bag, vocabulary=True)


def statements(store: Store) -> list[str]:
    """Every statement ``store``'s own engine runs from now on."""
    seen: list[str] = []

    @sa.event.listens_for(store._engine, "before_cursor_execute")
    def _note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    return seen


def alone(store: Store, scopes: tuple[str, ...], ids: list[int]) -> list[Any]:
    """Each scope's totals and counts read by itself."""
    with store.transaction(write=False) as tx:
        totals = [tx.totals(scope) for scope in scopes]
        return [*totals, *(tx.counts(scope, ids) for scope in scopes)]


def together(store: Store, scopes: tuple[str, ...], ids: list[int]) -> list[Any]:
    """The same, both scopes in each read."""
    with store.transaction(write=False) as tx:
        totals = tx.totals_of(scopes)
        counts = tx.counts_of(scopes, ids)
    assert list(totals) == list(counts) == list(scopes)
    return [*totals.values(), *counts.values()]


def order(read: list[Any]) -> list[list[int]]:
    return [list(counts) for counts in read[2:]]


def test_both_scopes_read_together_are_each_as_read_alone(writer: Store, reader: Store) -> None:
    learn(writer, "site", "spam", {1: 2, 2: 1, 7: 1})
    learn(writer, "site", "ham", {2: 1, 3: 4, 11: 1})
    learn(writer, "site", "newsletter", {3: 1, 5: 2})  # a class with columns of its own
    learn(writer, "site:kim", "ham", {1: 1, 4: 2, 11: 3})
    learn(writer, "site:kim", "newsletter", {12: 1})
    ids = [11, 3, 99, 1, 12, 5, 2, 4, 7]  # unordered, and an id never learned
    expected = alone(writer, ("site:kim", "site"), ids)
    assert expected[3][3] == {
        "ham": TokenStats(4, 1),
        "newsletter": TokenStats(1, 1),
    }
    assert order(expected) == [[1, 4, 11, 12], [1, 2, 3, 5, 7, 11]]
    cold = together(reader, ("site:kim", "site"), ids)
    warm = together(reader, ("site:kim", "site"), ids)
    assert cold == warm == expected
    assert order(cold) == order(warm) == order(expected)  # the order scores are summed in
    # the scope order the caller gives, whatever the ids' order in the database
    flipped = together(reader, ("site", "site:kim"), ids)
    assert flipped == [expected[1], expected[0], expected[3], expected[2]]


def test_a_scope_never_written_reads_as_empty_at_no_cost(writer: Store, reader: Store) -> None:
    learn(writer, "site", "spam", {1: 1})
    seen = statements(reader)
    with reader.transaction(write=False) as tx:
        totals = tx.totals_of(("site:new", "site"))
        counts = tx.counts_of(("site:new", "site"), [1, 2])
    assert totals["site:new"].labels == {} and totals["site:new"].vocabulary == 0
    assert totals["site"].of("spam").messages == 1
    assert counts == {"site:new": {}, "site": {1: {"spam": TokenStats(1, 1)}}}
    # one read of the totals, one of the counts: no lookup of the missing scope's id
    reads = [s.split(" FROM ")[1].split()[0] for s in seen if " FROM " in s]
    assert reads == ["model_scope", "token_count"]


def test_one_query_asks_each_scope_only_for_what_its_cache_lacks(
    writer: Store, reader: Store
) -> None:
    learn(writer, "site", "spam", {1: 1, 2: 1})
    learn(writer, "site:kim", "ham", {2: 1, 3: 1})
    with reader.transaction(write=False) as tx:  # the site-wide model alone, cached
        tx.totals("site")
        tx.counts("site", IDS)
    seen = statements(reader)
    first = together(reader, ("site:kim", "site"), [*IDS, 50])
    counted = [s for s in seen if "token_count" in s]
    assert len(counted) == 1 and "UNION ALL" in counted[0]  # both scopes lack id 50
    assert together(reader, ("site:kim", "site"), [*IDS, 50]) == first
    assert len([s for s in seen if "token_count" in s]) == 1  # every id held in both caches
    learn(writer, "site:kim", "spam", {50: 2})  # the user's model moves on, the site's not
    after = together(reader, ("site:kim", "site"), [*IDS, 50])
    counted = [s for s in seen if "token_count" in s]
    assert len(counted) == 2 and "UNION ALL" not in counted[1]  # the user's ids alone
    assert after[2][50] == {"spam": TokenStats(2, 1)}
    assert after == alone(writer, ("site:kim", "site"), [*IDS, 50])
