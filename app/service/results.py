"""What the service's calls return, and the message form they are read in."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

from app.domain import naive_bayes as nb
from app.domain.decision import Reason
from app.domain.token_ids import token_ids
from app.domain.verdict import Verdict

# How to read the bytes given: as an RFC 822 message, as plain text without a header block
# (an SMS, a web form, a chat message), or "auto": a message when they start with a header
# field, else text. What was assumed is returned with every answer.
Form = Literal["rfc822", "text", "auto"]


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
    training) and an eval's classify-then-learn all reuse them. ``form`` says how the bytes
    were read: ``rfc822`` or ``text``.
    """

    digest: str
    tokens: Counter[str]
    truncated: bool
    legacy_digest: str | None = None
    form: str = "rfc822"
    message_id: str | None = None
    sender: str | None = None
    subject: str | None = None
    ids: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", token_ids(self.tokens))

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
    """A verdict and the numbers behind it (log values in nats).

    ``log_posteriors`` holds log P(c|x) of every class the model scored (a class that has
    learned nothing is absent: its probability is 0); ``class_name`` is the most likely of
    them. ``log_odds`` and ``spam_probability`` weigh the junk classes against the others
    (``app.domain.classes``): with the classes ham and spam, log P(spam|x) − log P(ham|x)
    and P(spam|x)."""

    verdict: Verdict
    reason: Reason | None
    spam_probability: float
    log_odds: float
    class_name: str
    log_posteriors: dict[str, float]
    clues: list[nb.Clue]
    digest: str
    tokens: int
    truncated: bool
    # The log-odds above which this message is spam (see app.service.cutoffs).
    spam_cutoff: float
    # The verdict as mail servers see it (score, X-Spam headers, action).
    mail_report: MailReport
    form: str = "rfc822"
    # Per clue token: learned messages holding it in each label (see Judge.evaluate).
    clue_counts: dict[str, dict[str, int]] = field(default_factory=dict)


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
    form: str = "rfc822"


@dataclass(frozen=True, slots=True)
class LabelSummary:
    """Learned messages and token occurrences of one label."""

    messages: int
    tokens: int


@dataclass(frozen=True, slots=True)
class Stats:
    """What the model holds in one scope (``user`` None: the site-wide model)."""

    labels: dict[str, LabelSummary]
    vocabulary: int
    database: str
    scope: str
    user: str | None = None
    # Ham scores the model's spam cut-off is chosen from, and that cut-off (app.service.cutoffs).
    ham_scored: int = 0
    spam_cutoff: float = 0.0
