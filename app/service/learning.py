"""Learning and forgetting: feedback moves counts, exactly and idempotently.

Each call is one write transaction; one that loses a race (a PostgreSQL deadlock or
serialisation failure) is retried a few times, which is safe because the whole call is one
transaction. A message learned twice with one label changes nothing; with the other label
its counts move; forgetting restores exactly what learning added.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from app.domain.classes import (
    grouped_messages,
    side_training_lead,
    training_lead,
)
from app.domain.decision import worth_learning
from app.domain.labels import parse_class
from app.errors import InvalidLabel, StorageConflict
from app.service.judging import Judge
from app.service.results import Analysed, FeedbackResult, Outcome
from app.service.scoping import Models
from app.service.upkeep import Upkeep
from app.settings.schema import Settings
from app.storage.store import LearnedRecord, Store, Transaction

T = TypeVar("T")
_RETRIES = 5
# Messages a bulk learn (``spamfilter learn``, the speed benchmark) gives ``learn_many`` at
# a time, per database: the commit, the scope's generation and the cache's bookkeeping are
# paid once per batch, and a token row is written once per batch. why 100 / 50: ms a
# message by batch size (docs/benchmarks.md, "Measurements behind the design"); another
# writer of the model waits for at most one batch.
LEARN_BATCH = {"sqlite": 100, "postgresql": 50}


class Trainer:
    """Feedback on messages: learn as a label, relabel, forget."""

    def __init__(self, store: Store, settings: Settings, judge: Judge, upkeep: Upkeep) -> None:
        self._store = store
        self._settings = settings
        self._judge = judge
        self._upkeep = upkeep

    def learn(self, analysed: Analysed, target: str, models: Models) -> FeedbackResult:
        """Learn a message as ``target``: learned, relabelled (counts moved), unchanged, or
        skipped (thick training: the model already gets it right by more than the margin).

        For a user, the user's model learns it and, when ``users.train_site`` is set, so does
        the site-wide model (judged on its own for thick training), in one transaction; the
        outcome is the user's model's. Expiry may follow, after the commit (see ``upkeep``)."""
        return self.learn_many([(analysed, target)], models)[0]

    def learn_many(
        self, messages: Sequence[tuple[Analysed, str]], models: Models
    ) -> list[FeedbackResult]:
        """``learn`` the messages in turn, in one transaction, up to the first after which
        expiry falls due (``Upkeep.due``): at least the first, usually all. Their results, in
        order; the caller gives the rest again. Each is judged against the model as the ones
        before it left it, and expiry runs after the commit as after a single learn, so the
        counts, records and outcomes are exactly those of learning them one at a time.
        On an error none of them is learned; InvalidLabel, before anything is learned, for a
        label that is not one of the classes (``model.classes``)."""
        if not messages:
            return []
        classes = self._settings.model.classes
        for _, target in messages:
            feedback_class(target, classes)
        outcomes, grown = self._write(functools.partial(self._learn_run, messages, models))
        self._upkeep.after_learn(grown)
        return [
            FeedbackResult(analysed.digest, target, outcome, analysed.form)
            for (analysed, target), outcome in zip(messages, outcomes, strict=False)
        ]

    def _learn_run(
        self, messages: Sequence[tuple[Analysed, str]], models: Models, tx: Transaction
    ) -> tuple[list[Outcome], dict[str, int]]:
        """Learn messages in ``tx`` up to the first after which expiry is due (at least
        one); their outcomes, and the vocabularies they grew."""
        sites = self._site_models(models)
        if sites and len(messages) > 1:
            # One learn locks the user's model before the site-wide one whenever it changes
            # both; a batch might change the site-wide one first (a message the user's model
            # already holds) and the user's later: against a single learn for the same user,
            # a deadlock on PostgreSQL. Locking the user's model first keeps the one order.
            tx.lock_scope(models.own)
        for scope in (models.own, *(site.own for site in sites)):
            # Checked before anything changes them, so that the whole batch reads their
            # counts through the cache (``CacheView.held``), even when its first message
            # changes a model without judging it (a relabel; every spam under ``everything``).
            tx.totals(scope)
        if len(messages) > 1:
            batch = [analysed for analysed, _ in messages]
            self._judge.prefetch(tx, batch, (models, *sites))
            # why: a record query per message was a sixth of a batch's statements
            # (docs/benchmarks.md, "Measurements behind the design").
            digests = [d for a in batch for d in (a.digest, a.legacy_digest) if d is not None]
            for scope in (models.own, *(site.own for site in sites)):
                tx.read_records_ahead(scope, digests)
        outcomes = []
        for analysed, target in messages:
            outcomes.append(self._learn_in(tx, models, analysed, target))
            for site in sites:
                self._learn_in(tx, site, analysed, target)
            if self._upkeep.due(tx.grown()):
                break
        return outcomes, tx.grown()

    def forget(self, analysed: Analysed, models: Models) -> FeedbackResult:
        """Remove a learned message's counts exactly; ``unknown`` if it was never learned.

        For a user, the site-wide model forgets it too when ``users.train_site`` is set."""

        def work(tx: Transaction) -> Outcome:
            outcome = _forget_in(tx, models.own, analysed)
            for site in self._site_models(models):
                _forget_in(tx, site.own, analysed)
            return outcome

        return FeedbackResult(analysed.digest, None, self._write(work), analysed.form)

    def _site_models(self, models: Models) -> list[Models]:
        """The site-wide model, when feedback for a user trains it too."""
        if models.site is None or not self._settings.users.train_site:
            return []
        return [Models(models.site)]

    def _learn_in(
        self, tx: Transaction, models: Models, analysed: Analysed, target: str
    ) -> Outcome:
        scope = models.own
        record = _record(tx, scope, analysed)
        if record is None:
            learn, ham_bin = self._judge_new(tx, models, analysed, target)
            if not learn:
                if ham_bin is not None:
                    tx.ham_scores().add(scope, ham_bin)
                return Outcome.SKIPPED
            bag = analysed.bag()
            if tx.claim(scope, analysed.digest, target, bag, ham_bin):
                tx.add(scope, target, bag, vocabulary=True)
                if ham_bin is not None:
                    tx.ham_scores().add(scope, ham_bin)
                return Outcome.LEARNED
            # Another writer claimed the digest first (and scored it): go on from what it
            # learned.
            record = tx.learned(scope, analysed.digest)
            if record is None:
                return Outcome.UNCHANGED
        if record.label == target:
            return Outcome.UNCHANGED
        move_record(tx, scope, record, target)
        return Outcome.RELABELLED

    def _judge_new(
        self, tx: Transaction, models: Models, analysed: Analysed, label: str
    ) -> tuple[bool, int | None]:
        """Score a message new to the model before it is learned: whether to learn it (under
        thick training, whether it is wrong or close enough), and for ham the bin of the
        model's ham scores its score belongs in (``cutoffs``; None when it is not kept).

        Ham here is every not-junk class: the spam cut-off weighs junk against not-junk, so
        it is chosen from the scores of all the mail a site wants (with ham and spam alone,
        ham's)."""
        cutoffs = self._judge.cutoffs
        thick = self._settings.training_mode != "everything"
        # why every not-junk class: with hard ham's scores left out, hm% rose 0.087 -> 0.434
        # (docs/classes.md, "What the third class does to the spam verdicts").
        wanted = label not in self._judge.junk
        if not thick and not (wanted and cutoffs.calibrated):
            return True, None
        judged = self._judge.evaluate(tx, models, analysed)
        scored, learned = judged.scored, judged.learned
        ham_bin = None
        if wanted:
            ham_bin = cutoffs.ham_bin(self._judge.verdict_odds(judged))
        if not thick:
            return True, ham_bin
        margin, needed = self._settings.training_margin, self._judge.min_messages
        novelty_margin = self._settings.training_novelty
        # Right when the label is the likeliest class; learned unless its side (junk or not)
        # also leads by the margin: with ham and spam alone, the log-odds for spam and their
        # negation for ham.
        # why: hard ham as a class, seed 1: 1,206 learned not 1,222 (docs/classes.md).
        junk = self._judge.junk
        label_messages = learned[label]
        if scored is None:
            lead = None
        elif judged.sides is not None:
            # The side-merged model's lead, as a two-class site weighs it (docs/classes.md).
            side_odds = self._judge.verdict_odds(judged)
            assert side_odds is not None  # the side-merged model scored
            lead = side_training_lead(scored.log_posteriors, label, junk=junk, side_odds=side_odds)
            side = "junk" if label in junk else "not_junk"
            label_messages = grouped_messages(learned, junk)[side]
        else:
            lead = training_lead(scored.log_posteriors, label, junk)
        learn = worth_learning(
            lead,
            label=label,
            positive=label,
            margin=margin,
            label_messages=label_messages,
            min_messages=needed,
            # Each token's counts are walked only where the rule is on.
            novelty=judged.novelty() if novelty_margin > 0 else 0.0,
            novelty_margin=novelty_margin,
        )
        return learn, ham_bin

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


def _forget_in(tx: Transaction, scope: str, analysed: Analysed) -> Outcome:
    record = _record(tx, scope, analysed)
    if record is None:
        return Outcome.UNKNOWN
    forget_record(tx, scope, record)
    return Outcome.FORGOTTEN


def forget_record(tx: Transaction, scope: str, record: LearnedRecord) -> None:
    """Take a learned message out of model ``scope``: its counts, its ham score and its
    record, exactly what learning it added."""
    tx.subtract(scope, record.label, record.bag, vocabulary=True)
    if record.ham_bin is not None:
        tx.ham_scores().remove(scope, record.ham_bin)
    tx.unclaim(scope, record.digest)


def move_record(tx: Transaction, scope: str, record: LearnedRecord, target: str) -> None:
    """Move a learned message's counts in model ``scope`` from its class to ``target``
    (another one), exactly; it no longer holds a ham score."""
    # Rows are touched in one label order whatever the direction, so opposite relabels
    # lock them in the same order (8 writers x 300 calls on PostgreSQL: 49 deadlocks
    # and 52.7 s before, none and 10.2 s after).
    if target < record.label:
        tx.add(scope, target, record.bag, vocabulary=False)
        tx.subtract(scope, record.label, record.bag, vocabulary=False)
    else:
        tx.subtract(scope, record.label, record.bag, vocabulary=False)
        tx.add(scope, target, record.bag, vocabulary=False)
    if record.ham_bin is not None:
        tx.ham_scores().remove(scope, record.ham_bin)
    tx.relabel(scope, record.digest, target)


def _record(tx: Transaction, scope: str, analysed: Analysed) -> LearnedRecord | None:
    """The learned record of a message: under its digest, or under the digest an older
    version gave the same bytes (see ``ParsedMessage.legacy_digest``)."""
    legacy = () if analysed.legacy_digest is None else (analysed.legacy_digest,)
    return tx.learned(scope, analysed.digest, *legacy)


def feedback_class(value: str, classes: Sequence[str]) -> str:
    """The class of ``classes`` that ``value`` names; InvalidLabel, naming the classes,
    when it names none."""
    try:
        return parse_class(value, classes)
    except ValueError as error:
        raise InvalidLabel(str(error)) from error
