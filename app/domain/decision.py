"""From a log-odds score to a verdict: ham / unsure / spam, with a machine-readable reason."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from app.domain.verdict import Verdict


class Reason(StrEnum):
    """Why a verdict is not simply the score against the thresholds."""

    NOT_ENOUGH_TRAINING = "not_enough_training"
    BETWEEN_THRESHOLDS = "between_thresholds"


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Cut-offs on the log-odds log P(spam|x) - log P(ham|x), in nats.

    spam when log_odds > spam; ham when log_odds < ham; unsure in between.
    ``min_messages`` is how many learned messages each label needs before any verdict
    other than unsure is given.
    """

    ham: float
    spam: float
    min_messages: int

    def __post_init__(self) -> None:
        if math.isnan(self.ham) or math.isnan(self.spam):
            raise ValueError("thresholds must be numbers, not NaN")
        if self.ham > self.spam:
            raise ValueError("the ham threshold must not exceed the spam threshold")
        if self.min_messages < 0:
            raise ValueError("min_messages must be >= 0")


@dataclass(frozen=True, slots=True)
class Decision:
    """A verdict and, when it is unsure, why."""

    verdict: Verdict
    reason: Reason | None


def decide(log_odds: float, learned: Mapping[str, int], thresholds: Thresholds) -> Decision:
    """The verdict for ``log_odds`` given the learned-message counts per label."""
    if any(count < max(thresholds.min_messages, 1) for count in learned.values()):
        return Decision(Verdict.UNSURE, Reason.NOT_ENOUGH_TRAINING)
    if log_odds > thresholds.spam:
        return Decision(Verdict.SPAM, None)
    if log_odds < thresholds.ham:
        return Decision(Verdict.HAM, None)
    return Decision(Verdict.UNSURE, Reason.BETWEEN_THRESHOLDS)


def worth_learning(
    log_odds: float | None,
    *,
    label: str,
    positive: str,
    margin: float,
    label_messages: int = 0,
    min_messages: int = 0,
    novelty: float = 0.0,
    novelty_margin: float = 0.0,
) -> bool:
    """Thick training: learn unless the model already gets ``label`` right by ``margin`` nats
    and knows most of the message.

    ``log_odds`` is None when the model cannot score yet (a label has no messages): learn.
    Right means on the correct side of 0 (log P(positive|x) > log P(other|x) for positive).
    A label with ``label_messages`` < ``min_messages`` learned messages learns every message:
    verdicts wait for that many of each label (see ``decide``), and skipping confident
    messages could hold them back for ever.

    ``novelty`` is the share of the message's distinct tokens the model has never learned
    (0 to 1). With ``novelty_margin`` > 0, a message at least that new is learned however
    confidently it is judged: a server's stream drifts (new campaigns, new senders, new
    relays), and a model that skips what it already calls right by the margin would stop
    learning the new while its long, header-rich messages still score far from 0.
    """
    if log_odds is None:
        return True
    if label_messages < min_messages:
        return True
    right = (log_odds > 0) == (label == positive)
    if not right or abs(log_odds) <= margin:
        return True
    return 0 < novelty_margin <= novelty
