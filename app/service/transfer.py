"""Moving learned models between databases (export, import) and copying a live SQLite file.

An export is one read transaction, a consistent snapshot, streamed a batch of rows at a
time, in the format of ``transfer_format`` (docs/export-format.md). An import is one write
transaction: every line is checked as it is read and a bad one anywhere rolls everything
back. Import modes per model (``new``, ``merge``, ``replace``) are as docs/operations.md
("Moving and backing up the learned data") describes; a merge whose sum would pass
``MAX_COUNT`` is refused. Each imported model's vocabulary is recounted and its generation
bumped, so processes that cache its counts reload them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from app.domain.users import user_of, user_scope, users_prefix
from app.errors import InvalidDataFile, TransferRefused
from app.service.scoping import models_for
from app.service.transfer_format import (
    MAX_COUNT,
    Counts,
    HamScore,
    Learned,
    Record,
    Scope,
    TextSink,
    Token,
    Total,
    Writer,
    read_records,
    scope_field,
    stored_bag,
)
from app.settings.schema import Settings
from app.storage.store import Store
from app.storage.transfer import BATCH, LearnedRow, ModelRows, TokenRow

ImportMode = Literal["new", "merge", "replace"]
_LEARNED_BATCH = 1_000  # learned records carry their bags (~3 KB each on real mail)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import wrote: per model (``site`` or ``user:<name>``) its vocabulary after
    the import, the records read, and the learned messages already held (forced merge)."""

    mode: ImportMode
    vocabulary: dict[str, int]
    records: Counts
    already_held: int


class Transfer:
    """Export, import and backup over one store."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self._settings = settings

    def export(self, out: TextSink, user: str | None = None, site_only: bool = False) -> Counts:
        """Write the site-wide model and every user's (``user``: only that user's model;
        ``site_only``: only the site-wide one) to ``out``; the record counts written."""
        base = self._settings.scope
        writer = Writer(out, classes=self._store.classes)
        writer.header()
        with self._store.transaction(write=False) as tx:
            rows = tx.model_rows()
            rows.snapshot()
            if user is not None:
                users: list[str | None] = [models_for(self._settings, user).user]
            else:
                found = (user_of(base, s) for s in rows.scopes_under(users_prefix(base)))
                users = [None, *([] if site_only else sorted(u for u in found if u))]
            for name in users:
                _export_model(rows, writer, self._scope(name), name)
        writer.end()
        return writer.counts

    def import_(
        self,
        lines: Iterable[str],
        mode: ImportMode = "new",
        user: str | None = None,
        force: bool = False,
    ) -> ImportResult:
        """Read an export file into the database (see the module docstring for ``mode``);
        with ``user``, the file's one model becomes that user's. All or nothing:
        InvalidDataFile (naming the line) or TransferRefused leaves the database unchanged."""
        target = None if user is None else models_for(self._settings, user).user
        if user is not None and target is None:
            raise TransferRefused("--user needs a user name")
        with self._store.transaction(write=True) as tx:
            importer = _Importer(tx.model_rows(), self._settings.scope, mode, target, force)
            try:
                for number, record in read_records(lines, self._store.classes):
                    importer.take(number, record)
            except UnicodeDecodeError as error:
                raise InvalidDataFile(f"the file is not UTF-8 text: {error.reason}") from None
            result = importer.finish()
        # The tables may have grown many times over: without statistics PostgreSQL would
        # read the new model's counts by whole-table scans until autovacuum (see upkeep).
        try:
            self._store.refresh_statistics()
        except Exception:  # the import is committed: it must not fail for this
            log.exception("gathering table statistics after the import failed")
        return result

    def backup(self, destination: Path, overwrite: bool = False) -> int:
        """Copy the live SQLite database to ``destination`` (size in bytes); TransferRefused
        on PostgreSQL (use pg_dump) or over an existing file unless ``overwrite``."""
        return self._store.backup(destination, overwrite)

    def _scope(self, user: str | None) -> str:
        base = self._settings.scope
        return base if user is None else user_scope(base, user)


def _export_model(rows: ModelRows, writer: Writer, scope: str, user: str | None) -> None:
    writer.scope(user)
    for label, messages, occurrences, token_messages in rows.totals(scope):
        writer.total(Total(label, messages, occurrences, token_messages))
    for index, count in rows.ham_scores(scope):
        writer.ham_score(HamScore(index, count))
    writer.tokens(rows.tokens(scope))
    batch: list[Learned] = []
    for row in rows.learned(scope):
        batch.append(
            Learned(row.digest, row.label, row.learned_at, row.bag, row.token_count, row.ham_bin)
        )
        if len(batch) >= _LEARNED_BATCH:
            _export_learned(rows, writer, scope, batch)
    _export_learned(rows, writer, scope, batch)


def _export_learned(rows: ModelRows, writer: Writer, scope: str, batch: list[Learned]) -> None:
    """Write a batch of learned records (and empty it), their bags naming only the tokens
    the model still holds: expiry deletes token rows and keeps the records whose bags name
    them, and an import refuses a record naming a token its file lacks. One query a batch
    finds the held ids, so memory stays a batch whatever the model's size."""
    named = sorted({token_id for record in batch for token_id in stored_bag(record)})
    held = rows.held(scope, named)
    for record in batch:
        writer.learned(record, held)
    batch.clear()


