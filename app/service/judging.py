"""Judging a message: bytes to tokens (``reading``), tokens to counts, counts to a verdict
and its report.

``Judge`` holds what shapes tokens and scores (its reader, model settings, thresholds); it
opens read transactions of its own for ``classify`` and scores inside the learner's write
transaction for thick training (``evaluate``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from app.domain import fallback
from app.domain import naive_bayes as nb
from app.domain.decision import Decision, Thresholds, Verdict, decide
from app.domain.labels import LABELS, Label
from app.domain.spam_headers import (
    REQUIRED_SCORE,
    SpamReport,
    is_spam,
    shown_class,
    shown_score,
    spam_headers,
    spam_score,
)
from app.domain.tokenizer import token_kind
from app.service.cutoffs import CutOffs
from app.service.reading import Reader
from app.service.results import Analysed, Classification, Form, MailReport
from app.service.scoping import Models
from app.settings.schema import Settings
from app.storage.store import ModelTotals, Store, TokenStats, Transaction


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A message scored against a model: the scores (None before every label has learned a
    message), learned messages per label, and the learned counts of its tokens, one map per
    model that judged (a user's, then the site-wide one)."""

    scored: nb.Scored | None
    learned: dict[str, int]
    names: Mapping[int, str] = field(default_factory=dict)
    counts: tuple[Mapping[int, Mapping[str, TokenStats]], ...] = ()

    def novelty(self) -> float:
        """The share of the message's distinct tokens that no model that judged has learned
        (0 to 1; 0 when nothing was scored)."""
        if not self.names:
            return 0.0
        known = {
            tid
            for counts in self.counts
            for tid, per in counts.items()
            if any(stats.occurrences > 0 for stats in per.values())
        }
        return 1.0 - len(known) / len(self.names)

    def counts_of(self, tokens: Iterable[str]) -> dict[str, dict[str, int]]:
        """Per token, the learned messages holding it in each label, over the models that
        judged."""
        ids = {name: tid for tid, name in self.names.items()}
        shown: dict[str, dict[str, int]] = {}
        for token in tokens:
            per = dict.fromkeys(LABELS, 0)
            tid = ids.get(token)
            for counts in self.counts:
                found = counts.get(tid, {}) if tid is not None else {}
                for label, stats in found.items():
                    per[label] = per.get(label, 0) + stats.messages
            shown[token] = per
        return shown


def _spam_odds(scored: nb.Scored) -> float:
    return scored.log_odds(Label.SPAM, Label.HAM)


