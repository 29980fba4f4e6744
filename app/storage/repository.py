"""Every query the service needs, bound to one open transaction, and what they return.

``Transaction`` never commits: ``Store.transaction`` (``store.py``) opens it, the service owns
it, and it commits when the ``with`` block ends without an error. The dialect-specific parts
(upsert, "greatest", array parameters) are in ``dialect.py``.

Callers name scopes; rows carry the scope's integer id. A read of a scope never written
finds nothing and creates nothing; the first write creates the scope's row.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import groupby
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection, delete, select, text, update
from sqlalchemy.exc import DBAPIError

from app.storage import accounts, class_columns, dialect
from app.storage.accounts import DroppedScope, ScopeSummary
from app.storage.activity import Activity
from app.storage.calibration import HamScores, Pending
from app.storage.class_columns import ClassHoldings
from app.storage.codec import decode_bag, encode_bag
from app.storage.console_access import ConsoleAccess
from app.storage.count_cache import UNSEEN, CacheView, CountCache, Update
from app.storage.count_writes import CountWrites, added_totals
from app.storage.expiry import Expiry
from app.storage.rows import TokenStats, token_stats
from app.storage.scopes import ScopeIds
from app.storage.tables import (
    VERSION_TABLE,
    CountLayout,
    count_layout,
    learned_message,
    model_scope,
)
from app.storage.transfer import ModelRows


@dataclass(frozen=True, slots=True)
class LabelStats:
    """Per-label totals: learned messages, token occurrences, and Σ distinct tokens/message."""

    messages: int = 0
    occurrences: int = 0
    token_messages: int = 0


@dataclass(frozen=True, slots=True)
class ModelTotals:
    """Totals of one scope: per-label statistics and the vocabulary size |V|."""

    labels: dict[str, LabelStats]
    vocabulary: int

    def of(self, label: str) -> LabelStats:
        """The totals of ``label``: zeros for a label that has learned nothing."""
        return self.labels.get(label, _NOTHING)


_NOTHING = LabelStats()


@dataclass(frozen=True, slots=True)
class LearnedRecord:
    """A learned message: its label and the exact token ids and counts that were added."""

    digest: str
    label: str
    bag: dict[int, int]
    ham_bin: int | None = None


class Transaction:
    """Repository functions bound to one open transaction (never commits by itself).

    Scope ids are looked up once per transaction and kept (see ``ScopeIds``). With a
    ``cache``, the counts and ham scores of a model whose totals this transaction has read
    come from it while the model's scope row is unchanged, until this transaction changes
    that model; what a learn changes goes into it after the commit (see ``count_cache.py``:
    ``seal`` before the commit, ``install`` after it).
    """

    def __init__(
        self, conn: Connection, cache: CountCache | None = None, layout: CountLayout | None = None
    ) -> None:
        self._conn = conn
        self._layout = count_layout() if layout is None else layout
        self._scopes = ScopeIds(conn)
        self._grown: dict[str, int] = {}
        # Scopes whose totals this transaction read and found no row of.
        self._absent: set[str] = set()
        self._cache = CacheView(cache, self._scopes)
        self._writes = CountWrites(conn, self._scopes, self._cache, self._grown, self._layout)
        # Learned-message rows read ahead for a batch (``read_records_ahead``), locked: scope
        # -> digest -> its row, None for none. A digest this transaction writes leaves it.
        self._records: dict[str, dict[str, Sequence[Any] | None]] = {}
        # The totals of models this transaction has changed, as last read: only its own
        # writes can change them now (the change locked the scope row); ``add`` moves them,
        # every other write drops them.
        self._totals: dict[str, ModelTotals] = {}
        # Ham scores added and not yet written (``HamScores``; written before the commit).
        self._pending_scores: Pending = {}

    def grown(self) -> dict[str, int]:
        """Scope -> its vocabulary size after this transaction's last add that grew it (the
        value the add's own update returned, or for an add still pending what its update
        will return: asking costs no query)."""
        return dict(self._grown)

    def expiry(self) -> Expiry:
        """Expiry of old and rare tokens, in this transaction (see ``expiry.py``)."""
        self._written_elsewhere()
        return Expiry(self._conn, self._scopes, self._layout)

    def refresh_statistics(self) -> None:
        """The query planner's statistics of the count tables, gathered now (see
        ``dialect.refresh_statistics``)."""
        dialect.refresh_statistics(self._conn, [self._layout.table, learned_message])

    def activity(self) -> Activity:
        """The console's history and per-minute counts, in this transaction."""
        return Activity(self._conn)

    def console_access(self) -> ConsoleAccess:
        """The console's signing secret, revoked sessions and failed logins, in this
        transaction."""
        return ConsoleAccess(self._conn)

    def ham_scores(self) -> HamScores:
        """The models' ham score histograms, in this transaction (see ``calibration.py``)."""
        return HamScores(self._conn, self._scopes, self._cache, self._pending_scores)

    def model_rows(self) -> ModelRows:
        """Whole models read and written row by row (export, import), in this transaction."""
        self._written_elsewhere()
        return ModelRows(self._conn, self._scopes, self._layout)

    def schema_revision(self) -> str | None:
        """The revision row (``VERSION_TABLE``), or None when the table does not exist."""
        try:
            with self._conn.begin_nested():
                row = self._conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).first()
        except DBAPIError:
            return None
        return None if row is None else str(row[0])

    def touch(self) -> None:
        """Write without changing anything (the schema revision, to itself): whether writes
        work at all."""
        self._conn.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = version_num"))

    def counts(self, scope: str, token_ids: list[int]) -> dict[int, Mapping[str, TokenStats]]:
        """Per-label counts for the given token ids, in token id order (ids never learned,
        and labels a token has no count in, are absent)."""
        return self.counts_of((scope,), token_ids)[scope]

    def counts_of(
        self, scopes: Sequence[str], token_ids: list[int]
    ) -> dict[str, dict[int, Mapping[str, TokenStats]]]:
        """``counts`` of each of ``scopes`` (a user's model and the site-wide one): each
        scope's map as ``counts`` gives it, in token id order. The ids a scope's cache
        does not hold are read for all the scopes in one query, and each scope's cache is
        filled with its own."""
        ordered = sorted(token_ids)
        found: dict[str, dict[int, Any]] = {}
        missing: dict[str, list[int]] = {}
        for scope in scopes:
            held = self._cache.held(scope)
            if held is None:
                found[scope] = {}
                missing[scope] = ordered
                continue
            found[scope] = held.tokens(ordered)
            unseen = [tid for tid, per in found[scope].items() if per is UNSEEN]
            if unseen:
                missing[scope] = unseen
        read = self._read_counts(missing)
        for scope, ids in missing.items():
            fresh = {tid: read[scope].get(tid) for tid in ids}
            found[scope].update(fresh)
            self._cache.fill(scope, fresh)
        return {
            scope: {tid: per for tid, per in per_token.items() if per is not None}
            for scope, per_token in found.items()
        }

    def read_ahead(self, scopes: Sequence[str], token_ids: Iterable[int]) -> None:
        """Read into each scope's cache the counts of ``token_ids`` it lacks, for all the
        scopes in one query, and its ham score histogram when the cache lacks it, so that
        this transaction's later reads of them find them there (and each ham score a batch
        adds is checked against the histogram's bound without a query: ``HamScores.add``).
        Nothing for a scope no cache can answer for here (none kept, or a model this
        transaction cannot read through it): its counts would only be read again."""
        held = {scope: view for scope in scopes if (view := self._cache.held(scope)) is not None}
        if held:
            self.counts_of(list(held), list(token_ids))
        scores = self.ham_scores()
        for scope, view in held.items():
            if view.own is None and view.histogram() is None:
                scores.histogram(scope)

    def _read_counts(
        self, wanted: Mapping[str, list[int]]
    ) -> dict[str, dict[int, Mapping[str, TokenStats]]]:
        """The counts of each scope's ids in ``wanted`` from the database, in one query."""
        if self._writes.pending_among(wanted):
            self._flush()  # never, while the cache answers for what is pending
        result: dict[str, dict[int, Mapping[str, TokenStats]]] = {scope: {} for scope in wanted}
        found = {scope: self._scope_id(scope) for scope, ids in wanted.items() if ids}
        names = {scope_id: scope for scope, scope_id in found.items() if scope_id is not None}
        if not names:
            return result
        # In token id order: scores sum floating-point terms in this order, so it must not
        # depend on where rows happen to lie (PostgreSQL returns heap order otherwise, and a
        # migrated database scored a few ulps away from a fresh one with the same counts).
        layout = self._layout
        columns = layout.count_names()
        if len(names) == 1:
            ((scope_id, scope),) = names.items()
            rows = dialect.counts_by_ids(self._conn, layout.table, columns, scope_id, wanted[scope])
            result[scope] = _per_token(rows, layout.classes)
            return result
        asked = [(scope_id, wanted[scope]) for scope_id, scope in names.items()]
        rows = dialect.counts_by_scopes(self._conn, layout.table, columns, asked)
        for scope_id, scope_rows in groupby(rows, key=itemgetter(0)):
            result[names[scope_id]] = _per_token((row[1:] for row in scope_rows), layout.classes)
        return result

    def _scope_id(self, scope: str) -> int | None:
        """The id of ``scope``, asking no query for one whose totals this transaction found
        absent (and has not created since)."""
        known = self._scopes.known(scope)
        if known is None and scope in self._absent:
            return None
        return known if known is not None else self._scopes.find(scope)

    def seal(self) -> list[Update]:
        """Before the commit: the adds and ham scores still pending written, and what this
        transaction's changes will do to the cache."""
        self._flush()
        self.ham_scores().write_pending()
        return self._cache.seal(self._key)

    def install(self, updates: list[Update]) -> None:
        """After the commit: make the changes ``seal`` found."""
        self._cache.install(updates)

    def _key(self, scope: str) -> tuple[Any, ...] | None:
        """The scope row of ``scope`` with its label totals (``_TOTALS_OF``), as a cache's
        key; None for a scope never written."""
        return self._totals_rows((scope,))[scope]

    def _totals_rows(self, scopes: Sequence[str]) -> dict[str, tuple[Any, ...] | None]:
        """Each scope's row with its label totals, one row a label (``_TOTALS_OF``, the
        name taken off), in one query; None for a scope never written."""
        if not scopes:
            return {}
        if self._writes.pending_among({scope: None for scope in scopes}):
            self._flush()
        marks = ", ".join("?" * len(scopes))
        rows: dict[str, list[Any]] = {scope: [] for scope in scopes}
        for name, *row in dialect.fetch(self._conn, _TOTALS_OF.format(marks=marks), scopes):
            rows[name].append(tuple(row))
        return {scope: tuple(found) or None for scope, found in rows.items()}

    def all_message_counts(self, scope: str) -> Iterator[dict[str, int]]:
        """Per-label message counts of every token in the vocabulary (for the Bernoulli model),
        in token id order; labels without messages are absent."""
        self._flush()
        scope_id = self._scopes.find(scope)
        if scope_id is None:
            return
        labels = self._layout.columns()
        token_count = self._layout.table
        query = (
            select(*(lc.messages for lc in labels))
            .where(token_count.c.scope_id == scope_id)
            .order_by(token_count.c.token_id)
        )
        for values in self._conn.execute(query):
            per = {lc.label: n for lc, n in zip(labels, values, strict=True) if n > 0}
            if per:
                yield per

    def totals(self, scope: str) -> ModelTotals:
        """Per-label totals and vocabulary size of a scope (zeros for a new scope), in one
        query, which also checks what the cache holds for the scope."""
        return self.totals_of((scope,))[scope]

    def totals_of(self, scopes: Sequence[str]) -> dict[str, ModelTotals]:
        """``totals`` of each of ``scopes`` (a user's model and the site-wide one) in one
        query, which checks each scope's cache on its own rows."""
        # why: a batch read them before every message; kept, a skipped message asks nothing
        # (docs/benchmarks.md, "Measurements behind the design").
        kept = self._totals
        rows = self._totals_rows([scope for scope in scopes if scope not in kept])
        found: dict[str, ModelTotals] = {}
        for scope in scopes:
            totals = kept.get(scope)
            if totals is None:
                totals = self._checked_totals(scope, rows[scope])
                if self._scopes.changed(scope):
                    kept[scope] = totals
            found[scope] = totals
        return found

    def _checked_totals(self, scope: str, rows: tuple[Any, ...] | None) -> ModelTotals:
        """The totals in ``rows`` (a scope's from ``_totals_rows``; None: no such scope),
        the cache of ``scope`` checked against them."""
        if rows is None:
            self._absent.add(scope)
            return ModelTotals({}, 0)
        scope_id, _created, _generation, vocabulary = rows[0][:4]
        self._scopes.remember(scope, scope_id)
        labels = {
            label: LabelStats(messages, occurrences, token_messages)
            for *_, label, messages, occurrences, token_messages in rows
            if label is not None
        }
        self._cache.check(scope, rows)
        return ModelTotals(labels, int(vocabulary))

    def lock_scope(self, scope: str) -> None:
        """Lock model ``scope`` until this transaction ends, without changing it (see
        ``ScopeIds.lock``)."""
        self._scopes.lock(scope)

    def learned(self, scope: str, digest: str, *others: str) -> LearnedRecord | None:
        """The learned-message record of ``digest``, else of the first of ``others`` that
        has one (one query, or none when read ahead), locked for update where the database
        supports it."""
        wanted = [digest, *others]
        ahead = self._records.get(scope, {})
        if all(d in ahead for d in wanted):
            rows = {d: row for d in wanted if (row := ahead[d]) is not None}
        else:
            rows = self._record_rows(scope, wanted)
        row = next((rows[d] for d in wanted if d in rows), None)
        if row is None:
            return None
        found, label, tokens, ham_bin = row
        return LearnedRecord(found, label, decode_bag(bytes(tokens)), ham_bin)

    def read_records_ahead(self, scope: str, digests: Iterable[str]) -> None:
        """Read (and lock) the learned-message records of ``digests`` in ``scope`` at once,
        so that ``learned`` asks nothing more for them: a batch's records in one query,
        where each message asked its own (a statement per message; docs/benchmarks.md).
        A digest this transaction then claims, relabels or unclaims is asked again.

        The scope's row is locked first (``lock_scope``; callers go a user's model before
        the site-wide one, as a learn does): every writer of a record changes its model
        before it commits, so none can commit a record of these digests until this
        transaction ends, and a digest read here as absent stays absent to this transaction
        but for its own writes.
        Nothing is read ahead for a model not yet created."""
        self._scopes.lock(scope)
        if self._scopes.find(scope) is None:
            return
        wanted = list(dict.fromkeys(digests))
        ahead = self._records.setdefault(scope, {})
        for start in range(0, len(wanted), _RECORDS_AT_ONCE):
            part = wanted[start : start + _RECORDS_AT_ONCE]
            rows = self._record_rows(scope, part)
            ahead.update({digest: rows.get(digest) for digest in part})

    def _record_rows(self, scope: str, digests: list[str]) -> dict[str, Sequence[Any]]:
        """The rows of ``digests``' records in ``scope`` by digest, locked for update."""
        scope_id = self._scopes.find(scope)
        if scope_id is None or not digests:
            return {}
        sql = _LEARNED.format(marks=", ".join("?" * len(digests)))
        return {row[0]: row for row in dialect.fetch(self._conn, sql, [scope_id, *digests], True)}

    def _written_elsewhere(self) -> None:
        """Records and totals are about to be written in ways not followed: nothing kept of
        them holds, and what is pending is written first."""
        self._flush()
        self.ham_scores().write_pending()
        self._records.clear()
        self._totals.clear()

    def _written(self, scope: str, digest: str) -> None:
        """``digest``'s record in ``scope`` changes here: not what was read ahead."""
        self._records.get(scope, {}).pop(digest, None)

    def claim(
        self,
        scope: str,
        digest: str,
        label: str,
        bag: Mapping[int, int],
        ham_bin: int | None = None,
    ) -> bool:
        """Record a message as learned (with the ``ham_score`` bin its score went to, if any);
        False (and no change) if it already was."""
        self._written(scope, digest)
        values = {
            "scope_id": self._scopes.get_or_create(scope),
            "digest": digest,
            "label": label,
            "token_count": len(bag),
            "tokens": encode_bag(bag),
            "learned_at": datetime.now(UTC),
            "ham_bin": ham_bin,
        }
        return dialect.insert_if_absent(self._conn, learned_message, values)

    def relabel(self, scope: str, digest: str, label: str) -> None:
        """Change the label of a learned-message record (which no longer holds a ham score)."""
        self._written(scope, digest)
        scope_id = self._scopes.find(scope)
        if scope_id is not None:
            self._conn.execute(
                update(learned_message)
                .where(learned_message.c.scope_id == scope_id, learned_message.c.digest == digest)
                .values(label=label, learned_at=datetime.now(UTC), ham_bin=None)
            )

    def unclaim(self, scope: str, digest: str) -> None:
        """Delete a learned-message record."""
        self._written(scope, digest)
        scope_id = self._scopes.find(scope)
        if scope_id is not None:
            self._conn.execute(
                delete(learned_message).where(
                    learned_message.c.scope_id == scope_id, learned_message.c.digest == digest
                )
            )

    def add(self, scope: str, label: str, bag: Mapping[int, int], vocabulary: bool) -> None:
        """Add one message's tokens to ``label`` (see ``CountWrites.add``). A new message
        (``vocabulary``) for a model whose totals this transaction keeps, all of whose
        tokens it holds, is written with the others at the next ``_flush`` (``defer``): the
        second and later messages a batch learns for a model."""
        kept = self._totals.pop(scope, None)
        if vocabulary and kept is None and self._scopes.changed(scope) and self._cache.held(scope):
            # Read once a batch has changed the model, when nothing judged since read them
            # (under "everything", spam is learned unjudged): the adds after can wait.
            kept = self.totals(scope)
            self._totals.pop(scope, None)
        if vocabulary and kept is not None and label in kept.labels:
            new = self._writes.defer(scope, label, bag)
            if new is not None:
                size = None
                if new:
                    size = self._grown[scope] = kept.vocabulary + new
                self._totals[scope] = _added(kept, label, bag, size)
                return
        if scope in self._flush():  # an add's upsert returns its rows' counts: pending too
            kept = None
        size = self._writes.add(scope, label, bag, vocabulary)
        if kept is not None and label in kept.labels:
            # why: read again after every learn, the totals were a fifth of a batch's
            # statements on PostgreSQL (docs/benchmarks.md).
            self._totals[scope] = _added(kept, label, bag, size)

    def subtract(self, scope: str, label: str, bag: Mapping[int, int], vocabulary: bool) -> None:
        """Remove one message's tokens from ``label`` (see ``CountWrites.subtract``)."""
        self._flush()
        self._totals.pop(scope, None)
        self._writes.subtract(scope, label, bag, vocabulary)

    def _flush(self) -> set[str]:
        """Write the adds ``add`` deferred (``CountWrites.flush``): before the commit, and
        before anything reads or writes counts in another way. The models whose totals as
        kept can no longer be trusted."""
        drifted = self._writes.flush()
        for scope in drifted:
            self._totals.pop(scope, None)
        return drifted

    def stored_classes(self) -> dict[str, int]:
        """Every class with learned messages in some model, with its messages over all."""
        self._flush()
        return class_columns.stored_classes(self._conn)

    def class_holdings(self, label: str) -> ClassHoldings:
        """What the database holds of class ``label``, over every model."""
        self._flush()
        return class_columns.holdings(self._conn, label)

    def records_of(self, label: str, limit: int) -> list[tuple[str, LearnedRecord]]:
        """Up to ``limit`` learned-message records of class ``label``, over every model,
        each with its model's name (by model, then digest)."""
        self._flush()
        query = (
            select(
                model_scope.c.name,
                learned_message.c.digest,
                learned_message.c.tokens,
                learned_message.c.ham_bin,
            )
            .join(model_scope, model_scope.c.id == learned_message.c.scope_id)
            .where(learned_message.c.label == label)
            .order_by(learned_message.c.scope_id, learned_message.c.digest)
            .limit(limit)
        )
        return [
            (str(scope), LearnedRecord(digest, label, decode_bag(bytes(tokens)), ham_bin))
            for scope, digest, tokens, ham_bin in self._conn.execute(query)
        ]

    def rename_class(self, old: str, new: str) -> None:
        """Rename class ``old`` to ``new`` in every model (see ``class_columns.rename``)."""
        self._written_elsewhere()
        class_columns.rename(self._conn, old, new)

    def drop_class(self, label: str) -> int:
        """Drop what is left of class ``label`` (see ``class_columns.drop``); the token rows
        that went with it."""
        self._written_elsewhere()
        return class_columns.drop(self._conn, label)

    def scopes_under(self, prefix: str) -> list[ScopeSummary]:
        """Every scope named ``prefix...``, with learned messages per label and vocabulary,
        in one query (see ``accounts.scopes_under``)."""
        self._flush()
        return accounts.scopes_under(self._conn, prefix)

    def drop_scope(self, scope: str) -> DroppedScope | None:
        """Delete scope ``scope`` and every row of it; None when there is no such scope."""
        self._written_elsewhere()
        scope_id = self._scopes.find(scope)
        if scope_id is None:
            return None
        return accounts.drop_scope(self._conn, scope_id)


