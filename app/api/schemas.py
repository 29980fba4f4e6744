"""The HTTP contract: response models, the raw-message request body, documented errors.

Request bodies are raw RFC 822 bytes, not JSON, so they are described to OpenAPI with
``RAW_MESSAGE_BODY`` (``openapi_extra``) instead of a pydantic model. Each response model
carries an example; ``errors(...)`` lists the error codes a route can answer, each with an
example of what the server sends (``app.api.errors.ERROR_DOCS``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.errors import ERROR_DOCS, ERROR_HEADERS

EXAMPLE_MESSAGE = (
    "From: Alice Example <alice@example.org>\n"
    "To: Bob <bob@example.net>\n"
    "Subject: Lunch on Friday?\n"
    "Date: Thu, 6 Jun 2024 13:02:11 +0200\n"
    "Message-ID: <20240606110211.4711@example.org>\n"
    "MIME-Version: 1.0\n"
    "Content-Type: text/plain; charset=utf-8\n"
    "Content-Transfer-Encoding: 8bit\n"
    "\n"
    "Hi Bob,\n"
    "\n"
    "shall we try the new place near the station on Friday at noon?\n"
    "\n"
    "Alice\n"
)

EXAMPLE_TEXT = "WINNER! You have won a £1000 prize. Call 09061701461 to claim it now.\n"

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

# The 503 codes of every route that reads the database (body routes add ``overloaded``).
STORAGE_ERRORS = ("storage_unavailable", "storage_conflict")

METRICS_EXAMPLE = (
    "# HELP spamfilter_http_requests_total HTTP requests by method, route and status.\n"
    "# TYPE spamfilter_http_requests_total counter\n"
    'spamfilter_http_requests_total{method="POST",route="/v1/classify",status="200"} 42.0\n'
    "# HELP spamfilter_messages_total Service calls by call, adapter and outcome (a classify's "
    "outcome is its verdict).\n"
    "# TYPE spamfilter_messages_total counter\n"
    'spamfilter_messages_total{adapter="http",call="classify",outcome="ham"} 40.0\n'
    'spamfilter_messages_total{adapter="http",call="classify",outcome="spam"} 2.0\n'
)

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
                    "spam_cutoff": 10.0,
                    "class": "ham",
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
    spam_probability: float = Field(
        description="P(junk | message), in [0, 1]; saturates (P(spam | message) unless the "
        "site declares further junk classes)"
    )
    log_odds: float = Field(
        description="log P(junk|x) - log P(not junk|x), nats: log P(spam|x) - log P(ham|x) "
        "unless the site declares further classes (model.classes, model.junk_classes)"
    )
    spam_cutoff: float = Field(
        description="the log-odds above which the verdict is spam: calibrated on the ham "
        "this model has scored, or the configured one"
    )
    class_name: str = Field(
        alias="class",
        description="the most likely class: ham or spam, or another the site declares",
    )
    log_posteriors: dict[str, float] = Field(
        description="log P(class|x) per class, nats; a class that has learned no message "
        "is left out"
    )
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
                    "ham_scored": 1180,
                    "spam_cutoff": 11.5,
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
                    "ham_scored": 131,
                    "spam_cutoff": 11.5,
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
    ham_scored: int = Field(
        description="ham messages this model scored before learning them (halved past 20,000)"
    )
    spam_cutoff: float = Field(
        description="the log-odds above which this model's verdict is spam now"
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


_CONNECTION_CAP = (
    "past the connection cap (server.max_connections) the server itself answers 503 in "
    "plain text, before the request reaches the app"
)


def errors(*documented: int | str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the given error codes, each with its example.

    A code (``"invalid_user"``) documents that code; a status (``422``) every code of that
    status in ``ERROR_DOCS``. Codes of one status share one entry, one example each.
    """
    codes = [
        code
        for item in documented
        for code, doc in ERROR_DOCS.items()
        if item == code or item == doc.status
    ]
    by_status: dict[int, list[str]] = {}
    for code in dict.fromkeys(codes):
        by_status.setdefault(ERROR_DOCS[code].status, []).append(code)
    return {status: _error_response(status, group) for status, group in by_status.items()}


def _error_response(status: int, codes: list[str]) -> dict[str, Any]:
    meaning = [f"{ERROR_DOCS[code].summary} ({code})" for code in codes]
    if status == 503:
        meaning.append(_CONNECTION_CAP)
    examples = {
        code: {
            "summary": _sentence(ERROR_DOCS[code].summary),
            "value": {"error": code, "detail": ERROR_DOCS[code].detail},
        }
        for code in codes
    }
    headers = {name: spec for code in codes for name, spec in ERROR_HEADERS.get(code, {}).items()}
    response: dict[str, Any] = {
        "model": ErrorResponse,
        "description": _sentence("; ".join(meaning)),
        "content": {"application/json": {"examples": examples}},
    }
    if headers:
        response["headers"] = headers
    return response


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]
