"""Judging a message: bytes to tokens (``reading``), tokens to counts, counts to a verdict
and its report.

``Judge`` holds what shapes tokens and scores (its reader, model settings, thresholds); it
opens read transactions of its own for ``classify`` and scores inside the learner's write
transaction for thick training (``evaluate``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from app.domain import naive_bayes as nb
from app.domain import scoring
from app.domain.classes import (
    grouped_messages,
    junk_log_odds,
    junk_pair,
    log_mass,
    most_likely,
    scorable,
)
from app.domain.decision import Decision, Thresholds, decide
from app.domain.sides import (
    JUNK,
    SIDES,
    deciding_tokens,
    lumps,
    merge_totals,
    merge_vocabulary_counts,
    restricted,
    side_params,
)
from app.domain.spam_headers import (
    REQUIRED_SCORE,
    SpamReport,
    is_spam,
    shown_class,
    shown_score,
    spam_headers,
    spam_score,
)
from app.domain.verdict import Verdict
from app.service.cutoffs import CutOffs
from app.service.exposure import hide_field_values
from app.service.reading import Reader
from app.service.results import Analysed, Classification, Form, MailReport
from app.service.scoping import Models
from app.settings.schema import Settings
from app.storage.store import Store, TokenStats, Transaction

# Per token id, its learned counts under each class, as storage reads them.
StoredCounts = Mapping[int, Mapping[str, TokenStats]]


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A message scored against a model: the scores (None before every label has learned a
    message), learned messages per label, and the learned counts of its tokens, one map per
    model that judged (a user's, then the site-wide one). ``sides``: with more than two
    classes, the side-merged model's scores (``app.domain.sides``; labels ham and spam),
    which give the verdict; None with two classes. ``names`` maps the message's token ids
    to its tokens, ``ids`` its tokens to their ids."""

    scored: nb.Scored | None
    learned: dict[str, int]
    names: Mapping[int, str] = field(default_factory=dict)
    counts: tuple[StoredCounts, ...] = ()
    sides: nb.Scored | None = None
    ids: Mapping[str, int] = field(default_factory=dict)

    def novelty(self) -> float:
        """The share of the message's distinct tokens that no model that judged has learned
        (0 to 1; 0 when nothing was scored)."""
        if not self.names:
            return 0.0
        # Plain loops: a generator per token to test its occurrences took 6 % of a learn.
        known: set[int] = set()
        for counts in self.counts:
            for tid, per in counts.items():
                for stats in per.values():
                    if stats.occurrences > 0:
                        known.add(tid)
                        break
        return 1.0 - len(known) / len(self.names)

    def counts_of(self, tokens: Iterable[str]) -> dict[str, dict[str, int]]:
        """Per token, the learned messages holding it in each label, over the models that
        judged."""
        shown: dict[str, dict[str, int]] = {}
        for token in tokens:
            per = dict.fromkeys(self.learned, 0)
            tid = self.ids.get(token)
            for counts in self.counts:
                found = counts.get(tid, {}) if tid is not None else {}
                for label, stats in found.items():
                    per[label] = per.get(label, 0) + stats.messages
            shown[token] = per
        return shown


@dataclass(frozen=True, slots=True)
class _Found:
    """A message's learned counts in the user's model (``mine``) and the site-wide one it
    falls back on (``theirs``; None without a fallback), by token id, with what makes them
    evidence: ``names`` (token id -> token), ``in_message`` (token -> times in the message)
    and ``lumps`` (class -> the side it is lumped into; None: the classes themselves)."""

    mine: StoredCounts
    theirs: StoredCounts | None
    names: Mapping[int, str]
    in_message: Mapping[str, int]
    lumps: Mapping[str, str] | None = None


def scoring_params(settings: Settings) -> scoring.ScoringParams:
    """The settings that shape a score, read once (see ``app.domain.scoring``)."""
    model = settings.model
    return scoring.ScoringParams(
        labels=settings.model.classes,
        kind=model.kind,
        counting=model.counting,
        alpha=model.alpha,
        top=model.top_tokens or None,
        per_kind=model.top_per_kind,
        floor=model.length_floor if model.normalise_length else None,
        distinct=model.distinct_min_messages or None,
        fallback_strength=settings.users.fallback_strength,
        min_messages=settings.decision.min_messages,
        junk=settings.model.junk_classes,
    )


def judging_counts(
    own: StoredCounts, site: StoredCounts | None, blended: bool
) -> tuple[StoredCounts, ...]:
    """The counts of the models that judged: a user's and the site-wide ones when they were
    blended, else the one model's."""
    return (own, site) if blended and site is not None else (own,)


