"""The ham score histogram of each model (``ham_score``), from which the spam cut-off is
chosen (see ``app.domain.cutoff``)."""

from __future__ import annotations

from sqlalchemy import Connection, delete, select, update

from app.domain.cutoff import BINS, HALVE_AT
from app.storage import dialect
from app.storage.count_cache import CacheView
from app.storage.scopes import ScopeIds
from app.storage.tables import ham_score

# Scores added in a transaction and not yet written: scope id -> bin -> scores.
Pending = dict[int, dict[int, int]]


class HamScores:
    """Read and add to the ham score histograms, in one transaction, through the
    transaction's view of the cache (``count_cache.py``).

    ``add`` keeps its scores in ``pending`` (the transaction's, shared by every
    ``HamScores`` of it) and ``write_pending`` writes them all in one statement: before
    anything here reads, halves or takes from the table, and before the commit
    (``Transaction.seal``). A batch of learns adds a score for most of its ham; one
    statement each was a quarter of a batch's statements (docs/benchmarks.md)."""

    def __init__(
        self, conn: Connection, scopes: ScopeIds, cache: CacheView, pending: Pending
    ) -> None:
        self._conn = conn
        self._scopes = scopes
        self._cache = cache
        self._pending = pending

    def histogram(self, scope: str) -> list[int]:
        """``BINS`` counts for ``scope`` (all zero for a model that has scored no ham)."""
        histogram = self._held(scope)
        if histogram is not None:
            return list(histogram)
        counts = self._read(scope)
        self._cache.keep_histogram(scope, counts)
        return counts

    def _read(self, scope: str) -> list[int]:
        self.write_pending()
        counts = [0] * BINS
        scope_id = self._scopes.find(scope)
        if scope_id is None:
            return counts
        rows = self._conn.execute(
            select(ham_score.c.bin, ham_score.c.ham).where(ham_score.c.scope_id == scope_id)
        )
        for index, ham in rows:
            if 0 <= index < BINS:
                counts[index] = int(ham)
        return counts

    def add(self, scope: str, index: int) -> None:
        """One ham score more in bin ``index``; past ``HALVE_AT`` scores every bin of the
        scope is halved."""
        scope_id = self._scopes.changing(scope, tracked=True)
        bins = self._pending.setdefault(scope_id, {})
        bins[index] = bins.get(index, 0) + 1
        changes = self._cache.changes(scope)
        changes.histogram.append((index, 1))
        if self._total(scope, scope_id) >= HALVE_AT:
            self.write_pending()
            self._conn.execute(
                update(ham_score)
                .where(ham_score.c.scope_id == scope_id)
                .values(ham=ham_score.c.ham / 2)
            )
            changes.histogram_unknown = True
            self._drop_empty(scope_id)

    def write_pending(self) -> None:
        """Write the scores added and not yet written, in one statement."""
        if not self._pending:
            return
        rows = [
            {"scope_id": scope_id, "bin": index, "ham": scores}
            for scope_id, bins in sorted(self._pending.items())
            for index, scores in sorted(bins.items())
        ]
        self._pending.clear()
        dialect.increment(self._conn, ham_score, rows)

    def _total(self, scope: str, scope_id: int) -> int:
        """The scores ``scope``'s histogram holds now: summed from the cache's view when it
        knows the histogram (a ham learned in a batch, a query saved), else asked."""
        histogram = self._held(scope)
        if histogram is not None:
            return sum(histogram)
        self.write_pending()
        ((total,),) = dialect.fetch(self._conn, _TOTAL, [scope_id])
        return 0 if total is None else int(total)

    def _held(self, scope: str) -> tuple[int, ...] | None:
        """``scope``'s histogram as the transaction's view of the cache has it, if it does."""
        held = self._cache.held(scope)
        return None if held is None else held.histogram()

    def remove(self, scope: str, index: int) -> None:
        """Take one score out of bin ``index`` (a forgotten or relabelled ham message); a bin
        already at 0 (halved since) stays at 0."""
        scope_id = self._scopes.changing(scope, create=False, tracked=True)
        if scope_id is None:
            return
        self.write_pending()
        row = {"scope_id": scope_id, "bin": index, "ham": 1}
        dialect.decrement(self._conn, ham_score, [row])
        self._cache.changes(scope).histogram.append((index, -1))
        self._drop_empty(scope_id)

    def _drop_empty(self, scope_id: int) -> None:
        """Delete the scope's bins at 0: a bin row exists only while it holds a score."""
        self._conn.execute(
            delete(ham_score).where(ham_score.c.scope_id == scope_id, ham_score.c.ham == 0)
        )


# The scores a model's histogram holds, asked after a ham score added when the cache does not
# know the histogram (through the driver: ``dialect.fetch``).
_TOTAL = "SELECT SUM(ham) FROM ham_score WHERE scope_id = ?"