def _added(
    totals: ModelTotals, label: str, bag: Mapping[int, int], vocabulary: int | None
) -> ModelTotals:
    """``totals`` after ``CountWrites.add`` of ``bag`` to ``label``: what its statements add
    to the label's row of ``label_total`` (integers, so exactly), and the vocabulary size
    its update returned (None: unchanged)."""
    before, added = totals.of(label), added_totals(bag)
    after = LabelStats(
        before.messages + added["messages"],
        before.occurrences + added["occurrences"],
        before.token_messages + added["token_messages"],
    )
    size = totals.vocabulary if vocabulary is None else vocabulary
    return ModelTotals({**totals.labels, label: after}, size)


def _per_token(
    rows: Iterable[Sequence[Any]], classes: tuple[str, ...]
) -> dict[int, Mapping[str, TokenStats]]:
    """Token id -> per-label counts, from ``(token_id, *count columns)`` rows in token id
    order (a token with no count in any class is left out)."""
    result: dict[int, Mapping[str, TokenStats]] = {}
    for token_id, *values in rows:
        per = token_stats(values, classes)
        if per:
            result[token_id] = per
    return result


# A scope's row and its label totals, ordered so that the same state reads as the same rows:
# their tuple is the key a cache checks (``count_cache.py``).
# Scopes' rows with their label totals, each row led by its scope's name: a scope's row, then
# one a label (a scope with no label total yet has one row, its label columns NULL).
_TOTALS_OF = (
    "SELECT s.name, s.id, s.created_at, s.generation, s.vocabulary, t.label, t.messages, "
    "t.occurrences, t.token_messages FROM model_scope s "
    "LEFT OUTER JOIN label_total t ON t.scope_id = s.id WHERE s.name IN ({marks}) "
    "ORDER BY s.name, t.label"
)
# The learned-message record of a digest (or of the first of several that has one): asked
# before every learn and forget, through the driver (``dialect.fetch``), or for a batch's
# messages at once, at most this many digests a query (``read_records_ahead``).
_RECORDS_AT_ONCE = 250
_LEARNED = (
    "SELECT digest, label, tokens, ham_bin FROM learned_message "
    "WHERE scope_id = ? AND digest IN ({marks})"
)
