"""One message's tokens added to a label and taken out again: the token rows, the label
totals and the vocabulary, exact whatever expiry has removed since. ``Transaction.add`` and
``subtract`` (``repository.py``) are these, in the transaction's connection.

A batch of learns (``learn_many``) writes its messages' rows together: ``defer`` adds a
message to what is pending, its counts after the add taken from what the transaction holds
(the cache checked against the model, and the transaction's own changes), and ``flush``
writes what is pending in one statement a model, before anything reads or writes the rows
another way and before the commit. Why: on PostgreSQL a row updated once a message kept
every version until the commit, so a larger batch grew the tables, which held a batch at
10; written once a batch, 50 at a time learn about a quarter faster in as little space
(docs/benchmarks.md, "Measurements behind the design"). On SQLite, where statements run in
process, it changes nothing measurable either way."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from sqlalchemy import Connection, delete

from app.storage import dialect
from app.storage.count_cache import UNSEEN, CacheView, Counts
from app.storage.rows import today, token_stats
from app.storage.scopes import ScopeIds
from app.storage.tables import CountLayout, label_total


@dataclass(slots=True)
class _Pending:
    """A model's adds not yet written: each token row's increments (``count_names`` order)
    and its counts after them, each label's totals increments, and the tokens they make
    new."""

    scope_id: int
    rows: dict[int, list[int]] = field(default_factory=dict)
    after: dict[int, list[int]] = field(default_factory=dict)
    totals: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    new: int = 0


class CountWrites:
    """Adding and subtracting messages' tokens in one transaction; ``grown`` records each
    scope's vocabulary after an add that grew it."""

    def __init__(
        self,
        conn: Connection,
        scopes: ScopeIds,
        cache: CacheView,
        grown: dict[str, int],
        layout: CountLayout,
    ) -> None:
        self._layout = layout
        self._conn = conn
        self._scopes = scopes
        self._cache = cache
        self._grown = grown
        self._pending: dict[str, _Pending] = {}

    def add(self, scope: str, label: str, bag: Mapping[int, int], vocabulary: bool) -> int | None:
        """Add one message's tokens to ``label``: counts, totals, and each row's seen day;
        the vocabulary's size after, when the add grew it (else None).

        With ``vocabulary`` true the rows this creates grow the vocabulary (a row is new when
        its occurrences over all labels are what this message added); a relabel passes false:
        its tokens move between labels of rows that exist, except rows expiry has deleted
        since, which come back and grow the vocabulary again (found by reading the ids first,
        as the relabel's subtract may have left rows of this message at zero).
        """
        scope_id = self._scopes.changing(scope, tracked=True)
        layout = self._layout
        token_count = layout.table
        labels = layout.columns()
        own = layout.of(label)
        others = [
            column.name
            for lc in labels
            if lc.label != label
            for column in (lc.messages, lc.occurrences)
        ]
        day = today()
        rows = [
            {
                "scope_id": scope_id,
                "token_id": i,
                own.messages.name: 1,
                own.occurrences.name: bag[i],
                **dict.fromkeys(others, 0),
                "seen_day": day,
            }
            for i in sorted(bag)
        ]
        changes = self._cache.changes(scope)
        if vocabulary:
            # A row is new when its occurrences over all labels are what this message added
            # (a stored row has some); the counts after the add also go to the cache.
            columns = layout.count_names()
            after = dialect.increment_returning(
                self._conn, token_count, rows, columns, exclude=others, replace=["seen_day"]
            )
            new = 0
            for _scope_id, token_id, *values in after:
                new += sum(values[0::2]) == bag[token_id]
                changes.tokens[token_id] = token_stats(values, layout.classes) or None
        else:
            ids = [row["token_id"] for row in rows]
            found = dialect.counts_by_ids(self._conn, token_count, ["seen_day"], scope_id, ids)
            new = len(ids) - len(found)
            dialect.increment(self._conn, token_count, rows, exclude=others, replace=["seen_day"])
            changes.evict(ids)
        self._bump_totals(scope_id, label, bag)
        size = self._scopes.grow_vocabulary(scope_id, new)
        if size is not None:
            self._grown[scope] = size
        return size

    def defer(self, scope: str, label: str, bag: Mapping[int, int]) -> int | None:
        """``add`` of a new message's tokens to ``label`` (``vocabulary`` true), its rows,
        totals and vocabulary written by ``flush``: the tokens' counts after it go to the
        transaction's changes now, so the next message of a batch is judged on them, as if
        written. The number of tokens it makes new; None, and nothing done, when the
        transaction does not hold every token's counts (the caller adds at once).

        Exact because the transaction changed the model before (``held`` gives its own
        changes only then): that locked the model's row, and every writer of its counts
        locks it first, so until the commit only this transaction moves them."""
        held = self._cache.held(scope)
        if held is None or held.own is None:
            return None
        ids = sorted(bag)
        known = held.tokens(ids)
        if any(per is UNSEEN for per in known.values()):
            return None
        classes = self._layout.classes
        own = 2 * classes.index(label)
        pending = self._pending.get(scope)
        if pending is None:
            scope_id = self._scopes.changing(scope, tracked=True)
            pending = self._pending[scope] = _Pending(scope_id)
        width = 2 * len(classes)
        changes, rows, after = held.own.tokens, pending.rows, pending.after
        new = 0
        for tid in ids:
            values = after.get(tid) or _values(known[tid], classes)
            if not any(values[0::2]):
                new += 1  # as ``add`` counts a row whose occurrences are all this message's
            occurrences = bag[tid]
            values[own] += occurrences
            values[own + 1] += 1
            after[tid] = values
            changes[tid] = token_stats(values, classes)
            step = rows.get(tid)
            if step is None:
                step = rows[tid] = [0] * width
            step[own] += occurrences
            step[own + 1] += 1
        pending.totals[label].update(added_totals(bag))
        pending.new += new
        return new

    def pending_among(self, wanted: Mapping[str, Iterable[int] | None]) -> bool:
        """Whether adds not yet written (``defer``) touch any of ``wanted``: scope -> token
        ids, or None for any of the scope's rows and its totals."""
        for scope, ids in wanted.items():
            pending = self._pending.get(scope)
            if pending is not None and (ids is None or any(t in pending.rows for t in ids)):
                return True
        return False

    def flush(self) -> set[str]:
        """Write every model's pending adds (``defer``): its token rows in one statement,
        its label totals in one and its vocabulary in one. The models whose rows did not
        come back as ``defer`` foresaw them (none, while the model's row lock holds): their
        cache changes are set to what came back, and the caller must not trust the totals
        it moved for them."""
        drifted: set[str] = set()
        pending_models, self._pending = self._pending, {}
        layout = self._layout
        names = layout.count_names()
        day = today()
        for scope, pending in pending_models.items():
            rows = [
                {
                    "scope_id": pending.scope_id,
                    "token_id": tid,
                    **dict(zip(names, step, strict=True)),
                    "seen_day": day,
                }
                for tid, step in sorted(pending.rows.items())
            ]
            back = dialect.increment_returning(
                self._conn, layout.table, rows, names, replace=["seen_day"]
            )
            changes = self._cache.changes(scope)
            new = 0
            for _scope_id, token_id, *values in back:
                step = pending.rows[token_id]
                new += sum(values[0::2]) == sum(step[0::2])
                if values != pending.after[token_id]:
                    drifted.add(scope)
                    changes.tokens[token_id] = token_stats(values, layout.classes) or None
            totals = [
                {"scope_id": pending.scope_id, "label": label, **added}
                for label, added in sorted(pending.totals.items())
            ]
            dialect.increment(self._conn, label_total, totals)
            if new != pending.new:
                drifted.add(scope)
            size = self._scopes.grow_vocabulary(pending.scope_id, new)
            if size is not None:
                self._grown[scope] = size
        return drifted

    def subtract(self, scope: str, label: str, bag: Mapping[int, int], vocabulary: bool) -> None:
        """Remove one message's tokens from ``label``, as far as the rows still hold them.

        Expiry may have deleted rows of the message (or deleted and re-created them), so each
        row gives up at most what it holds, and the totals drop by exactly what the rows gave
        up: ``label_total`` stays the sum over the rows, and nothing goes below zero. The
        rows are read first (the scope row, locked by ``changing``, keeps them still).
        With ``vocabulary`` true (a forget) rows left without occurrences in any label are
        deleted, with whatever counts they still hold, and the vocabulary shrinks by as many;
        with it false (a relabel, the tokens move to another label) no row is deleted.
        Seen days stay.
        """
        scope_id = self._scopes.changing(scope, create=False, tracked=True)
        if scope_id is None:
            return  # nothing was ever learned in this scope
        self._cache.changes(scope).evict(bag)
        layout = self._layout
        token_count = layout.table
        labels = layout.columns()
        own = layout.classes.index(layout.of(label).label)
        columns = layout.count_names()
        found = dialect.counts_by_ids(self._conn, token_count, columns, scope_id, sorted(bag))
        lost = {lc.label: [0, 0] for lc in labels}  # occurrences, token messages
        taken: list[dict[str, int]] = []
        gone: list[int] = []
        for token_id, *values in found:
            occurrences = min(values[2 * own], bag[token_id])
            messages = min(values[2 * own + 1], 1)
            if vocabulary and sum(values[0::2]) == occurrences:
                gone.append(token_id)
                for k, lc in enumerate(labels):
                    lost[lc.label][0] += values[2 * k]
                    lost[lc.label][1] += values[2 * k + 1]
            elif occurrences or messages:
                lost[label][0] += occurrences
                lost[label][1] += messages
                taken.append(
                    {
                        "scope_id": scope_id,
                        "token_id": token_id,
                        labels[own].messages.name: messages,
                        labels[own].occurrences.name: occurrences,
                    }
                )
        dialect.decrement(self._conn, token_count, taken)
        if gone:
            self._conn.execute(
                delete(token_count).where(
                    token_count.c.scope_id == scope_id,
                    dialect.id_filter(self._conn, token_count.c.token_id, gone),
                )
            )
            self._scopes.shrink_vocabulary(scope_id, len(gone))
        totals = [
            {
                "scope_id": scope_id,
                "label": name,
                "messages": int(name == label),
                "occurrences": occurrences,
                "token_messages": messages,
            }
            for name, (occurrences, messages) in lost.items()
            if name == label or occurrences or messages
        ]
        dialect.decrement(self._conn, label_total, totals)

    def _bump_totals(self, scope_id: int, label: str, bag: Mapping[int, int]) -> None:
        """One message more in ``label``'s totals."""
        row = {"scope_id": scope_id, "label": label, **added_totals(bag)}
        dialect.increment(self._conn, label_total, [row])


def _values(per: Counts | None, classes: tuple[str, ...]) -> list[int]:
    """A token's counts (as held: label -> TokenStats, None when absent) as its row's
    ``count_names`` values, the inverse of ``token_stats``."""
    values = [0] * (2 * len(classes))
    if per:
        for k, label in enumerate(classes):
            stats = per.get(label)
            if stats is not None:
                values[2 * k] = stats.occurrences
                values[2 * k + 1] = stats.messages
    return values


def added_totals(bag: Mapping[int, int]) -> dict[str, int]:
    """What ``add`` of one message's ``bag`` adds to its label's row of ``label_total``
    (``Transaction`` moves the totals it keeps by the same)."""
    return {"messages": 1, "occurrences": sum(bag.values()), "token_messages": len(bag)}
