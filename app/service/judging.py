"""Judging a message: bytes to tokens, tokens to counts, counts to a verdict and its report.

``Judge`` holds what shapes tokens and scores (tokenizer limits, model settings,
thresholds); it opens read transactions of its own for ``classify`` and scores inside the
learner's write transaction for thick training (``evaluate``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from app.domain import naive_bayes as nb
from app.domain.decision import Decision, Thresholds, Verdict, decide
from app.domain.labels import LABELS, Label
from app.domain.message import MimeLimits, NotAMessage, parse, parse_text
from app.domain.spam_headers import (
    REQUIRED_SCORE,
    SpamReport,
    is_spam,
    shown_score,
    spam_headers,
    spam_score,
)
from app.domain.tokenizer import TokenizerOptions, token_kind, tokenize
from app.errors import InvalidMessage, MessageTooLarge
from app.service.results import Analysed, Classification, Form, MailReport
from app.settings import Settings
from app.storage.store import ModelTotals, Store, TokenStats, Transaction


class Judge:
    """Reads messages and scores them against the learned counts of a scope."""

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
        self.thresholds = Thresholds(
            ham=settings.decision.ham_log_odds,
            spam=settings.decision.spam_log_odds,
            min_messages=settings.decision.min_messages,
        )

    def analyse(self, raw: bytes, legacy: bool = False, form: Form = "rfc822") -> Analysed:
        """Parse and tokenise ``raw`` read as ``form``; raises MessageTooLarge or
        InvalidMessage. With ``legacy``, the digest an older version gave the same bytes too
        (learning needs it)."""
        limit = self._settings.server.max_message_bytes
        if len(raw) > limit:
            raise MessageTooLarge(f"message is {len(raw)} bytes; the limit is {limit}")
        scan = self._settings.tokenizer.scan_bytes
        read_as = "rfc822"
        try:
            if form == "text":
                read_as, parsed = "text", parse_text(raw, scan)
            else:
                parsed = parse(raw, scan, self._mime_limits, legacy)
        except NotAMessage as error:
            if form != "auto":
                raise InvalidMessage(str(error)) from error
            try:
                read_as, parsed = "text", parse_text(raw, scan)
            except NotAMessage as text_error:
                raise InvalidMessage(str(text_error)) from text_error
        tokens = tokenize(parsed, self._options)
        return Analysed(parsed.digest, tokens, parsed.truncated, parsed.legacy_digest, read_as)

    def classify(self, analysed: Analysed, scope: str) -> Classification:
        """Score ``analysed`` against the learned counts of ``scope`` (read-only)."""
        with self._store.transaction(write=False) as tx:
            scored, learned = self.evaluate(tx, scope, analysed)
        return self._classification(analysed, scored, learned)

    def evaluate(
        self, tx: Transaction, scope: str, analysed: Analysed
    ) -> tuple[nb.Scored | None, dict[str, int]]:
        """The model's scores for ``analysed`` (None until every label has a message), and
        the learned messages per label."""
        totals = tx.totals(scope)
        learned = {label: totals.of(label).messages for label in LABELS}
        if not all(learned.values()):
            return None, learned
        names = analysed.names()
        counts = tx.counts(scope, list(names))
        return self._score(tx, scope, analysed, names, counts, totals), learned

    def mail_report(self, result: Classification) -> MailReport:
        """The score on SpamAssassin's scale (see app.domain.spam_headers) and the headers."""
        report = SpamReport(result.verdict, result.log_odds, result.spam_probability, result.clues)
        spam_cut = self.thresholds.spam
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
        decision: Decision = decide(log_odds, learned, self.thresholds)
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
            form=analysed.form,
        )
