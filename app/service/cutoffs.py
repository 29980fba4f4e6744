"""The spam cut-off each verdict is judged against, and the ham scores it is chosen from.

With ``decision.calibrate`` (the default) the cut-off of a model follows the ham that
feedback brought it (``app.domain.cutoff``): each new ham message's log-odds, as the model
scored it just before learning it, goes into the model's histogram, and a verdict is spam
above the lowest cut-off in [spam_log_odds, spam_log_odds_max] with at most
``ham_loss_pct`` of those scores above it, or past the ceiling when the ham above it shows
it too low (``ceiling_confidence``). A user's model is judged by its own ham once it
has scored ``min_ham`` of them, and by the site-wide model's before when it falls back on
that model (``users.fallback_strength`` > 0: a new user's scores are then the site-wide
model's). Without calibration the cut-off is ``spam_log_odds``.
"""

from __future__ import annotations

from app.domain.cutoff import Calibration, score_bin, spam_cutoff
from app.service.scoping import Models
from app.settings.schema import Settings
from app.storage.store import Transaction


class CutOffs:
    """Choose the spam cut-off of a model and record the ham scores it comes from."""

    def __init__(self, settings: Settings) -> None:
        decision = settings.decision
        self.floor = decision.spam_log_odds
        self._fallback = settings.users.fallback_strength > 0
        self._calibration = (
            Calibration(
                floor=decision.spam_log_odds,
                ceiling=decision.spam_log_odds_max,
                ham_rate=decision.ham_loss_pct / 100,
                min_ham=decision.min_ham,
                confidence=decision.ceiling_confidence,
            )
            if decision.calibrate
            else None
        )

    @property
    def calibrated(self) -> bool:
        """Whether the cut-off follows the ham scores (else it is ``floor``)."""
        return self._calibration is not None

    def spam_cutoff(self, tx: Transaction, models: Models) -> float:
        """The cut-off for a verdict of ``models`` (one query, two for a new user's model)."""
        if self._calibration is None:
            return self.floor
        return self.state(tx, models)[1]

    def state(self, tx: Transaction, models: Models) -> tuple[int, float]:
        """How many ham scores the model of ``models.own`` holds (halved past
        ``HALVE_AT``), and the cut-off a verdict of ``models`` has now."""
        scores = tx.ham_scores()
        histogram = scores.histogram(models.own)
        scored = sum(histogram)
        calibration = self._calibration
        if calibration is None:
            return scored, self.floor
        if self._fallback and models.site is not None and scored < calibration.min_ham:
            return scored, spam_cutoff(scores.histogram(models.site), calibration)
        return scored, spam_cutoff(histogram, calibration)

    def ham_bin(self, log_odds: float | None) -> int | None:
        """The histogram bin a new ham message that scored ``log_odds`` before it was
        learned goes to (the learner adds it, and the message's record keeps it so that
        forgetting or relabelling the message takes the score back out); None without
        calibration or when the model could not score it yet."""
        if self._calibration is None or log_odds is None:
            return None
        return score_bin(log_odds)
