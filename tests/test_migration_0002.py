"""Revision 0002 on a database with a learned model: every count survives, both ways.

A database is built at revision 0001 and filled, by SQL in that layout, with what the 0001
code would have written after learning 60 messages in two scopes; the expected counts are
computed here from the messages alone. After the upgrade the Store must read exactly those
counts, the migrated model must score every message exactly as a fresh database that
learned the same messages through the current code, and a forget must restore counts
exactly. The downgrade must give back the 0001 rows unchanged.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from app.service import Outcome, SpamFilter
from app.settings.schema import Settings
from app.storage.codec import encode_wide
from app.storage.engine import make_engine
from app.storage.migrate import downgrade, upgrade
from app.storage.store import Store, TokenStats
from app.storage.tables import model_scope, token_count
from tests.builders import ham_message, spam_message
from tests.storage.snapshot import assert_consistent, snapshot

MakeService = Callable[..., SpamFilter]
MakeSettings = Callable[..., Settings]

SCOPES = ("global", "alice")
MESSAGES = 60
CREATED = datetime(2026, 11, 1, 8, 30, tzinfo=UTC)

# The 0001 layout, as revision 0001 created it (the app's tables are the 0002 layout).
V1 = sa.MetaData()
V1_TABLES = {
    "token_count": sa.Table(
        "token_count",
        V1,
        sa.Column("scope", sa.String(200), primary_key=True),
        sa.Column("token_id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("label", sa.String(32), primary_key=True),
        sa.Column("occurrences", sa.BigInteger),
        sa.Column("messages", sa.BigInteger),
    ),
    "token": sa.Table(
        "token",
        V1,
        sa.Column("scope", sa.String(200), primary_key=True),
        sa.Column("token_id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("occurrences", sa.BigInteger),
    ),
    "label_total": sa.Table(
        "label_total",
        V1,
        sa.Column("scope", sa.String(200), primary_key=True),
        sa.Column("label", sa.String(32), primary_key=True),
        sa.Column("messages", sa.BigInteger),
        sa.Column("occurrences", sa.BigInteger),
        sa.Column("token_messages", sa.BigInteger),
    ),
    "model_scope": sa.Table(
        "model_scope",
        V1,
        sa.Column("scope", sa.String(200), primary_key=True),
        sa.Column("vocabulary", sa.BigInteger),
        sa.Column("created_at", sa.DateTime(timezone=True)),
    ),
    "learned_message": sa.Table(
        "learned_message",
        V1,
        sa.Column("scope", sa.String(200), primary_key=True),
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("label", sa.String(32)),
        sa.Column("token_count", sa.Integer),
        sa.Column("tokens", sa.LargeBinary),
        sa.Column("learned_at", sa.DateTime(timezone=True)),
    ),
}


@dataclass
class Learned:
    """Messages as learned, and the 0001 rows they imply."""

    messages: list[tuple[str, bytes, str]] = field(default_factory=list)  # scope, raw, label
    bags: dict[tuple[str, str], tuple[str, dict[int, int]]] = field(default_factory=dict)
    per_token: dict[tuple[str, int, str], list[int]] = field(default_factory=dict)
    totals: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def add(self, scope: str, raw: bytes, label: str, digest: str, bag: dict[int, int]) -> None:
        self.messages.append((scope, raw, label))
        self.bags[scope, digest] = (label, bag)
        total = self.totals.setdefault((scope, label), [0, 0, 0])
        total[0] += 1
        total[1] += sum(bag.values())
        total[2] += len(bag)
        for tid, n in bag.items():
            cell = self.per_token.setdefault((scope, tid, label), [0, 0])
            cell[0] += n
            cell[1] += 1

    def token_totals(self) -> Counter[tuple[str, int]]:
        overall: Counter[tuple[str, int]] = Counter()
        for (scope, tid, _), (occurrences, _) in self.per_token.items():
            overall[scope, tid] += occurrences
        return overall

    def vocabulary(self, scope: str) -> int:
        return sum(1 for s, _ in self.token_totals() if s == scope)

    def counts(self, scope: str) -> dict[int, dict[str, TokenStats]]:
        """What ``Transaction.counts`` must answer for every token of ``scope``."""
        found: dict[int, dict[str, TokenStats]] = {}
        for (s, tid, label), (occurrences, messages) in self.per_token.items():
            if s == scope:
                found.setdefault(tid, {})[label] = TokenStats(occurrences, messages)
        return found


def learned_state(analyser: SpamFilter, seed: int = 2002) -> Learned:
    """60 messages, labels mixed, in two scopes; some messages learned in both."""
    rng = random.Random(seed)
    state = Learned()
    for serial in range(MESSAGES):
        label = rng.choice(("ham", "spam"))
        raw = (spam_message if label == "spam" else ham_message)(rng, serial)
        analysed = analyser.analyse(raw)
        scopes = [rng.choice(SCOPES)] if serial % 10 else list(SCOPES)
        for scope in scopes:
            state.add(scope, raw, label, analysed.digest, analysed.bag())
    return state


def write_0001(engine: sa.Engine, state: Learned) -> None:
    """The rows the 0001 code would have left after learning ``state``."""
    overall = state.token_totals()
    t = V1_TABLES
    with engine.begin() as conn:
        conn.execute(
            sa.insert(t["token_count"]),
            [
                {"scope": s, "token_id": i, "label": lb, "occurrences": n, "messages": m}
                for (s, i, lb), (n, m) in sorted(state.per_token.items())
            ],
        )
        conn.execute(
            sa.insert(t["token"]),
            [
                {"scope": s, "token_id": i, "occurrences": n}
                for (s, i), n in sorted(overall.items())
            ],
        )
        conn.execute(
            sa.insert(t["label_total"]),
            [
                {"scope": s, "label": lb, "messages": m, "occurrences": n, "token_messages": d}
                for (s, lb), (m, n, d) in sorted(state.totals.items())
            ],
        )
        conn.execute(
            sa.insert(t["model_scope"]),
            [
                {"scope": s, "vocabulary": state.vocabulary(s), "created_at": CREATED}
                for s in SCOPES
            ],
        )
        conn.execute(
            sa.insert(t["learned_message"]),
            [
                {
                    "scope": s,
                    "digest": digest,
                    "label": label,
                    "token_count": len(bag),
                    "tokens": encode_wide(bag),
                    "learned_at": CREATED + timedelta(minutes=k),
                }
                for k, ((s, digest), (label, bag)) in enumerate(sorted(state.bags.items()))
            ],
        )


def rows_0001(engine: sa.Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every 0001 table, sorted."""
    with engine.connect() as conn:
        return {
            name: sorted((tuple(row) for row in conn.execute(sa.select(table))), key=repr)
            for name, table in V1_TABLES.items()
        }


