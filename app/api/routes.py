"""The HTTP routes: each reads the request, calls one service function, renders the result.

Handlers are ``async`` so that the body is read on the event loop (under the size cap, the
read deadline and the byte budget: see ``app.api.body``), while every service call —
synchronous SQLAlchemy, plus parsing and tokenising — runs in a worker thread, at most
``server.service_threads`` at once (``app.api.calls``): the event loop never waits on the
database. Readiness and stats do not queue behind them. No business rule lives here.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.concurrency import run_in_threadpool

from app.api.body import message_form, received_message
from app.api.calls import INLINE_BYTES, call_service, run_inline
from app.api.dependencies import MetricsDep, ServiceDep, TrustedDep, require_token
from app.api.schemas import (
    METRICS_EXAMPLE,
    OPTIONAL_TOKEN,
    RAW_MESSAGE_BODY,
    STORAGE_ERRORS,
    ClassifyResponse,
    ClueResponse,
    FeedbackResponse,
    ForgetResponse,
    HealthResponse,
    StatsResponse,
    errors,
)
from app.domain.labels import LABELS
from app.service import Classification, Stats
from app.service.accounts import stats_document

router = APIRouter()

LabelQuery = Annotated[
    str,
    Query(
        description=f"What the message is: one of the site's classes (`model.classes`): "
        f"{', '.join(LABELS)} unless it declares more. Another is a 422 (invalid_label) "
        "that names them.",
        examples=["spam"],
    ),
]

UserQuery = Annotated[
    str | None,
    Query(
        description="Whose model: a mail user (an address or a login, compared without case). "
        "Classify blends the user's own counts with the site-wide model's; feedback trains "
        "the user's model (and the site-wide one, by `users.train_site`); forget removes from "
        "both what the feedback added. Left out: the site-wide model. A name that cannot be "
        "a user (control characters, white space, `/`, over 150 characters) is a 422 "
        "(invalid_user).",
        examples=["alice@example.org"],
    ),
]


@router.post(
    "/v1/classify",
    tags=["filter"],
    summary="Classify a message",
    response_model=ClassifyResponse,
    responses=errors(400, 408, 413, 415, "invalid_user", 503),
    openapi_extra={**RAW_MESSAGE_BODY, **OPTIONAL_TOKEN},
)
async def classify(
    request: Request,
    service: ServiceDep,
    trusted: TrustedDep,
    user: UserQuery = None,
) -> ClassifyResponse:
    """Score the raw message: ham, unsure or spam, with the log-odds and the top clues.

    Open to every caller. When the server has API tokens configured and the request carries
    none (or a wrong one), the clues that are header, address, URL or MIME tokens (those
    with a namespace, such as `from:addr:alice@example.org`) keep their weight but have their
    value hidden (`from:addr:*`), here and in the X-Spam headers: only token holders see
    which addresses, relays and hosts the model has learned. Body words are always shown.
    """
    form = message_form(request)
    async with received_message(request) as raw:
        call = run_inline if len(raw) <= INLINE_BYTES else call_service
        result = await call(request, service.classify, raw, user, form=form, anonymous=not trusted)
    return render_classification(result)


@router.post(
    "/v1/feedback",
    tags=["filter"],
    summary="Learn a message as spam or ham",
    response_model=FeedbackResponse,
    responses=errors(400, 401, 408, 413, 415, 422, 503),
    openapi_extra=RAW_MESSAGE_BODY,
    dependencies=[Depends(require_token)],
)
async def feedback(
    request: Request,
    label: LabelQuery,
    service: ServiceDep,
    user: UserQuery = None,
) -> FeedbackResponse:
    """Learn the raw message as ``label``: learned, relabelled, unchanged or skipped."""
    form = message_form(request)
    async with received_message(request) as raw:
        result = await call_service(request, service.learn, raw, label, user, form=form)
    return FeedbackResponse.model_validate(
        {
            "digest": result.digest,
            "label": str(result.label),
            "outcome": result.outcome.value,
            "form": result.form,
        }
    )


@router.post(
    "/v1/forget",
    tags=["filter"],
    summary="Forget a learned message",
    response_model=ForgetResponse,
    responses=errors(400, 401, 408, 413, 415, "invalid_user", 503),
    openapi_extra=RAW_MESSAGE_BODY,
    dependencies=[Depends(require_token)],
)
async def forget(request: Request, service: ServiceDep, user: UserQuery = None) -> ForgetResponse:
    """Remove what learning the raw message added: forgotten, or unknown if never learned."""
    form = message_form(request)
    async with received_message(request) as raw:
        result = await call_service(request, service.forget, raw, user, form=form)
    return ForgetResponse.model_validate(
        {"digest": result.digest, "outcome": result.outcome.value, "form": result.form}
    )


@router.get(
    "/v1/stats",
    tags=["filter"],
    summary="What the model has learned",
    response_model=StatsResponse,
    responses=errors(401, "invalid_user", *STORAGE_ERRORS),
    dependencies=[Depends(require_token)],
)
async def stats(service: ServiceDep, user: UserQuery = None) -> StatsResponse:
    """Learned messages and token occurrences per label, and the vocabulary size, of the
    site-wide model or of ``user``'s own model (zeros for a user with none yet).

    Needs a bearer token when the server has API tokens configured."""
    return render_stats(await run_in_threadpool(service.stats, user))


@router.get("/healthz", tags=["operations"], summary="Liveness", response_model=HealthResponse)
async def healthz() -> HealthResponse:
    """The process is alive; the database is not consulted."""
    return HealthResponse(status="ok")


@router.get(
    "/readyz",
    tags=["operations"],
    summary="Readiness",
    response_model=HealthResponse,
    responses={
        200: {"content": {"application/json": {"example": {"status": "ready"}}}},
        **errors("storage_unavailable"),
    },
)
async def readyz(service: ServiceDep) -> HealthResponse:
    """200 when the database answers, its schema is at the newest revision, (SQLite) its
    file is the one in use and writable, and writes work; else 503. While reads work but
    writes fail the detail says so (`read-only: spamfilter.db-shm cannot be written (mode
    0444, ...)`, `writes failing: database or disk is full`); any other reason is logged."""
    failure = await run_in_threadpool(service.unready)
    if failure is not None:
        raise failure
    return HealthResponse(status="ready")


@router.get(
    "/metrics",
    tags=["operations"],
    summary="Prometheus metrics",
    response_class=Response,
    responses={
        200: {
            "content": {CONTENT_TYPE_LATEST: {"example": METRICS_EXAMPLE}},
            "description": "Text format",
        },
        **errors(401),
    },
    dependencies=[Depends(require_token)],
)
async def metrics_text(metrics: MetricsDep) -> Response:
    """Request counts and latencies by route and status; classify, learn and forget calls by
    outcome, with their durations and errors.

    Needs a bearer token when the server has API tokens configured (Prometheus:
    ``authorization: {credentials: <token>}`` in the scrape config)."""
    return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)


def render_classification(result: Classification) -> ClassifyResponse:
    """The HTTP form of a Classification and its mail report."""
    mail = result.mail_report
    return ClassifyResponse.model_validate(
        {
            "verdict": result.verdict.value,
            "spam_probability": result.spam_probability,
            "log_odds": result.log_odds,
            "spam_cutoff": result.spam_cutoff,
            "class": result.class_name,
            "log_posteriors": dict(result.log_posteriors),
            "clues": [ClueResponse(token=c.token, weight=c.weight) for c in result.clues],
            "digest": result.digest,
            "reason": None if result.reason is None else result.reason.value,
            "tokens": result.tokens,
            "truncated": result.truncated,
            "form": result.form,
            "mail": {
                "is_spam": mail.is_spam,
                "score": mail.score,
                "required": mail.required,
                "headers": mail.headers,
            },
        }
    )


def render_stats(result: Stats) -> StatsResponse:
    """The HTTP form of Stats (the object ``spamfilter stats --json`` prints too)."""
    return StatsResponse.model_validate(stats_document(result))
