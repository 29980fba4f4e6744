"""Expiry: the rows of a scope's vocabulary that go when they are old, or the scope too large.

Two rules, applied in this order to one scope within one transaction:

- by age: every row not learned since ``today - max_age_days`` (its ``seen_day`` older);
- by size: while more than ``max_tokens`` rows remain, the least useful ones: the fewest
  occurrences over all labels first (hapaxes, then tokens seen twice, ...), the oldest first
  within a count, then by token id, so the order is total (SpamAssassin and bogofilter
  expire hapaxes and old tokens first in the same way).

Both are set-based: the size rule finds its cut as one row (``ORDER BY .. LIMIT 1 OFFSET
n``) and deletes every row at or below it in that order with one DELETE. Before each DELETE
one SELECT sums the counts of the rows it will take, and ``label_total`` loses exactly those
sums, so the totals stay the sums over the rows; ``label_total.messages`` stays (the messages
were learned). The scope row is locked first, so on PostgreSQL no writer of the scope (every
writer locks it first, see ``ScopeIds.changing``) changes a row between the sum and the delete.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, delete, func, select, true, tuple_

from app.storage import dialect
from app.storage.scopes import ScopeIds
from app.storage.tables import CountLayout, label_total, model_scope


@dataclass(frozen=True, slots=True)
class ExpiryReport:
    """What expiry took (or, in a dry run, would take) from one scope: rows by each rule and
    the vocabulary before."""

    scope: str
    vocabulary: int
    by_age: int = 0
    by_size: int = 0

    @property
    def after(self) -> int:
        """The vocabulary once the rows are gone."""
        return self.vocabulary - self.by_age - self.by_size


class Expiry:
    """Expiry queries bound to one open transaction (never commits by itself)."""

    def __init__(self, conn: Connection, scopes: ScopeIds, layout: CountLayout) -> None:
        self._conn = conn
        self._scopes = scopes
        self._layout = layout

    def scope_names(self) -> list[str]:
        """The name of every scope in the database, sorted."""
        query = select(model_scope.c.name).order_by(model_scope.c.name)
        return [str(name) for name in self._conn.execute(query).scalars()]

    def expire(
        self, scope: str, today: int, max_age_days: int, max_tokens: int, dry_run: bool
    ) -> ExpiryReport:
        """Delete the rows of ``scope`` the two rules take (0 turns a rule off); with
        ``dry_run`` only count them. ``today`` is in days since 1970-01-01, as seen days are."""
        scope_id = self._scopes.find(scope)
        if scope_id is None:
            return ExpiryReport(scope, 0)
        query = select(model_scope.c.vocabulary).where(model_scope.c.id == scope_id)
        if not dry_run:
            query = query.with_for_update()  # writers of the scope wait until this commits
        vocabulary = int(self._conn.execute(query).scalar_one())
        token_count = self._layout.table
        in_scope = token_count.c.scope_id == scope_id
        young: ColumnElement[bool] = true()
        by_age = 0
        if max_age_days > 0:
            cutoff = today - max_age_days
            young = token_count.c.seen_day >= cutoff
            old = and_(in_scope, token_count.c.seen_day < cutoff)
            by_age = self._count(old) if dry_run else self._delete(scope, scope_id, old)
        excess = vocabulary - by_age - max_tokens if max_tokens > 0 else 0
        if excess <= 0:
            return ExpiryReport(scope, vocabulary, by_age)
        order = (_total_occurrences(self._layout), token_count.c.seen_day, token_count.c.token_id)
        cut = self._conn.execute(
            select(*order).where(in_scope, young).order_by(*order).offset(excess - 1).limit(1)
        ).first()
        if cut is None:  # the stored vocabulary counted rows that are not there
            return ExpiryReport(scope, vocabulary, by_age)
        rare = and_(in_scope, young, tuple_(*order) <= tuple_(*cut))
        by_size = self._count(rare) if dry_run else self._delete(scope, scope_id, rare)
        return ExpiryReport(scope, vocabulary, by_age, by_size)

    def _count(self, where: ColumnElement[bool]) -> int:
        query = select(func.count()).select_from(self._layout.table).where(where)
        return int(self._conn.execute(query).scalar_one())

    def _delete(self, scope: str, scope_id: int, where: ColumnElement[bool]) -> int:
        """Delete the rows ``where`` picks; their counts leave the label totals and the rows
        the vocabulary. How many rows went."""
        labels = self._layout.columns()
        sums = self._conn.execute(
            select(
                *(
                    func.coalesce(func.sum(column), 0)
                    for lc in labels
                    for column in (lc.occurrences, lc.messages)
                )
            ).where(where)
        ).one()
        gone = int(self._conn.execute(delete(self._layout.table).where(where)).rowcount)
        if not gone:
            return 0
        self._scopes.changing(scope, create=False)  # bumps the generation: counts changed
        totals: list[dict[str, Any]] = [
            {
                "scope_id": scope_id,
                "label": lc.label,
                "occurrences": int(sums[2 * k]),
                "token_messages": int(sums[2 * k + 1]),
            }
            for k, lc in enumerate(labels)
            if sums[2 * k] or sums[2 * k + 1]
        ]
        dialect.decrement(self._conn, label_total, totals)
        self._scopes.shrink_vocabulary(scope_id, gone)
        return gone


def _total_occurrences(layout: CountLayout) -> ColumnElement[int]:
    """A row's occurrences over every label."""
    columns = [lc.occurrences for lc in layout.columns()]
    total: ColumnElement[int] = columns[0]
    for column in columns[1:]:
        total = total + column
    return total
