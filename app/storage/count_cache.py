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

A process that writes keeps its own cache warm rather than dropping it: a transaction that
checked a model before changing it records what it changed (the new counts of the rows a
learn added to, which its upsert returns or a batch's pending add foresees: ``CountWrites``;
ham score bins moved by one), reads the model's
scope row again just before committing, and, when the generation there is exactly one past
the one it checked (no other writer came between), updates the held entries and moves them
to the new key once the commit has succeeded. Rows it cannot follow exactly (a relabel's or
a forget's) are dropped from what is held; expiry, import and deletion follow nothing, so
the new key simply finds nothing held. A reader in the same process that is scoring while
such an update lands may see some counts from after it, as a PostgreSQL read committed
transaction may.

What may be held is bounded: ``max_tokens`` token entries over all models (a learned token or
one known to be absent) and ``MAX_MODELS`` models; past either everything is dropped and the
cache fills again. An entry holds a token's per-label counts, which callers must not change.

Why (``spamfilter bench speed``, SpamAssassin halves): reading a message's ~190 token rows
was ~0.5 ms of a 2.3 ms classification, the totals ~0.2 ms and the ham histogram ~0.1 ms.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.storage.scopes import ScopeIds

# A token's learned counts per label, as ``Transaction.counts`` returns them.
Counts = Mapping[str, Any]
# Models held at once (each with its key and histogram, ~1 KB): a site with many users'
# models, most of them too young to score (so holding no tokens), stays bounded too.
MAX_MODELS = 10_000


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
                elif len(self._models) >= MAX_MODELS:
                    self._drop_all()
                held = ModelCache(scope, key)
                self._models[scope] = held
            return held

    def fill(self, cache: ModelCache, key: Hashable, found: Mapping[int, Counts | None]) -> None:
        """Hold the counts just read under ``key`` for ``cache``'s model (None for an absent
        token); past ``max_tokens`` everything held before is dropped first."""
        with self._lock:
            if not self._current(cache, key) or len(found) > self.max_tokens:
                return  # replaced or moved on meanwhile (these counts may be older), or huge
            if self._held + len(found) > self.max_tokens:
                self._drop_all()
                cache.tokens.clear()
                self._models[cache.scope] = cache
            before = len(cache.tokens)
            cache.tokens.update(found)
            self._held += len(cache.tokens) - before

    def keep_histogram(self, cache: ModelCache, key: Hashable, histogram: list[int]) -> None:
        """Hold the ham score histogram just read under ``key`` for ``cache``'s model."""
        with self._lock:
            if self._current(cache, key):
                cache.histogram = tuple(histogram)

    def install(self, update: Update) -> None:
        """Apply a committed transaction's changes to what is held for its model, and move
        it to the model's new key; nothing when what is held is not what it checked."""
        with self._lock:
            held = self._models.get(update.scope)
            if held is None or held.key != update.checked:
                return
            changes = update.changes
            for tid in changes.evicted:
                if held.tokens.pop(tid, _ABSENT) is not _ABSENT:
                    self._held -= 1
            before = len(held.tokens)
            held.tokens.update(changes.tokens)
            self._held += len(held.tokens) - before
            held.histogram = update.histogram
            held.key = update.key
            if self._held > self.max_tokens:
                self._drop_all()

    def _current(self, cache: ModelCache, key: Hashable) -> bool:
        return self._models.get(cache.scope) is cache and cache.key == key

    def forget(self) -> None:
        """Drop everything held, for every model."""
        with self._lock:
            self._drop_all()

    def _drop_all(self) -> None:
        self._models.clear()
        self._held = 0


_ABSENT = object()
# What ``Held.tokens`` gives a token id it cannot answer for: the database must be asked.
UNSEEN: Any = object()


@dataclass(slots=True)
class Changes:
    """What one transaction changed in one model, as far as it can tell exactly: the
    counts of ``tokens`` now (None: absent), the ids in ``evicted`` no longer known, the ham
    score bins moved by one (or, with ``histogram_unknown``, moved some other way)."""

    tokens: dict[int, Counts | None] = field(default_factory=dict)
    evicted: set[int] = field(default_factory=set)
    histogram: list[tuple[int, int]] = field(default_factory=list)
    histogram_unknown: bool = False

    def evict(self, token_ids: Iterable[int]) -> None:
        """These tokens' rows changed in a way not followed: whatever was known of them,
        held or noted here earlier in the transaction, is no longer."""
        for token_id in token_ids:
            self.tokens.pop(token_id, None)
            self.evicted.add(token_id)


@dataclass(frozen=True, slots=True)
class Held:
    """What one transaction may read of a model without asking the database: ``model``,
    the process's cache as the transaction checked it, and, once the transaction has
    changed the model, ``own``: its changes since, which take precedence."""

    model: ModelCache
    own: Changes | None = None
    # With ``own``: the histogram as the transaction saw it before its changes.
    base: tuple[int, ...] | None = None

    def tokens(self, token_ids: Iterable[int]) -> dict[int, Counts | None]:
        """Each id's counts (None: absent from the model), or UNSEEN when not known here."""
        held = self.model.tokens
        if self.own is None:
            return {tid: held.get(tid, UNSEEN) for tid in token_ids}
        own, evicted = self.own.tokens, self.own.evicted
        found: dict[int, Counts | None] = {}
        for tid in token_ids:
            per = own.get(tid, UNSEEN)
            if per is UNSEEN and tid not in evicted:
                per = held.get(tid, UNSEEN)
            found[tid] = per
        return found

    def histogram(self) -> tuple[int, ...] | None:
        """The ham score histogram, None when not known here."""
        if self.own is None:
            return self.model.histogram
        return _stepped(self.base, self.own)


def _stepped(histogram: tuple[int, ...] | None, changes: Changes) -> tuple[int, ...] | None:
    """``histogram`` after ``changes`` (None when either does not know it)."""
    if changes.histogram_unknown or histogram is None:
        return None
    if not changes.histogram:
        return histogram
    bins = list(histogram)
    for index, step in changes.histogram:
        bins[index] = max(bins[index] + step, 0)
    return tuple(bins)


@dataclass(frozen=True, slots=True)
class Update:
    """A transaction's changes to ``scope``: from the state it checked to the state at
    ``key`` (read just before its commit)."""

    scope: str
    checked: Hashable
    key: Hashable
    changes: Changes
    # The ham score histogram at ``key`` (None: not known): what the transaction saw when it
    # checked the model (or read since), stepped by its changes. Absolute, not the steps:
    # a reader that checked the old key may have read the new histogram from the database
    # (READ COMMITTED) and held it before this update arrives.
    histogram: tuple[int, ...] | None = None


class CacheView:
    """One transaction's use of the process's cache: the models it has checked (read their
    scope row), what it holds for them, and what the transaction changed."""

    def __init__(self, cache: CountCache | None, scopes: ScopeIds) -> None:
        self._cache = cache
        self._scopes = scopes
        self._checked: dict[str, tuple[ModelCache, Hashable]] = {}
        self._changes: dict[str, Changes] = {}
        # The histogram each checked model held when checked, or as this transaction read it.
        self._histograms: dict[str, tuple[int, ...] | None] = {}

    def check(self, scope: str, key: Hashable) -> None:
        """The scope row of ``scope`` reads ``key`` in this transaction. Once the
        transaction has changed the model, its rows are its own, not yet anyone's key."""
        if self._cache is None or self._scopes.changed(scope):
            return
        held = self._cache.model(scope, key)
        if held is not None:
            self._checked[scope] = (held, key)
            self._histograms[scope] = held.histogram

    def held(self, scope: str) -> Held | None:
        """What may be read for ``scope`` here, if this transaction checked it: what is
        held, and once the transaction has changed the model, its own changes over that.

        After a change, only when the change moved the generation exactly one past the
        checked one (no other writer came between the check and the change, and none can
        until this transaction ends: the change locked the scope row) and was a change the
        transaction follows (``ScopeIds.untracked``). So a batch of learns in one
        transaction judges each message from the cache, as one learn per transaction does.
        """
        found = self._checked.get(scope)
        if found is None:
            return None
        generation = self._scopes.bumped_to(scope)
        if generation is None:
            return Held(found[0])
        checked = _generation(found[1])
        if self._scopes.untracked(scope) or checked is None or generation != checked + 1:
            return None
        return Held(found[0], self.changes(scope), self._histograms.get(scope))

    def fill(self, scope: str, found: Mapping[int, Counts | None]) -> None:
        """Keep counts this transaction read for a model it checked: held for the process
        while it has not changed the model, else among its own changes (read after them,
        they are what it will commit)."""
        held = self.held(scope)
        if held is None or self._cache is None:
            return
        if held.own is None:
            self._cache.fill(held.model, self._checked[scope][1], found)
        else:
            held.own.tokens.update(found)

    def keep_histogram(self, scope: str, histogram: list[int]) -> None:
        """Hold the ham score histogram this transaction read for ``scope``, while it has
        not changed the model."""
        held = self.held(scope)
        if held is not None and held.own is None and self._cache is not None:
            self._cache.keep_histogram(held.model, self._checked[scope][1], histogram)
            self._histograms[scope] = tuple(histogram)

    def changes(self, scope: str) -> Changes:
        """Where to record what this transaction changes in ``scope``."""
        return self._changes.setdefault(scope, Changes())

    def seal(self, read_key: Callable[[str], Hashable | None]) -> list[Update]:
        """Before the commit: the updates to make once it has succeeded. Only for a model
        this transaction checked, changed only by ways it records, whose scope row reads
        one generation past the checked one (``read_key``: the row as ``check`` was given
        it)."""
        updates: list[Update] = []
        for scope, changes in self._changes.items():
            checked = self._checked.get(scope)
            if checked is None or self._scopes.untracked(scope):
                continue
            key = read_key(scope)
            if key is not None and _next_generation(checked[1], key):
                histogram = _stepped(self._histograms.get(scope), changes)
                updates.append(Update(scope, checked[1], key, changes, histogram))
        return updates

    def install(self, updates: list[Update]) -> None:
        """After the commit: apply ``updates`` to the process's cache."""
        if self._cache is not None:
            for update in updates:
                self._cache.install(update)


def _next_generation(checked: Hashable, key: Hashable) -> bool:
    """Whether ``key`` is the scope row one generation after ``checked`` (keys are the rows
    of ``Transaction.totals``: id, created_at, generation, ... first)."""
    if not (isinstance(checked, tuple) and isinstance(key, tuple) and checked and key):
        return False
    old, new = checked[0], key[0]
    return bool(new[:2] == old[:2] and new[2] == old[2] + 1)


def _generation(key: Hashable) -> int | None:
    """The generation in a key (see ``_next_generation``); None for a key without one."""
    if isinstance(key, tuple) and key and isinstance(key[0], tuple) and len(key[0]) > 2:
        return int(key[0][2])
    return None
