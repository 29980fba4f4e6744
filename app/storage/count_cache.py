"""A process's cache of learned counts, checked against the database on every read.

Every transaction that changes a model's counts, totals or ham scores bumps the generation
of the model's ``model_scope`` row first (``ScopeIds.changing``; deleting a model bumps it
too). A transaction reads that row together with the model's totals, in the one query it
makes for the totals anyway (``Transaction.totals``). While the row reads as it did when the
cache was filled (same id, creation time, generation, vocabulary and totals), the token counts
and the ham score histogram held for the model are the ones the database holds: only the
token ids the cache has not seen yet are queried. When the row differs, all that is held for
the model is dropped. So processes that share one database agree: the first read after another
process's commit sees the new generation and reads afresh.

What may be held is bounded: ``max_tokens`` token entries over all models (a learned token or
one known to be absent); past that everything is dropped and the cache fills again. An entry
holds a token's per-label counts, which callers must not change.

Why (``spamfilter bench speed``, SpamAssassin halves): reading a message's ~190 token rows
was ~0.5 ms of a 2.3 ms classification, the totals ~0.2 ms and the ham histogram ~0.1 ms.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

# A token's learned counts per label, as ``Transaction.counts`` returns them.
Counts = Mapping[str, Any]


@dataclass(slots=True)
class ModelCache:
    """What is held for the model ``scope``, valid while its scope row reads as ``key``."""

    scope: str
    key: Hashable
    # token id -> its per-label counts, or None for a token the model has not learned.
    tokens: dict[int, Counts | None] = field(default_factory=dict)
    histogram: tuple[int, ...] | None = None


class CountCache:
    """The models' caches of one process, shared by its threads; ``max_tokens`` 0 holds
    nothing (every read goes to the database)."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self._models: dict[str, ModelCache] = {}
        self._held = 0
        self._lock = threading.Lock()

    def model(self, scope: str, key: Hashable) -> ModelCache | None:
        """The cache of ``scope`` when its scope row reads ``key`` now: what was held under
        that key, else an empty one that replaces it. None when the cache is off."""
        if self.max_tokens <= 0:
            return None
        held = self._models.get(scope)
        if held is not None and held.key == key:
            return held
        with self._lock:
            held = self._models.get(scope)
            if held is None or held.key != key:
                if held is not None:
                    self._held -= len(held.tokens)
                held = ModelCache(scope, key)
                self._models[scope] = held
            return held

    def fill(self, cache: ModelCache, found: Mapping[int, Counts | None]) -> None:
        """Hold the counts just read for ``cache``'s model (None for an absent token); past
        ``max_tokens`` everything held before is dropped first."""
        with self._lock:
            if self._models.get(cache.scope) is not cache or len(found) > self.max_tokens:
                return  # replaced meanwhile (these counts may be older than its key), or huge
            if self._held + len(found) > self.max_tokens:
                self._drop_all()
                cache.tokens.clear()
                self._models[cache.scope] = cache
            before = len(cache.tokens)
            cache.tokens.update(found)
            self._held += len(cache.tokens) - before

    def forget(self) -> None:
        """Drop everything held, for every model."""
        with self._lock:
            self._drop_all()

    def _drop_all(self) -> None:
        self._models.clear()
        self._held = 0
