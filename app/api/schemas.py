"""The HTTP contract: response models, the raw-message request body, documented errors.

Request bodies are raw RFC 822 bytes, not JSON, so they are described to OpenAPI with
``RAW_MESSAGE_BODY`` (``openapi_extra``) instead of a pydantic model. Each response model
carries an example; ``errors(...)`` lists the error statuses a route can answer.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

EXAMPLE_MESSAGE = (
    "From: Alice <alice@example.org>\n"
    "To: bob@example.net\n"
    "Subject: Lunch on Friday?\n"
    "Message-ID: <1@example.org>\n"
    "\n"
    "Shall we try the new place near the station?\n"
)

EXAMPLE_TEXT = "WINNER! You have won a prize. Call 09061701461 to claim it now.\n"

RAW_MESSAGE_BODY: dict[str, Any] = {
    "requestBody": {
        "description": "The raw message, headers and body, exactly as received (RFC 822), or "
        "plain text without a header block (an SMS, a web form, a chat message). The "
        "Content-Type says which: `message/rfc822` reads an RFC 822 message (400 if the body "
        "is none), `text/plain` reads text, and any other type (none, "
        "`application/octet-stream`, curl's default form type) reads a message when the body "
        "starts with a header field and text otherwise; JSON and form uploads are refused "
        "(415). The reply's `form` says how the body was read.",
        "content": {
            "message/rfc822": {
                "schema": {"type": "string", "format": "binary"},
                "example": EXAMPLE_MESSAGE,
            },
            "text/plain": {"schema": {"type": "string"}, "example": EXAMPLE_TEXT},
        },
        "required": True,
    }
}

# classify works without a token; with one it shows every clue (see the route's description).
# Merged into the operation after FastAPI's own ``security`` list, it makes the token optional.
OPTIONAL_TOKEN: dict[str, Any] = {"security": [{}]}

DIGEST_EXAMPLE = "9f2b6d1c3a4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8"


class ClueResponse(BaseModel):
    """One token and how far it moved the log-odds (nats; > 0 towards spam)."""

    token: str
    weight: float


class MailReportResponse(BaseModel):
    """The verdict as a mail server sees it (the same report spamd, milter and filter use)."""

    is_spam: bool = Field(description="true only for a spam verdict")
    score: float = Field(description="SpamAssassin scale: the spam cut-off is `required`")
    required: float = Field(description="the score at the spam cut-off (5.0)")
    headers: list[tuple[str, str]] = Field(
        description="X-Spam-* header fields (name, value) to add at the top of the message"
    )


class ClassifyResponse(BaseModel):
    """A verdict and the numbers behind it. Log values are natural logarithms (nats)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "verdict": "ham",
                    "spam_probability": 0.0231,
                    "log_odds": -3.744,
                    "log_posteriors": {"ham": -0.0234, "spam": -3.7676},
                    "clues": [{"token": "subject:lunch", "weight": -1.92}],
                    "digest": DIGEST_EXAMPLE,
                    "reason": None,
                    "tokens": 17,
                    "truncated": False,
                    "form": "rfc822",
                    "mail": {
                        "is_spam": False,
                        "score": -1.9,
                        "required": 5.0,
                        "headers": [
                            [
                                "X-Spam-Status",
                                "No, score=-1.9 required=5.0 tests=subject:lunch(-1.92) "
                                "version=spamfilter",
                            ],
                            ["X-Spam-Level", ""],
                            ["X-Spam-Verdict", "ham; log-odds=-3.74; probability=0.023100"],
                        ],
                    },
                }
            ]
        }
    )

    verdict: Literal["ham", "unsure", "spam"]
    spam_probability: float = Field(description="P(spam | message), in [0, 1]; saturates")
    log_odds: float = Field(description="log P(spam|x) - log P(ham|x), nats")
    log_posteriors: dict[str, float] = Field(description="log P(label|x) per label, nats")
    clues: list[ClueResponse] = Field(description="tokens that moved the score most")
    digest: str = Field(description="hex SHA-256 of the normalised message")
    reason: str | None = Field(
        description="why the verdict is unsure: not_enough_training or between_thresholds"
    )
    tokens: int = Field(description="token occurrences in the message")
    mail: MailReportResponse = Field(description="score and X-Spam headers for mail servers")
    truncated: bool = Field(description="only the first part of a large message was read")
    form: Literal["rfc822", "text"] = Field(
        "rfc822", description="how the body was read: as an RFC 822 message, or as plain text"
    )