class Judge:
    """Reads messages and scores them against the learned counts of a scope."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self._settings = settings
        self.reader = Reader(settings)
        self.params = scoring_params(settings)
        # The spam cut-off is chosen per verdict (``cutoffs``); these are fixed.
        self._ham_cutoff = settings.decision.ham_log_odds
        self.min_messages = settings.decision.min_messages
        self.cutoffs = CutOffs(settings)
        self.classes = settings.model.classes
        self.junk = settings.model.junk_classes
        self.lumps = lumps(self.classes, self.junk)

    def analyse(self, raw: bytes, legacy: bool = False, form: Form = "rfc822") -> Analysed:
        """``raw`` read as ``form`` (see ``Reader.analyse``)."""
        return self.reader.analyse(raw, legacy, form)

    def classify(self, analysed: Analysed, models: Models) -> Classification:
        """Score ``analysed`` against the learned counts of ``models`` (read-only)."""
        with self._store.transaction(write=False) as tx:
            judged = self.evaluate(tx, models, analysed)
            spam_cut = self.cutoffs.spam_cutoff(tx, models)
        return self._classification(analysed, judged, spam_cut)

    def prefetch(
        self, tx: Transaction, batch: Sequence[Analysed], judged: Iterable[Models]
    ) -> None:
        """Read ahead the counts ``evaluate`` will read for every message of ``batch`` under
        each of ``judged`` (a user's model with the one it falls back on), in one query, so
        that the count cache answers each message's own read."""
        # why: a read per message; one a batch learns ~8 % faster on PostgreSQL
        # (docs/benchmarks.md, "Measurements behind the design").
        scopes: dict[str, None] = {}
        for models in judged:
            scopes.update(dict.fromkeys(self._fallback(models) or (models.own,)))
        tx.read_ahead(list(scopes), {tid for analysed in batch for tid in analysed.names()})

    def evaluate(self, tx: Transaction, models: Models, analysed: Analysed) -> Evaluation:
        """The model's scores for ``analysed`` over the classes that have learned a message
        (None until a junk and a not-junk class have), the learned messages per class and
        the learned counts of the message's tokens (a user's and the site-wide ones together,
        when a user's model falls back on the site-wide one)."""
        fallback = self._fallback(models)
        if fallback is None:
            totals, site = tx.totals(models.own), None
        else:
            both = tx.totals_of(fallback)
            totals, site = both[models.own], both[fallback[1]]
        learned = {
            label: totals.of(label).messages + (site.of(label).messages if site else 0)
            for label in self.classes
        }
        classes = scorable(learned, self.classes, self.junk)
        if classes is None:
            return Evaluation(None, learned)
        names = analysed.names()
        ids = list(names)
        site_counts = None
        if fallback is not None and site is not None:
            # why: one read of both models' counts, not one each (docs/benchmarks.md,
            # "A user's classify")
            both_counts = tx.counts_of(fallback, ids)
            own, site_counts = both_counts[models.own], both_counts[fallback[1]]
        else:
            own = tx.counts(models.own, ids)

        def found(
            lumps: Mapping[str, str] | None = None, only: Collection[str] | None = None
        ) -> _Found:
            """The message's counts in the user's model and the site-wide one (None
            without a fallback): lumped by side, or of the tokens ``only``, as asked."""
            theirs = None if site_counts is None else restricted(site_counts, names, only)
            return _Found(restricted(own, names, only), theirs, names, analysed.tokens, lumps)

        sides, only, side_blended = None, None, False
        if len(self.classes) > 2:
            # why: the verdict from the multi-class posteriors left junk-vs-not-junk worse
            # than two classes (docs/classes.md, "What the third class does to the spam
            # verdicts").
            sides, side_blended = self._score(
                found(lumps=self.lumps),
                totals=merge_totals(totals, self.classes, self.junk),
                site=None if site is None else merge_totals(site, self.classes, self.junk),
                vocabulary=lambda: merge_vocabulary_counts(
                    tx.all_message_counts(models.own), self.junk
                ),
                params=side_params(self.params),
                classes=SIDES,
            )
            if sides is None:
                return Evaluation(None, learned)
            # why: ten classes scored on the tokens that decided the verdict alone classify
            # in 1.5x the time of two, not 3.3x (docs/classes.md, "What it costs").
            only = deciding_tokens(sides, self.params)
        scored, blended = self._score(
            found(only=only),
            totals=totals,
            site=site,
            vocabulary=lambda: tx.all_message_counts(models.own),
            params=self.params,
            classes=classes,
        )
        if scored is None:
            return Evaluation(None, learned)
        # The counts of the models that judged the verdict.
        judging = judging_counts(own, site_counts, side_blended if sides is not None else blended)
        return Evaluation(scored, learned, names, judging, sides, analysed.ids)

    def _score(
        self,
        found: _Found,
        *,
        totals: scoring.ModelCounts,
        site: scoring.ModelCounts | None,
        vocabulary: Callable[[], Iterable[Mapping[str, int]]],
        params: scoring.ScoringParams,
        classes: tuple[str, ...],
    ) -> tuple[nb.Scored | None, bool]:
        """One model's scores over ``classes`` from the message's counts in a user's model
        (``found.mine``) blended with the site-wide one's (``found.theirs``) when given, and
        whether the blend scored (else the own model alone did); None before it can score."""
        if found.theirs is not None and site is not None:
            scored = scoring.score_user(
                found.mine,
                site=found.theirs,
                names=found.names,
                in_message=found.in_message,
                own_totals=totals,
                site_totals=site,
                params=params,
                classes=classes,
                lumps=found.lumps,
            )
            if scored is not None:
                return scored, True
        own_classes = scoring.scored_classes(totals, params)
        if own_classes is None:
            return None, False
        scored = scoring.score_counts(
            found.mine,
            names=found.names,
            in_message=found.in_message,
            totals=totals,
            vocabulary_counts=vocabulary(),
            params=params,
            classes=own_classes,
            lumps=found.lumps,
        )
        return scored, False

    def verdict_model(self, judged: Evaluation) -> tuple[nb.Scored, Collection[str]] | None:
        """The scores the verdict weighs and their junk classes: the side-merged model's
        (labels ham and spam) with more than two classes, else the classes' own; None before
        a score."""
        if judged.sides is not None:
            return judged.sides, (JUNK,)
        if judged.scored is None:
            return None
        return judged.scored, self.junk

    def verdict_odds(self, judged: Evaluation) -> float | None:
        """The log-odds of junk against not-junk the verdict weighs
        (``classes.junk_log_odds`` of ``verdict_model``); None before a score."""
        weighed = self.verdict_model(judged)
        return None if weighed is None else junk_log_odds(weighed[0].log_posteriors, weighed[1])

    def _fallback(self, models: Models) -> tuple[str, str] | None:
        """The user's scope and the site-wide one it falls back on, read together; None
        without a fallback (the site-wide model, or a fallback strength of 0)."""
        if models.site is None or not scoring.falls_back(self.params):
            return None
        return (models.own, models.site)

    def hidden(self, result: Classification) -> Classification:
        """``result`` as a caller who proved nothing sees it: namespaced clue values hidden
        (``exposure``), in its X-Spam headers too."""
        shown = hide_field_values(result)
        report = SpamReport(
            shown.verdict,
            shown.log_odds,
            shown.spam_probability,
            shown.clues,
            shown_class(shown.class_name, self.classes),
        )
        return replace(shown, mail_report=self._mail_report(report, shown.spam_cutoff))

    def _mail_report(self, report: SpamReport, spam_cut: float) -> MailReport:
        """The score on SpamAssassin's scale (see app.domain.spam_headers) and the headers."""
        return MailReport(
            is_spam=is_spam(report),
            score=shown_score(spam_score(report.log_odds, spam_cut), is_spam(report)),
            required=REQUIRED_SCORE,
            headers=spam_headers(report, spam_cut),
            action=self._action(report),
        )

    def _action(self, report: SpamReport) -> str:
        mail = self._settings.mail
        if report.verdict is not Verdict.SPAM or mail.spam_action == "accept":
            return "accept"
        if mail.spam_action == "reject":
            return "reject" if report.log_odds > mail.reject_log_odds else "accept"
        return "quarantine"

    def _classification(
        self, analysed: Analysed, judged: Evaluation, spam_cut: float
    ) -> Classification:
        learned = judged.learned
        weighed = self.verdict_model(judged)
        if judged.scored is None or weighed is None:
            uniform = -math.log(len(self.classes))
            posteriors = {label: uniform for label in self.classes}
            log_odds, found = 0.0, []
            probability = nb.probability(log_mass(posteriors, self.junk))
        else:
            # With more than two classes the verdict, P(junk) and the clues come from the
            # side-merged model, the class from the classes' posteriors (docs/classes.md).
            posteriors = judged.scored.log_posteriors
            verdict, junk = weighed
            log_odds = junk_log_odds(verdict.log_posteriors, junk)
            probability = nb.probability(log_mass(verdict.log_posteriors, junk))
            # The clues weigh the likeliest junk class against the likeliest other one
            # (spam against ham, when those are the classes).
            positive, negative = junk_pair(verdict.log_posteriors, junk)
            found = nb.clues(verdict, positive, negative, limit=self._settings.model.clues)
        thresholds = Thresholds(self._ham_cutoff, spam_cut, self.min_messages)
        decision: Decision = decide(log_odds, grouped_messages(learned, self.junk), thresholds)
        class_name = most_likely(posteriors)
        shown = shown_class(class_name, self.classes)
        report = SpamReport(decision.verdict, log_odds, probability, found, shown)
        return Classification(
            verdict=decision.verdict,
            reason=decision.reason,
            spam_probability=probability,
            log_odds=log_odds,
            class_name=class_name,
            log_posteriors=posteriors,
            clues=found,
            clue_counts=judged.counts_of(clue.token for clue in found),
            digest=analysed.digest,
            tokens=sum(analysed.tokens.values()),
            truncated=analysed.truncated,
            spam_cutoff=spam_cut,
            mail_report=self._mail_report(report, spam_cut),
            form=analysed.form,
        )
