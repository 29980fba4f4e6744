"""The one service every adapter calls: classify, learn, forget, stats.

Each public call is one database transaction, opened and committed here; adapters never see
a connection. A transaction that loses a race (PostgreSQL deadlock or serialisation failure)
is retried a few times, which is safe because the whole call is one transaction.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

from app.domain import naive_bayes as nb
from app.domain.decision import (
    Decision,
    Reason,
    Thresholds,
    Verdict,
    decide,
    worth_learning,
)
from app.domain.labels import LABELS, Label, parse_label
from app.domain.message import MimeLimits, NotAMessage, parse
from app.domain.spam_headers import (
    REQUIRED_SCORE,
    SpamReport,
    is_spam,
    shown_score,
    spam_headers,
    spam_score,
)
from app.domain.token_ids import token_id
from app.domain.tokenizer import TokenizerOptions, token_kind, tokenize
from app.errors import InvalidLabel, InvalidMessage, MessageTooLarge, StorageConflict
from app.settings import Settings
from app.storage.store import LearnedRecord, ModelTotals, Store, TokenStats, Transaction

T = TypeVar("T")
_RETRIES = 5


class Outcome(StrEnum):
    """What a feedback or forget call did."""

    LEARNED = "learned"
    RELABELLED = "relabelled"
    UNCHANGED = "unchanged"
    SKIPPED = "skipped"
    FORGOTTEN = "forgotten"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Analysed:
    """A message reduced to what the model needs: digest, token counts and token ids.

    The ids are hashed once here; classify, learn (which classifies too under thick
    training) and an eval's classify-then-learn all reuse them.
    """

    digest: str
    tokens: Counter[str]
    truncated: bool
    legacy_digest: str | None = None
    ids: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", {token: token_id(token) for token in self.tokens})

    def bag(self) -> dict[int, int]:
        """Token id -> occurrences in this message."""
        bag: dict[int, int] = {}
        for token, count in self.tokens.items():
            tid = self.ids[token]
            bag[tid] = bag.get(tid, 0) + count
        return bag

    def names(self) -> dict[int, str]:
        """Token id -> token text."""
        return {tid: token for token, tid in self.ids.items()}


@dataclass(frozen=True, slots=True)
class Classification:
    """A verdict and the numbers behind it (log values in nats)."""

    verdict: Verdict
    reason: Reason | None
    spam_probability: float
    log_odds: float
    log_posteriors: dict[str, float]
    clues: list[nb.Clue]
    digest: str
    tokens: int
    truncated: bool


@dataclass(frozen=True, slots=True)
class MailReport:
    """A classification as mail servers see it: SpamAssassin-scale score and X-Spam headers."""

    is_spam: bool
    score: float
    required: float
    headers: list[tuple[str, str]]
    action: str  # accept | reject | quarantine, from settings.mail


@dataclass(frozen=True, slots=True)
class FeedbackResult:
    """The answer to learn or forget."""

    digest: str
    label: str | None
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class LabelSummary:
    """Learned messages and token occurrences of one label."""

    messages: int
    tokens: int


@dataclass(frozen=True, slots=True)
class Stats:
    """What the model holds in one scope."""

    labels: dict[str, LabelSummary]
    vocabulary: int
    database: str
    scope: str


class SpamFilter:
    """The service: a store plus the settings that shape tokens, scores and verdicts."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self._settings = settings
        limits = settings.tokenizer
        self._options = TokenizerOptions(
            max_token_length=limits.max_token_length,
            max_tokens=limits.max_tokens,
            max_header_bytes=limits.max_header_bytes,
            max_header_tokens=limits.max_header_tokens,
            max_comment_depth=limits.max_comment_depth,
            max_html_depth=limits.max_html_depth,
        )
        self._mime_limits = MimeLimits(limits.max_mime_depth, limits.max_mime_parts)
        self._thresholds = Thresholds(
            ham=settings.decision.ham_log_odds,
            spam=settings.decision.spam_log_odds,
            min_messages=settings.decision.min_messages,
        )

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

    def analyse(self, raw: bytes, legacy: bool = False) -> Analysed:
        """Parse and tokenise ``raw``; raises MessageTooLarge or InvalidMessage. With
        ``legacy``, the digest an older version gave the same bytes too (learn needs it)."""
        if len(raw) > self._settings.server.max_message_bytes:
            raise MessageTooLarge(
                f"message is {len(raw)} bytes; the limit is "
                f"{self._settings.server.max_message_bytes}"
            )
        try:
            parsed = parse(raw, self._settings.tokenizer.scan_bytes, self._mime_limits, legacy)
        except NotAMessage as error:
            raise InvalidMessage(str(error)) from error
        tokens = tokenize(parsed, self._options)
        return Analysed(parsed.digest, tokens, parsed.truncated, parsed.legacy_digest)

    def _analysed(self, message: bytes | Analysed) -> Analysed:
        return message if isinstance(message, Analysed) else self.analyse(message, legacy=True)

    def classify(self, message: bytes | Analysed, scope: str | None = None) -> Classification:
        """Score a message against the learned counts (read-only)."""
        analysed = message if isinstance(message, Analysed) else self.analyse(message)
        scope = scope or self._settings.scope
        with self._store.transaction(write=False) as tx:
            scored, learned = self._evaluate(tx, scope, analysed)
        return self._classification(analysed, scored, learned)

    def learn(
        self, message: bytes | Analysed, label: str, scope: str | None = None
    ) -> FeedbackResult:
        """Learn a message as ``label``: learned, relabelled (counts moved), unchanged, or skipped
        (thick training: the model already gets it right by more than the margin)."""
        target = _label(label)
        analysed = self._analysed(message)
        scope = scope or self._settings.scope
        bag = analysed.bag()

        def work(tx: Transaction) -> Outcome:
            record = _record(tx, scope, analysed)
            if record is None:
                if not self._worth_learning(tx, scope, analysed, target):
                    return Outcome.SKIPPED
                if tx.claim(scope, analysed.digest, target, bag):
                    tx.add(scope, target, bag, vocabulary=True)
                    return Outcome.LEARNED
                # Another writer claimed the digest first: go on from what it learned.
                record = tx.learned(scope, analysed.digest)
                if record is None:
                    return Outcome.UNCHANGED
            if record.label == target:
                return Outcome.UNCHANGED
            # Rows are touched in one label order whatever the direction, so opposite relabels
            # lock them in the same order (8 writers x 300 calls on PostgreSQL: 49 deadlocks
            # and 52.7 s before, none and 10.2 s after).
            if target < record.label:
                tx.add(scope, target, record.bag, vocabulary=False)
                tx.subtract(scope, record.label, record.bag, vocabulary=False)
            else:
                tx.subtract(scope, record.label, record.bag, vocabulary=False)
                tx.add(scope, target, record.bag, vocabulary=False)
            tx.relabel(scope, record.digest, target)
            return Outcome.RELABELLED

        return FeedbackResult(analysed.digest, target, self._write(work))

    def forget(self, message: bytes | Analysed, scope: str | None = None) -> FeedbackResult:
        """Remove a learned message's counts exactly; ``unknown`` if it was never learned."""
        analysed = self._analysed(message)
        scope = scope or self._settings.scope

        def work(tx: Transaction) -> Outcome:
            record = _record(tx, scope, analysed)
            if record is None:
                return Outcome.UNKNOWN
            tx.subtract(scope, record.label, record.bag, vocabulary=True)
            tx.unclaim(scope, record.digest)
            return Outcome.FORGOTTEN

        return FeedbackResult(analysed.digest, None, self._write(work))

    def mail_report(self, result: Classification) -> MailReport:
        """The score on SpamAssassin's scale (see app.domain.spam_headers) and the headers."""
        report = SpamReport(result.verdict, result.log_odds, result.spam_probability, result.clues)
        spam_cut = self._thresholds.spam
        return MailReport(
            is_spam=is_spam(report),
            score=shown_score(spam_score(result.log_odds, spam_cut), is_spam(report)),
            required=REQUIRED_SCORE,
            headers=spam_headers(report, spam_cut),
            action=self._action(result),
        )

    def scope_for(self, user: str | None) -> str:
        """The model scope for a mail user (spamd ``User:``, a milter recipient, ...).

        Every user shares the configured scope until per-user models exist; adapters pass
        the user through here rather than choosing a scope themselves.
        """
        del user
        return self._settings.scope

    def _action(self, result: Classification) -> str:
        mail = self._settings.mail
        if result.verdict is not Verdict.SPAM or mail.spam_action == "accept":
            return "accept"
        if mail.spam_action == "reject":
            return "reject" if result.log_odds > mail.reject_log_odds else "accept"
        return "quarantine"

    def stats(self, scope: str | None = None) -> Stats:
        """Learned messages and tokens per label, and the vocabulary size."""
        scope = scope or self._settings.scope
        with self._store.transaction(write=False) as tx:
            totals = tx.totals(scope)
        labels = {
            label: LabelSummary(
                totals.of(label).messages,
                totals.of(label).occurrences,
            )
            for label in LABELS
        }
        return Stats(labels, totals.vocabulary, self._store.dialect_name, scope)

    def _evaluate(
        self, tx: Transaction, scope: str, analysed: Analysed
    ) -> tuple[nb.Scored | None, dict[str, int]]:
        """The model's scores for ``analysed`` (None until every label has a message)."""
        totals = tx.totals(scope)
        learned = {label: totals.of(label).messages for label in LABELS}
        if not all(learned.values()):
            return None, learned
        names = analysed.names()
        counts = tx.counts(scope, list(names))
        return self._score(tx, scope, analysed, names, counts, totals), learned

    def _worth_learning(
        self, tx: Transaction, scope: str, analysed: Analysed, label: Label
    ) -> bool:
        """Under thick training, whether a new message is wrong or close enough to learn."""
        if self._settings.training_mode == "everything":
            return True
        scored, learned = self._evaluate(tx, scope, analysed)
        log_odds = None if scored is None else scored.log_odds(Label.SPAM, Label.HAM)
        margin, needed = self._settings.training_margin, self._thresholds.min_messages
        return worth_learning(log_odds, label, Label.SPAM, margin, learned[label], needed)

    def _write(self, work: Callable[[Transaction], T]) -> T:
        for attempt in range(_RETRIES):
            try:
                with self._store.transaction(write=True) as tx:
                    return work(tx)
            except StorageConflict:
                if attempt == _RETRIES - 1:
                    raise
                time.sleep(0.01 * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _score(
        self,
        tx: Transaction,
        scope: str,
        analysed: Analysed,
        names: Mapping[int, str],
        counts: Mapping[int, Mapping[str, TokenStats]],
        totals: ModelTotals,
    ) -> nb.Scored:
        model = self._settings.model
        if model.kind == "bernoulli":
            evidence = [
                nb.Evidence(names[tid], 1, {lb: s.messages for lb, s in per.items()})
                for tid, per in counts.items()
            ]
            messages = {lb: totals.labels[lb].messages for lb in LABELS}
            return nb.bernoulli(evidence, tx.all_message_counts(scope), messages, model.alpha)
        presence = model.counting == "presence"
        evidence = [
            nb.Evidence(
                names[tid],
                1 if presence else analysed.tokens[names[tid]],
                {lb: (s.messages if presence else s.occurrences) for lb, s in per.items()},
            )
            for tid, per in counts.items()
            if any(s.occurrences > 0 for s in per.values())
        ]
        class_totals = {
            lb: nb.ClassTotals(
                totals.labels[lb].messages,
                totals.labels[lb].token_messages if presence else totals.labels[lb].occurrences,
            )
            for lb in LABELS
        }
        top = model.top_tokens or None
        kind = token_kind if model.top_per_kind else None
        floor = model.length_floor if model.normalise_length else None
        distinct = model.distinct_min_messages or None
        return nb.multinomial(
            evidence, class_totals, totals.vocabulary, model.alpha, top, kind, floor, distinct
        )

    def _classification(
        self, analysed: Analysed, scored: nb.Scored | None, learned: dict[str, int]
    ) -> Classification:
        if scored is None:
            uniform = -math.log(len(LABELS))
            posteriors = {label: uniform for label in LABELS}
            log_odds, found = 0.0, []
        else:
            posteriors = scored.log_posteriors
            log_odds = scored.log_odds(Label.SPAM, Label.HAM)
            found = nb.clues(scored, Label.SPAM, Label.HAM, self._settings.model.clues)
        decision: Decision = decide(log_odds, learned, self._thresholds)
        return Classification(
            verdict=decision.verdict,
            reason=decision.reason,
            spam_probability=nb.probability(posteriors[Label.SPAM]),
            log_odds=log_odds,
            log_posteriors=posteriors,
            clues=found,
            digest=analysed.digest,
            tokens=sum(analysed.tokens.values()),
            truncated=analysed.truncated,
        )


def _record(tx: Transaction, scope: str, analysed: Analysed) -> LearnedRecord | None:
    """The learned record of a message: under its digest, or under the digest an older
    version gave the same bytes (see ``ParsedMessage.legacy_digest``)."""
    record = tx.learned(scope, analysed.digest)
    if record is None and analysed.legacy_digest is not None:
        record = tx.learned(scope, analysed.legacy_digest)
    return record


def _label(value: str) -> Label:
    try:
        return parse_label(value)
    except ValueError as error:
        raise InvalidLabel(str(error)) from error