class Judge:
    """Reads messages and scores them against the learned counts of a scope."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self._settings = settings
        self.reader = Reader(settings)
        # The spam cut-off is chosen per verdict (``cutoffs``); these are fixed.
        self._ham_cutoff = settings.decision.ham_log_odds
        self.min_messages = settings.decision.min_messages
        self.cutoffs = CutOffs(settings)

    def analyse(self, raw: bytes, legacy: bool = False, form: Form = "rfc822") -> Analysed:
        """``raw`` read as ``form`` (see ``Reader.analyse``)."""
        return self.reader.analyse(raw, legacy, form)

    def classify(self, analysed: Analysed, models: Models) -> Classification:
        """Score ``analysed`` against the learned counts of ``models`` (read-only)."""
        with self._store.transaction(write=False) as tx:
            judged = self.evaluate(tx, models, analysed)
            spam_cut = self.cutoffs.spam_cutoff(tx, models)
        return self._classification(analysed, judged, spam_cut)

    def evaluate(self, tx: Transaction, models: Models, analysed: Analysed) -> Evaluation:
        """The model's scores for ``analysed`` (None until every label has a message), the
        learned messages per label and the learned counts of the message's tokens (a user's
        and the site-wide ones together, when a user's model falls back on the site-wide
        one)."""
        totals = tx.totals(models.own)
        site = self._fallback_totals(tx, models)
        learned = {
            label: totals.of(label).messages + (site.of(label).messages if site else 0)
            for label in LABELS
        }
        if not all(learned.values()):
            return Evaluation(None, learned)
        names = analysed.names()
        ids = list(names)
        own = tx.counts(models.own, ids)
        if site is not None and models.site is not None:
            site_counts = tx.counts(models.site, ids)
            own_evidence = self._evidence(analysed, names, own)
            site_evidence = self._evidence(analysed, names, site_counts)
            scored = self._blended(own_evidence, totals, site_evidence, site)
            if scored is not None:
                if self._has_own_verdicts(totals):
                    # The site-wide model helps catch spam, but never condemns on its own what
                    # the user's own model calls ham: the lower of the two log-odds is served.
                    mine = self._own_multinomial(own_evidence, totals)
                    if _spam_odds(mine) < _spam_odds(scored):
                        scored = mine
                return Evaluation(scored, learned, names, (own, site_counts))
        if not all(totals.of(label).messages for label in LABELS):
            return Evaluation(None, learned)
        scored = self._score(tx, models.own, analysed, names, own, totals)
        return Evaluation(scored, learned, names, (own,))

    def _has_own_verdicts(self, totals: ModelTotals) -> bool:
        """Whether a user's own model has learned enough of every label to give verdicts."""
        needed = max(self.min_messages, 1)
        return all(totals.of(label).messages >= needed for label in LABELS)

    def _fallback_totals(self, tx: Transaction, models: Models) -> ModelTotals | None:
        """The site-wide totals a user's model falls back on; None without a fallback (a
        Bernoulli model is never blended)."""
        if (
            models.site is None
            or self._settings.users.fallback_strength <= 0
            or self._settings.model.kind == "bernoulli"
        ):
            return None
        return tx.totals(models.site)

    def mail_report(self, result: Classification) -> MailReport:
        """The score on SpamAssassin's scale (see app.domain.spam_headers) and the headers."""
        shown = shown_class(result.class_name, self._settings.model.classes)
        report = SpamReport(
            result.verdict, result.log_odds, result.spam_probability, result.clues, shown
        )
        spam_cut = result.spam_cutoff
        return MailReport(
            is_spam=is_spam(report),
            score=shown_score(spam_score(result.log_odds, spam_cut), is_spam(report)),
            required=REQUIRED_SCORE,
            headers=spam_headers(report, spam_cut),
            action=self._action(result),
        )

    def _action(self, result: Classification) -> str:
        mail = self._settings.mail
        if result.verdict is not Verdict.SPAM or mail.spam_action == "accept":
            return "accept"
        if mail.spam_action == "reject":
            return "reject" if result.log_odds > mail.reject_log_odds else "accept"
        return "quarantine"

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
        return self._own_multinomial(self._evidence(analysed, names, counts), totals)

    def _own_multinomial(self, evidence: list[nb.Evidence], totals: ModelTotals) -> nb.Scored:
        """The multinomial score of ``evidence`` against one model's own totals."""
        model = self._settings.model
        return self._multinomial(
            evidence,
            self._class_totals(totals),
            totals.vocabulary,
            model.alpha,
            model.distinct_min_messages or None,
        )

    def _blended(
        self,
        own: list[nb.Evidence],
        own_totals: ModelTotals,
        site: list[nb.Evidence],
        site_model: ModelTotals,
    ) -> nb.Scored | None:
        """A user's multinomial score with the site-wide model as prior (``fallback``); None
        where there is no prior to blend (a site-wide label without tokens)."""
        model = self._settings.model
        site_totals = self._class_totals(site_model)
        if not all(t.tokens > 0 for t in site_totals.values()):
            return None
        evidence, class_totals = fallback.blend(
            own,
            self._class_totals(own_totals),
            site,
            site_totals,
            site_model.vocabulary,
            model.alpha,
            self._settings.users.fallback_strength,
            model.distinct_min_messages or None,
            token_kind if model.top_per_kind else None,
        )
        return self._multinomial(evidence, class_totals, 0, 0.0, None)

    def _evidence(
        self,
        analysed: Analysed,
        names: Mapping[int, str],
        counts: Mapping[int, Mapping[str, TokenStats]],
    ) -> list[nb.Evidence]:
        """The message's tokens with their learned counts (messages under presence counting,
        else occurrences); tokens without occurrences are left out."""
        presence = self._settings.model.counting == "presence"
        tokens = analysed.tokens
        evidence: list[nb.Evidence] = []
        # A plain loop: a generator per token to test its occurrences took a tenth of a learn.
        for tid, per in counts.items():
            learned: dict[str, float] = {}
            seen = False
            for label, stats in per.items():
                learned[label] = stats.messages if presence else stats.occurrences
                if stats.occurrences > 0:
                    seen = True
            if seen:
                name = names[tid]
                evidence.append(nb.Evidence(name, 1 if presence else tokens[name], learned))
        return evidence

    def _class_totals(self, totals: ModelTotals) -> dict[str, nb.ClassTotals]:
        presence = self._settings.model.counting == "presence"
        return {
            lb: nb.ClassTotals(
                totals.of(lb).messages,
                totals.of(lb).token_messages if presence else totals.of(lb).occurrences,
            )
            for lb in LABELS
        }

    def _multinomial(
        self,
        evidence: list[nb.Evidence],
        class_totals: Mapping[str, nb.ClassTotals],
        vocabulary: int,
        alpha: float,
        distinct: int | None,
    ) -> nb.Scored:
        model = self._settings.model
        top = model.top_tokens or None
        kind = token_kind if model.top_per_kind else None
        floor = model.length_floor if model.normalise_length else None
        return nb.multinomial(evidence, class_totals, vocabulary, alpha, top, kind, floor, distinct)

    def _classification(
        self, analysed: Analysed, judged: Evaluation, spam_cut: float
    ) -> Classification:
        scored, learned = judged.scored, judged.learned
        if scored is None:
            uniform = -math.log(len(LABELS))
            posteriors = {label: uniform for label in LABELS}
            log_odds, found = 0.0, []
        else:
            posteriors = scored.log_posteriors
            log_odds = scored.log_odds(Label.SPAM, Label.HAM)
            found = nb.clues(scored, Label.SPAM, Label.HAM, self._settings.model.clues)
        thresholds = Thresholds(self._ham_cutoff, spam_cut, self.min_messages)
        decision: Decision = decide(log_odds, learned, thresholds)
        return Classification(
            verdict=decision.verdict,
            reason=decision.reason,
            spam_probability=nb.probability(posteriors[Label.SPAM]),
            log_odds=log_odds,
            log_posteriors=posteriors,
            clues=found,
            clue_counts=judged.counts_of(clue.token for clue in found),
            digest=analysed.digest,
            tokens=sum(analysed.tokens.values()),
            truncated=analysed.truncated,
            spam_cutoff=spam_cut,
            form=analysed.form,
        )