class FeedbackResponse(BaseModel):
    """What learning a message did."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"digest": DIGEST_EXAMPLE, "label": "spam", "form": "rfc822", "outcome": "learned"}
            ]
        }
    )

    digest: str
    label: str = Field(description="the label the message is now learned as")
    form: Literal["rfc822", "text"] = Field(
        "rfc822", description="how the body was read: as an RFC 822 message, or as plain text"
    )
    outcome: Literal["learned", "relabelled", "unchanged", "skipped"] = Field(
        description="skipped: thick training, the model already gets the message right"
    )


class ForgetResponse(BaseModel):
    """What forgetting a message did."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"digest": DIGEST_EXAMPLE, "outcome": "forgotten", "form": "rfc822"}]
        }
    )

    digest: str
    outcome: Literal["forgotten", "unknown"]
    form: Literal["rfc822", "text"] = Field(
        "rfc822", description="how the body was read: as an RFC 822 message, or as plain text"
    )


class LabelStatsResponse(BaseModel):
    """Learned messages and token occurrences of one label."""

    messages: int
    tokens: int


class StatsResponse(BaseModel):
    """What the model holds."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "labels": {
                        "ham": {"messages": 1200, "tokens": 310000},
                        "spam": {"messages": 800, "tokens": 240000},
                    },
                    "vocabulary": 52000,
                    "database": "sqlite",
                    "scope": "global",
                    "user": None,
                },
                {
                    "labels": {
                        "ham": {"messages": 140, "tokens": 36000},
                        "spam": {"messages": 25, "tokens": 7100},
                    },
                    "vocabulary": 9100,
                    "database": "postgresql",
                    "scope": "global/user:alice@example.org",
                    "user": "alice@example.org",
                },
            ]
        }
    )

    labels: dict[str, LabelStatsResponse]
    vocabulary: int = Field(description="distinct tokens with a non-zero count")
    database: Literal["sqlite", "postgresql"]
    scope: str
    user: str | None = Field(
        None, description="whose own model this is (normalised); null for the site-wide model"
    )


class UserResponse(BaseModel):
    """One user with a model of their own."""

    user: str = Field(description="the user name, normalised (lowercase)")
    scope: str = Field(description="the scope holding the user's counts")
    messages: dict[str, int] = Field(description="learned messages per label")
    vocabulary: int = Field(description="distinct tokens in the user's own model")


class UsersResponse(BaseModel):
    """Every user with a model of their own, by name."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "users": [
                        {
                            "user": "alice@example.org",
                            "scope": "global/user:alice@example.org",
                            "messages": {"ham": 140, "spam": 25},
                            "vocabulary": 9100,
                        }
                    ]
                }
            ]
        }
    )

    users: list[UserResponse]


class DeletedUserResponse(BaseModel):
    """What deleting a user removed from their own model (the site-wide model is untouched)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "user": "alice@example.org",
                    "scope": "global/user:alice@example.org",
                    "messages": 165,
                    "tokens": 9100,
                }
            ]
        }
    )

    user: str
    scope: str
    messages: int = Field(description="learned-message records deleted")
    tokens: int = Field(description="distinct tokens (count rows) deleted")


class HealthResponse(BaseModel):
    """Liveness or readiness."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"status": "ok"}]})

    status: str


class ErrorResponse(BaseModel):
    """Every error: a machine-readable code and a human explanation."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"error": "invalid_message", "detail": "input is not a message"}]
        }
    )

    error: str
    detail: str


_ERROR_TEXT = {
    400: "Not a message (invalid_message), e.g. an empty body",
    401: "Missing or wrong bearer token (not_authenticated)",
    403: "An administrative call on a server without API tokens (admin_disabled): configure "
    "api_tokens first",
    404: "The user has no model of their own (unknown_user)",
    408: "The message did not arrive within the read timeout (request_timeout)",
    413: "Message over the size cap (message_too_large)",
    415: "A body declared as JSON or a form upload (unsupported_media_type): send the raw "
    "message or text",
    422: "Bad or missing parameter (invalid_label, invalid_user, invalid_request)",
    503: "Database unavailable, not migrated, or busy (storage_unavailable, storage_conflict), "
    "or too many message bytes in flight (overloaded, with Retry-After); past the connection "
    "cap the server itself answers 503 in plain text",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the given error statuses."""
    return {
        status: {"model": ErrorResponse, "description": _ERROR_TEXT[status]} for status in statuses
    }
