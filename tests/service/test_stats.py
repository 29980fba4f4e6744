"""stats: the kept totals equal a recomputation from the rows, through learn/relabel/forget."""

from __future__ import annotations

import random
from collections import Counter

from app.service import SpamFilter, Stats
from tests.builders import ham_message, spam_message
from tests.storage.snapshot import Snapshot, as_dicts, assert_consistent, snapshot


def recomputed(snap: Snapshot, scope: str = "global") -> dict[str, object]:
    """Messages and token occurrences per label and the vocabulary, from the raw rows."""
    messages: Counter[str] = Counter(
        r["label"] for r in as_dicts(snap, "learned_message") if r["scope"] == scope
    )
    tokens: Counter[str] = Counter()
    vocabulary = set()
    for row in as_dicts(snap, "token_count"):
        for label in ("ham", "spam"):
            if row["scope"] == scope and row[f"{label}_occurrences"] > 0:
                tokens[label] += row[f"{label}_occurrences"]
                vocabulary.add(row["token_id"])
    labels = {label: (messages[label], tokens[label]) for label in ("ham", "spam")}
    return {"labels": labels, "vocabulary": len(vocabulary)}


def reported(stats: Stats) -> dict[str, object]:
    labels = {label: (s.messages, s.tokens) for label, s in stats.labels.items()}
    return {"labels": labels, "vocabulary": stats.vocabulary}


def test_a_new_database_has_empty_stats(service: SpamFilter, database_backend: str) -> None:
    stats = service.stats()
    assert reported(stats) == {"labels": {"ham": (0, 0), "spam": (0, 0)}, "vocabulary": 0}
    assert stats.database == database_backend
    assert stats.scope == "global"


def test_stats_equal_a_recount_from_the_rows(service: SpamFilter, database_url: str) -> None:
    rng = random.Random(21)
    learned: dict[bytes, str] = {}
    for step in range(240):
        roll = rng.random()
        if learned and roll < 0.15:
            raw = rng.choice(list(learned))
            service.forget(raw)
            del learned[raw]
        elif learned and roll < 0.3:
            raw = rng.choice(list(learned))
            learned[raw] = "ham" if learned[raw] == "spam" else "spam"
            service.learn(raw, learned[raw])
        else:
            label = rng.choice(("ham", "spam"))
            raw = (spam_message if label == "spam" else ham_message)(rng, step)
            service.learn(raw, label)
            learned[raw] = label
        if step % 60 == 59:
            snap = assert_consistent(database_url)
            assert reported(service.stats()) == recomputed(snap)

    stats = service.stats()
    assert stats.labels["spam"].messages == sum(1 for lb in learned.values() if lb == "spam")
    assert stats.labels["ham"].messages == sum(1 for lb in learned.values() if lb == "ham")
    assert stats.vocabulary > 0

    for raw in learned:
        service.forget(raw)
    assert reported(service.stats()) == {
        "labels": {"ham": (0, 0), "spam": (0, 0)},
        "vocabulary": 0,
    }
    assert recomputed(snapshot(database_url))["vocabulary"] == 0