@dataclass
class _Importer:
    """The model being imported and its pending batches."""

    rows: ModelRows
    base: str
    mode: ImportMode
    user: str | None  # the user every model of the file goes to, if one was named
    force: bool
    scope: str | None = None
    name: str = ""
    tokens: list[TokenRow] = field(default_factory=list)
    learned: list[LearnedRow] = field(default_factory=list)
    vocabulary: dict[str, int] = field(default_factory=dict)
    already_held: int = 0
    records: Counts = field(default_factory=Counts)

    def take(self, number: int, record: Record) -> None:
        if isinstance(record, Token):
            self.records.tokens += 1
            self.tokens.append((record.token_id, record.counts, record.seen_day))
            if len(self.tokens) >= BATCH:
                self._flush()
        elif isinstance(record, Learned):
            self.records.learned += 1
            self.learned.append(
                LearnedRow(record.digest, record.label, record.learned_at, record.bag,
                           record.token_count, record.ham_bin)
            )  # fmt: skip
            if len(self.learned) >= _LEARNED_BATCH:
                self._flush()
        elif isinstance(record, Total):
            self.records.totals += 1
            scope = self._current()
            self.rows.add_totals(
                scope,
                [(record.label, record.messages, record.occurrences, record.token_messages)],
            )
        elif isinstance(record, HamScore):
            self.records.hamscores += 1
            self.rows.add_ham_scores(self._current(), [(record.bin, record.count)])
        else:
            self._start(number, record)

    def _start(self, number: int, record: Scope) -> None:
        self._close()
        if self.user is not None and self.records.scopes:
            raise InvalidDataFile(
                f"line {number}: the file holds more than one model; importing as one user "
                "needs a file of one model ('spamfilter export --user NAME' or '--site')"
            )
        self.records.scopes += 1
        user = self.user if self.user is not None else record.user
        self.scope = self.base if user is None else user_scope(self.base, user)
        self.name = scope_field(user)
        if self.mode == "new" and self.rows.has_rows(self.scope):
            raise TransferRefused(
                f"model {self.name!r} already holds learned data; import with --merge to add "
                "to it or --replace to replace it"
            )
        self.rows.prepare(self.scope, replace=self.mode == "replace")

    def _current(self) -> str:
        assert self.scope is not None  # read_records puts a scope before any other record
        return self.scope

    def _flush(self) -> None:
        scope = self._current()
        self.rows.add_tokens(scope, self.tokens)
        self.tokens.clear()
        held = self.rows.add_learned(scope, self.learned)
        self.learned.clear()
        if held and not self.force:
            raise TransferRefused(
                f"{len(held)} learned message(s) of model {self.name!r} are in the database "
                f"already (e.g. digest {held[0]}): merging would count them twice; use "
                "--replace, or --force to merge anyway"
            )
        self.already_held += len(held)

    def _close(self) -> None:
        """Write what is pending of the current model and recount its vocabulary."""
        if self.scope is not None:
            self._flush()
            self._check_sums()
            self.vocabulary[self.name] = self.rows.recount_vocabulary(self.scope)

    def _check_sums(self) -> None:
        """Refuse a merge that summed a count or total past MAX_COUNT (the file's counts are
        at most that, so no sum overflowed the 64-bit columns on its way here); raising
        rolls the whole import back. A new or replaced model holds the file's counts only."""
        if self.mode != "merge":
            return
        found = self.rows.over_cap(self._current(), MAX_COUNT)
        if found is not None:
            raise TransferRefused(
                f"merging model {self.name!r} would make a count larger than {MAX_COUNT:,} "
                f"({found}); nothing was imported"
            )

    def finish(self) -> ImportResult:
        self._close()
        return ImportResult(self.mode, self.vocabulary, self.records, self.already_held)
