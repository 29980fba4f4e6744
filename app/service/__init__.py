"""The one service every adapter calls: classify, learn, forget, stats, and the upkeep of
the learned data.

``SpamFilter`` (``facade``) is the entry point; the use cases behind it are judging a
message (``judging``, with a user's model blended with the site-wide one: ``scoping`` and
``app.domain.fallback``), feedback (``learning``), users (``accounts``), export, import and
backup (``transfer``) and expiry (``upkeep``); ``results`` holds what they return and
``events`` what observers are told of each call. Each public call is one database
transaction (expiry and export: one per model; a batch of learns: one per batch, see
``SpamFilter.learn_many``), opened and committed here; adapters never see a connection.
"""

from app.service.accounts import DeletedUser, UserSummary
from app.service.facade import SpamFilter
from app.service.results import (
    Analysed,
    Classification,
    FeedbackResult,
    Form,
    LabelSummary,
    MailReport,
    Outcome,
    Stats,
)

__all__ = [
    "Analysed",
    "Classification",
    "DeletedUser",
    "FeedbackResult",
    "Form",
    "LabelSummary",
    "MailReport",
    "Outcome",
    "SpamFilter",
    "Stats",
    "UserSummary",
]
