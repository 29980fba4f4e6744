"""One message's tokens added to a label and taken out again: the token rows, the label
totals and the vocabulary, exact whatever expiry has removed since. ``Transaction.add`` and
``subtract`` (``repository.py``) are these, in the transaction's connection."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import Connection, delete

from app.storage import dialect
from app.storage.count_cache import CacheView
from app.storage.rows import today, token_stats
from app.storage.scopes import ScopeIds
from app.storage.tables import CountLayout, label_total


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


def added_totals(bag: Mapping[int, int]) -> dict[str, int]:
    """What ``add`` of one message's ``bag`` adds to its label's row of ``label_total``
    (``Transaction`` moves the totals it keeps by the same)."""
    return {"messages": 1, "occurrences": sum(bag.values()), "token_messages": len(bag)}