@pytest.fixture
def engine(database_url: str) -> Iterator[sa.Engine]:
    """An engine on this test's database, at revision 0001."""
    engine = make_engine(database_url)
    upgrade(engine, "0001")
    yield engine
    engine.dispose()


@pytest.fixture
def state(engine: sa.Engine, settings: Settings, make_service: MakeService) -> Learned:
    """The database at 0001 holding a learned model; the expected counts."""
    learned = learned_state(make_service(settings, migrate=False))
    shared = {tid for (_, tid, label) in learned.per_token if label == "spam"} & {
        tid for (_, tid, label) in learned.per_token if label == "ham"
    }
    assert shared, "some tokens must have counts in both labels"
    assert {s for s, _, _ in learned.messages} == set(SCOPES)
    write_0001(engine, learned)
    return learned


def test_upgrade_keeps_every_count_and_the_downgrade_every_row(
    engine: sa.Engine, state: Learned
) -> None:
    before = rows_0001(engine)
    upgrade(engine)
    store = Store(engine)
    with store.transaction(write=False) as tx:
        for scope in SCOPES:
            expected = state.counts(scope)
            assert tx.counts(scope, [*expected, 12345]) == expected
            totals = tx.totals(scope)
            assert totals.vocabulary == state.vocabulary(scope) == len(expected)
            labels = {
                label: (stats.messages, stats.occurrences, stats.token_messages)
                for label, stats in totals.labels.items()
            }
            assert labels == {
                label: tuple(total) for (s, label), total in state.totals.items() if s == scope
            }
        for (scope, digest), (label, bag) in state.bags.items():
            record = tx.learned(scope, digest)
            assert record is not None
            assert (record.label, record.bag) == (label, bag)
        assert tx.totals("nobody").labels == {}
        assert tx.counts("nobody", list(state.counts("global"))) == {}
    with engine.connect() as conn:
        scopes = conn.execute(sa.select(model_scope.c.name, model_scope.c.generation)).all()
        days = set(conn.execute(sa.select(token_count.c.seen_day)).scalars())
    assert sorted(scopes) == sorted((s, 0) for s in SCOPES)  # "nobody" was not created
    assert len(days) == 1 and abs(days.pop() - datetime.now(UTC).timestamp() // 86_400) <= 1

    downgrade(engine, "0001")
    assert rows_0001(engine) == before


def test_a_migrated_model_scores_and_forgets_like_a_fresh_one(
    engine: sa.Engine,
    state: Learned,
    database_url: str,
    database_factory: Callable[[], str],
    make_settings: MakeSettings,
    make_service: MakeService,
) -> None:
    upgrade(engine)
    fresh_url = database_factory()
    # Counts and scores are compared; the ham scores behind a calibrated cut-off, which a
    # migrated model starts without, have tests of their own.
    fixed = {"calibrate": False}
    # Scopes other than the configured one are only reachable by configuring them.
    migrated = {
        s: make_service(make_settings(scope=s, decision=fixed), migrate=False) for s in SCOPES
    }
    fresh = {
        s: make_service(make_settings(scope=s, database_url=fresh_url, decision=fixed))
        for s in SCOPES
    }
    for scope, raw, label in state.messages:
        assert fresh[scope].learn(raw, label).outcome == Outcome.LEARNED
    assert snapshot(database_url, timestamps=False) == snapshot(fresh_url, timestamps=False)
    assert_consistent(database_url)

    rng = random.Random(7)
    probes = [raw for _, raw, _ in state.messages[:20]]
    probes += [spam_message(rng, 1000 + i) for i in range(5)]
    probes += [ham_message(rng, 2000 + i) for i in range(5)]
    for kind in ("multinomial", "bernoulli"):
        model = {"kind": kind}
        for scope in SCOPES:
            pair = [
                make_service(
                    make_settings(scope=scope, database_url=url, model=model, decision=fixed),
                    False,
                )
                for url in (database_url, fresh_url)
            ]
            for raw in probes:
                a, b = (service.classify(raw) for service in pair)
                assert (a.log_posteriors, a.verdict, a.clues) == (
                    b.log_posteriors,
                    b.verdict,
                    b.clues,
                )

    forgotten = state.messages[::3]
    for scope, raw, _ in forgotten:
        assert migrated[scope].forget(raw).outcome == Outcome.FORGOTTEN
        assert fresh[scope].forget(raw).outcome == Outcome.FORGOTTEN
    assert_consistent(database_url)
    assert snapshot(database_url, timestamps=False) == snapshot(fresh_url, timestamps=False)
    for scope in SCOPES:
        assert migrated[scope].stats() == fresh[scope].stats()


def test_scopes_named_only_by_counts_are_migrated_and_vocabulary_recounted(
    engine: sa.Engine, state: Learned, database_url: str
) -> None:
    """An inconsistent 0001 database: a scope row missing, a vocabulary off by some."""
    with engine.begin() as conn:
        conn.execute(
            sa.delete(V1_TABLES["model_scope"]).where(V1_TABLES["model_scope"].c.scope == "alice")
        )
        conn.execute(sa.update(V1_TABLES["model_scope"]).values(vocabulary=3))
    upgrade(engine)
    with Store(engine).transaction(write=False) as tx:
        for scope in SCOPES:
            assert tx.totals(scope).vocabulary == state.vocabulary(scope)
            assert tx.counts(scope, list(state.counts(scope))) == state.counts(scope)
    assert_consistent(database_url)


def test_a_label_without_columns_stops_the_upgrade_before_any_change(
    engine: sa.Engine, state: Learned
) -> None:
    del state
    with engine.begin() as conn:
        conn.execute(
            sa.insert(V1_TABLES["token_count"]),
            {"scope": "global", "token_id": 1, "label": "phish", "occurrences": 1, "messages": 1},
        )
    before = rows_0001(engine)
    with pytest.raises(RuntimeError, match="phish"):
        upgrade(engine)
    assert Store(engine).schema_revision() == "0001"
    assert rows_0001(engine) == before
