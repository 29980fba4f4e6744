"""The one service every adapter calls: classify, learn, forget, stats.

``SpamFilter`` (``facade``) is the entry point; the use cases behind it are judging a
message (``judging``) and feedback (``learning``), and ``results`` holds what they return.
Each public call is one database transaction, opened and committed here; adapters never see
a connection.
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
