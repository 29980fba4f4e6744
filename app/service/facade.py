"""``SpamFilter``: the one facade every adapter calls (HTTP, spamd, milter, pipe filter, CLI).

It reads the bytes it is given (``analyse``), then hands them to the use case: judging
(``judging``) or feedback (``learning``). Each public call is one
database transaction, opened and committed by the use case; adapters never see a connection.
"""

from __future__ import annotations

from app.domain.labels import LABELS
from app.service.judging import Judge
from app.service.learning import Trainer, feedback_label
from app.service.results import (
    Analysed,
    Classification,
    FeedbackResult,
    Form,
    LabelSummary,
    MailReport,
    Stats,
)
from app.settings import Settings
from app.storage.store import Store


class SpamFilter:
    """The service: a store plus the settings that shape tokens, scores and verdicts."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self._settings = settings
        self._judge = Judge(store, settings)
        self._trainer = Trainer(store, settings, self._judge)

    @property
    def database(self) -> str:
        """The database dialect: ``sqlite`` or ``postgresql``."""
        return self._store.dialect_name

    def is_ready(self) -> bool:
        """True when the database answers, its schema is at the newest revision and (SQLite)
        its file is the one in use and writable."""
        return self.readiness() is None

    def readiness(self) -> str | None:
        """None when ready (see ``is_ready``), else why not, in one line safe to show."""
        return self._store.readiness()

    def close(self) -> None:
        """Release every database connection."""
        self._store.dispose()

    def analyse(self, raw: bytes, legacy: bool = False, form: Form = "rfc822") -> Analysed:
        """Parse and tokenise ``raw``, read as ``form`` (see ``Form``); raises
        MessageTooLarge or InvalidMessage. With ``legacy``, the digest an older version gave
        the same bytes too (learn and forget ask for it)."""
        return self._judge.analyse(raw, legacy, form)

    def classify(
        self, message: bytes | Analysed, scope: str | None = None, form: Form = "rfc822"
    ) -> Classification:
        """Score a message against the learned counts (read-only)."""
        analysed = message if isinstance(message, Analysed) else self.analyse(message, form=form)
        return self._judge.classify(analysed, scope or self._settings.scope)

    def learn(
        self,
        message: bytes | Analysed,
        label: str,
        scope: str | None = None,
        form: Form = "rfc822",
    ) -> FeedbackResult:
        """Learn a message as ``label``: learned, relabelled (counts moved), unchanged, or
        skipped (thick training: the model already gets it right by more than the margin)."""
        target = feedback_label(label)
        analysed = self._feedback_analysis(message, form)
        return self._trainer.learn(analysed, target, scope or self._settings.scope)

    def forget(
        self, message: bytes | Analysed, scope: str | None = None, form: Form = "rfc822"
    ) -> FeedbackResult:
        """Remove a learned message's counts exactly; ``unknown`` if it was never learned."""
        analysed = self._feedback_analysis(message, form)
        return self._trainer.forget(analysed, scope or self._settings.scope)

    def mail_report(self, result: Classification) -> MailReport:
        """The score on SpamAssassin's scale (see app.domain.spam_headers) and the headers."""
        return self._judge.mail_report(result)

    def scope_for(self, user: str | None) -> str:
        """The model scope for a mail user (spamd ``User:``, a milter recipient, ...).

        Every user shares the configured scope until per-user models exist; adapters pass
        the user through here rather than choosing a scope themselves.
        """
        del user
        return self._settings.scope

    def stats(self, scope: str | None = None) -> Stats:
        """Learned messages and tokens per label, and the vocabulary size."""
        scope = scope or self._settings.scope
        with self._store.transaction(write=False) as tx:
            totals = tx.totals(scope)
        labels = {
            label: LabelSummary(totals.of(label).messages, totals.of(label).occurrences)
            for label in LABELS
        }
        return Stats(labels, totals.vocabulary, self._store.dialect_name, scope)

    def _feedback_analysis(self, message: bytes | Analysed, form: Form) -> Analysed:
        if isinstance(message, Analysed):
            return message
        return self.analyse(message, legacy=True, form=form)
