"""``SpamFilter``: the one facade every adapter calls (HTTP, spamd, milter, pipe filter, CLI).

It reads the bytes it is given (``analyse``), then hands them to the use case: judging
(``judging``) or feedback (``learning``). Each public call is one
database transaction, opened and committed by the use case; adapters never see a connection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from app.errors import StorageUnavailable
from app.service.accounts import Accounts, DeletedUser, UserSummary
from app.service.console_access import ConsoleGuard
from app.service.events import Observer
from app.service.history import History
from app.service.judging import Judge
from app.service.learning import LEARN_BATCH, Trainer, feedback_class
from app.service.results import (
    Analysed,
    Classification,
    FeedbackResult,
    Form,
    LabelSummary,
    Stats,
)
from app.service.scoping import Models, models_for
from app.service.transfer import ImportMode, ImportResult, Transfer
from app.service.transfer_format import Counts, TextSink
from app.service.upkeep import ExpiryReport, Upkeep
from app.service.watching import Watcher
from app.settings.schema import Settings
from app.storage.store import Store


class SpamFilter:
    """The service: a store plus the settings that shape tokens, scores and verdicts.

    ``adapter`` names the entry point that built it (http, spamd, milter, pipe, cli); every
    classify, learn and forget is reported to ``observers`` under that name (``events``).
    """

    def __init__(
        self,
        store: Store,
        settings: Settings,
        observers: Sequence[Observer] = (),
        adapter: str = "cli",
    ) -> None:
        self._store = store
        self._settings = settings
        self._judge = Judge(store, settings)
        self._upkeep = Upkeep(store, settings)
        self._trainer = Trainer(store, settings, self._judge, self._upkeep)
        self._watch = Watcher(observers, adapter)
        self._transfer = Transfer(store, settings)
        self._accounts = Accounts(store, settings)
        # The console's recorded activity (written by the recorder, read by the console).
        self.history = History(store, settings)
        # Who may use the console: its signing secret, revoked sessions, failed logins.
        self.console = ConsoleGuard(store, settings)

    @property
    def database(self) -> str:
        """The database dialect: ``sqlite`` or ``postgresql``."""
        return self._store.dialect_name

    @property
    def learn_batch(self) -> int:
        """How many messages a bulk learn gives ``learn_many`` at a time on this database."""
        return LEARN_BATCH.get(self.database, 10)

    def is_ready(self) -> bool:
        """True when the database answers, its schema is at the newest revision and (SQLite)
        its file is the one in use and writable."""
        return self.readiness() is None

    def refuse_newer_schema(self) -> None:
        """ConfigurationError when a newer release has migrated the database (for entry
        points that never migrate it; see ``Store.refuse_newer_schema``)."""
        self._store.refuse_newer_schema()

    def readiness(self) -> str | None:
        """None when ready (see ``is_ready``), else why not, in one line safe to show."""
        return self._store.readiness()

    def unready(self) -> StorageUnavailable | None:
        """None when ready, else the error saying why: StorageWritesFailing when reads work
        but writes do not (read-only, disk full), with a text any client may read."""
        return self._store.unready()

    def close(self) -> None:
        """Let the observers finish (the console's recorder flushes), then release every
        database connection."""
        self._watch.close()
        self._store.dispose()

    def analyse(self, raw: bytes, legacy: bool = False, form: Form = "rfc822") -> Analysed:
        """Parse and tokenise ``raw``, read as ``form`` (see ``Form``); raises
        MessageTooLarge or InvalidMessage. With ``legacy``, the digest an older version gave
        the same bytes too (learn and forget ask for it)."""
        return self._judge.analyse(raw, legacy, form)

    def classify(
        self,
        message: bytes | Analysed,
        user: str | None = None,
        form: Form = "rfc822",
        anonymous: bool = False,
    ) -> Classification:
        """Score a message against the learned counts (read-only): the site-wide model's, or
        ``user``'s with the site-wide model as fallback (see ``app.domain.fallback``), with
        its mail report. ``anonymous``: the caller proved nothing (see ``events.Event``), so
        the clues' namespaced values are hidden from it (see ``exposure``)."""
        with self._watch.call("classify", user) as watch:
            models = self.models(user)
            analysed = watch.read(
                message if isinstance(message, Analysed) else self.analyse(message, form=form)
            )
            result = self._judge.classify(analysed, models)
            clues = tuple((clue.token, clue.weight) for clue in result.clues)
            watch.answer(
                result.verdict.value, log_odds=result.log_odds, clues=clues, anonymous=anonymous
            )
        return self._judge.hidden(result) if anonymous else result

    def learn(
        self,
        message: bytes | Analysed,
        label: str,
        user: str | None = None,
        form: Form = "rfc822",
    ) -> FeedbackResult:
        """Learn a message as ``label``: learned, relabelled (counts moved), unchanged, or
        skipped (thick training: the model already gets it right by more than the margin).
        For a ``user``, their model learns it, and the site-wide one by ``users.train_site``."""
        with self._watch.call("learn", user) as watch:
            target = feedback_class(label, self._settings.model.classes)
            models = self.models(user)
            analysed = watch.read(self._feedback_analysis(message, form))
            result = self._trainer.learn(analysed, target, models)
            watch.answer(result.outcome.value, label=target)
        return result

    def learn_many(
        self, messages: Sequence[tuple[Analysed, str]], user: str | None = None
    ) -> Iterator[list[FeedbackResult]]:
        """Learn messages read by ``learn_analysis``, each with its label, as ``learn`` one
        after another would, in as few transactions as expiry allows (``Trainer.learn_many``
        ends one after a message that makes expiry due): bulk learning, ``learn_batch`` at a
        time. Yields the results of each transaction, in order, once it has committed, so
        that when one fails (none of its messages is learned) the caller knows what was. A
        label that names none refuses the rest. Observers get one event per message learned,
        or one error each for the messages of a transaction that failed."""
        rest = list(messages)
        while rest:
            with self._watch.calls("learn", user, len(rest)) as watches:
                for watch, (analysed, _label) in zip(watches, rest, strict=True):
                    watch.read(analysed)
                classes = self._settings.model.classes
                labelled = [(analysed, feedback_class(label, classes)) for analysed, label in rest]
                results = self._trainer.learn_many(labelled, self.models(user))
                for watch, result, (_, target) in zip(watches, results, labelled, strict=False):
                    watch.answer(result.outcome.value, label=target)
                del watches[len(results) :]  # learned in a later transaction, or not at all
            yield results
            rest = rest[len(results) :]

    def learn_analysis(
        self, message: bytes | Analysed, user: str | None = None, form: Form = "rfc822"
    ) -> Analysed:
        """A message for ``learn_many``, read as ``learn`` reads it (with the digest an older
        version gave the same bytes; one already analysed is taken as it is). One that cannot
        be read is reported to the observers as a learn that failed, as ``learn`` reports it."""
        with self._watch.failure("learn", user):
            return self._feedback_analysis(message, form)

    def forget(
        self, message: bytes | Analysed, user: str | None = None, form: Form = "rfc822"
    ) -> FeedbackResult:
        """Remove a learned message's counts exactly; ``unknown`` if it was never learned."""
        with self._watch.call("forget", user) as watch:
            models = self.models(user)
            analysed = watch.read(self._feedback_analysis(message, form))
            result = self._trainer.forget(analysed, models)
            watch.answer(result.outcome.value)
        return result

    def undeclared_classes(self) -> dict[str, int]:
        """Classes the database holds learned messages of (over every model) that
        ``model.classes`` does not declare, with their messages."""
        return self._store.undeclared_classes()

    def models(self, user: str | None) -> Models:
        """The scopes a call for ``user`` reads and trains (None: the site-wide model);
        InvalidUser for a name that cannot name a model."""
        return models_for(self._settings, user)

    def stats(self, user: str | None = None) -> Stats:
        """Learned messages and tokens per label, and the vocabulary size, of the site-wide
        model or of ``user``'s own model."""
        models = self.models(user)
        with self._store.transaction(write=False) as tx:
            totals = tx.totals(models.own)
            scored, spam_cut = self._judge.cutoffs.state(tx, models)
        labels = {
            label: LabelSummary(totals.of(label).messages, totals.of(label).occurrences)
            for label in self._store.classes
        }
        return Stats(
            labels,
            totals.vocabulary,
            self._store.dialect_name,
            models.own,
            models.user,
            ham_scored=scored,
            spam_cutoff=spam_cut,
        )

    def export(self, out: TextSink, user: str | None = None, site_only: bool = False) -> Counts:
        """Write the learned models to ``out`` in the export format (``transfer_format``):
        the site-wide model and every user's, only ``user``'s, or only the site-wide one."""
        return self._transfer.export(out, user, site_only)

    def import_models(
        self,
        lines: Iterable[str],
        mode: ImportMode = "new",
        user: str | None = None,
        force: bool = False,
    ) -> ImportResult:
        """Read an export file, all or nothing (see ``app.service.transfer`` for modes)."""
        return self._transfer.import_(lines, mode, user, force)

    def backup(self, destination: Path, overwrite: bool = False) -> int:
        """Copy the live SQLite database to ``destination``; its size in bytes."""
        return self._transfer.backup(destination, overwrite)

    def expire(
        self,
        user: str | None = None,
        every: bool = False,
        dry_run: bool = False,
        max_tokens: int | None = None,
        max_age_days: int | None = None,
        done: Callable[[ExpiryReport], None] | None = None,
    ) -> list[ExpiryReport]:
        """Expire old and rare tokens of ``user``'s model (None: the site-wide one), or with
        ``every`` of the site-wide model and every user's; limits default to the settings'.
        One transaction per model, ``done`` told of each; ``dry_run`` only counts (see
        ``app.service.upkeep``)."""
        scopes = self._upkeep.scopes(user, every)
        limits = self._upkeep.limits(max_tokens, max_age_days)
        return self._upkeep.expire(scopes, limits, dry_run, done)

    def users(self) -> list[UserSummary]:
        """Every user with a model of their own: learned messages per label, vocabulary."""
        return self._accounts.users()

    def delete_user(self, user: str) -> DeletedUser:
        """Delete ``user``'s own model (the site-wide model keeps what it learned from them);
        UnknownUser when they have none, InvalidUser for a name that cannot be a user."""
        return self._accounts.delete_user(user)

    def _feedback_analysis(self, message: bytes | Analysed, form: Form) -> Analysed:
        if isinstance(message, Analysed):
            return message
        return self.analyse(message, legacy=True, form=form)
