"""The one place where errors become HTTP responses: status + JSON ``{"error", "detail"}``.

The service's error hierarchy (``app.errors``) is mapped here and nowhere else; routes simply
let errors propagate. FastAPI's request validation errors and Starlette's own HTTP errors
(404, 405, ...) are reshaped to the same JSON form so that clients parse one error shape.

What a client is told of a server-side failure is a fixed sentence per error code: the text
of a storage error can name the database host, port, user or password (psycopg's messages
do), so it goes to the server log only. Anything unexpected (a bug, RecursionError,
MemoryError) is a 500 ``internal_error`` without a traceback; the server logs the traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, NamedTuple

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from app.errors import (
    ConfigurationError,
    InvalidLabel,
    InvalidMessage,
    InvalidUser,
    MessageTooLarge,
    Overloaded,
    SpamFilterError,
    StorageConflict,
    StorageUnavailable,
    StorageWritesFailing,
    UnknownUser,
)

log = logging.getLogger(__name__)


class NotAuthenticated(SpamFilterError):
    """A request to a protected route without a valid bearer token (an HTTP-only concern)."""

    code = "not_authenticated"


class UnsupportedMediaType(SpamFilterError):
    """A request body declared as a kind the service does not read (JSON, a form upload)."""

    code = "unsupported_media_type"


class AdminDisabled(SpamFilterError):
    """An administrative route (deleting a user's data) on a server without API tokens: such
    a call must never be open to every caller, so it is refused until tokens are set."""

    code = "admin_disabled"


class RequestTimeout(SpamFilterError):
    """The request body did not arrive within ``server.read_timeout_seconds`` (HTTP only)."""

    code = "request_timeout"


STATUS: Mapping[type[SpamFilterError], int] = {
    InvalidMessage: 400,
    NotAuthenticated: 401,
    AdminDisabled: 403,
    UnknownUser: 404,
    RequestTimeout: 408,
    MessageTooLarge: 413,
    UnsupportedMediaType: 415,
    InvalidLabel: 422,
    InvalidUser: 422,
    StorageUnavailable: 503,
    Overloaded: 503,
    # Raised only after the service's own retries are used up: the client may retry later.
    StorageConflict: 503,
    ConfigurationError: 500,
}

# The detail of each server-side failure, whatever its text said (see the module docstring).
# Overloaded and StorageWritesFailing are not here: their text is ours (the budget's size; a
# file's name, SQLite's own words or a SQLSTATE), and tells the client what is wrong.
PUBLIC_DETAIL: Mapping[type[SpamFilterError], str] = {
    StorageUnavailable: "the database is unavailable; retry shortly",
    StorageConflict: "the database is busy; retry shortly",
    ConfigurationError: "the server is misconfigured; see its log",
}
INTERNAL_DETAIL = "internal server error"

# Seconds an overloaded client is asked to wait: bodies in flight are read and answered in
# well under a second, so the budget is usually free again by then.
RETRY_AFTER_SECONDS = 1

# Raised while the body may still be arriving: the connection cannot be reused for another
# request (the rest of the body would have to be drained first), so it is closed.
_CLOSES_CONNECTION = (RequestTimeout, MessageTooLarge, Overloaded)


class ErrorDoc(NamedTuple):
    """How one error code is documented: its status, what it means, and an example detail
    as the server words it (with the default settings)."""

    status: int
    summary: str
    detail: str


# How each code is documented in the OpenAPI contract (``app.api.schemas.errors``): the
# detail is what the server really sends with the default settings (tests/api/test_docs.py
# provokes each one and compares). Listed by status.
ERROR_DOCS: dict[str, ErrorDoc] = {
    "invalid_message": ErrorDoc(
        400,
        "not a message, e.g. an empty body",
        "the request body is empty; send the raw message (RFC 822)",
    ),
    "not_authenticated": ErrorDoc(
        401,
        "missing or wrong bearer token",
        "this route needs an 'Authorization: Bearer <token>' header",
    ),
    "admin_disabled": ErrorDoc(
        403,
        "an administrative call on a server without API tokens: configure api_tokens first",
        "administrative calls are refused while no API tokens are configured; set api_tokens "
        "(SPAMFILTER_API_TOKENS) and send one as a bearer token",
    ),
    "unknown_user": ErrorDoc(
        404, "the user has no model of their own", "user 'alice@example.org' has no model"
    ),
    "request_timeout": ErrorDoc(
        408,
        "the message did not arrive within the read timeout",
        "the message did not arrive within 30 seconds",
    ),
    "message_too_large": ErrorDoc(
        413,
        "message over the size cap (server.max_message_bytes)",
        "the message is 31457280 bytes; the limit is 26214400",
    ),
    "unsupported_media_type": ErrorDoc(
        415,
        "a body declared as JSON or a form upload: send the raw message or text",
        "a body of type application/json is not read: send the raw message (message/rfc822) "
        "or its text (text/plain) as the request body",
    ),
    "invalid_label": ErrorDoc(
        422, "unknown label", "unknown label 'eggs'; expected one of ham, spam"
    ),
    "invalid_request": ErrorDoc(
        422, "missing or malformed parameter", "query label: Field required"
    ),
    "invalid_user": ErrorDoc(
        422,
        "a name that cannot be a user",
        "user name 'alice smith' holds ' ', which is not allowed",
    ),
    "storage_unavailable": ErrorDoc(
        503,
        "database unavailable or not migrated",
        "the database is unavailable; retry shortly",
    ),
    "storage_conflict": ErrorDoc(
        503,
        "database still busy after the service's own retries",
        "the database is busy; retry shortly",
    ),
    "overloaded": ErrorDoc(
        503,
        "too many message bytes in flight (server.max_buffered_bytes); retry after Retry-After",
        "too many message bytes are in flight; retry shortly (the limit is 134217728 bytes "
        "per process)",
    ),
}

# The response headers that come with some codes (``_headers_of`` below adds them).
ERROR_HEADERS: dict[str, dict[str, dict[str, Any]]] = {
    "not_authenticated": {
        "WWW-Authenticate": {"description": "`Bearer`", "schema": {"type": "string"}}
    },
    "overloaded": {
        "Retry-After": {
            "description": "seconds to wait before retrying (overloaded only)",
            "schema": {"type": "integer"},
        }
    },
}


def status_of(error: SpamFilterError) -> int:
    """The HTTP status of an error: its closest class in ``STATUS``, else 500."""
    for cls in type(error).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def public_detail(error: SpamFilterError) -> str:
    """What a client may read of ``error``: its own text for a client error (4xx) or an
    overload, a fixed sentence for any other server-side failure."""
    if status_of(error) < 500 or isinstance(error, Overloaded | StorageWritesFailing):
        return str(error) or error.code
    for cls in type(error).__mro__:
        if cls in PUBLIC_DETAIL:
            return PUBLIC_DETAIL[cls]
    return INTERNAL_DETAIL


def error_response(
    status: int, code: str, detail: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """A JSON error body ``{"error": code, "detail": detail}`` with ``status``."""
    return JSONResponse({"error": code, "detail": detail}, status_code=status, headers=headers)


async def on_spamfilter_error(_request: Request, error: Exception) -> JSONResponse:
    """Map a SpamFilterError to its status, code and public detail (the whole text of a
    server-side failure is logged, never returned)."""
    assert isinstance(error, SpamFilterError)
    status = status_of(error)
    if status >= 500:
        log.warning("request failed: %s: %s", error.code, error)
    return error_response(status, error.code, public_detail(error), _headers_of(error))


async def on_validation_error(_request: Request, error: Exception) -> JSONResponse:
    """Reshape FastAPI's validation errors (e.g. a missing ``label``) to 422 + our JSON."""
    assert isinstance(error, RequestValidationError)
    problems = []
    for item in error.errors():
        where = " ".join(str(part) for part in item.get("loc", ()))
        problems.append(f"{where}: {item.get('msg', 'invalid')}")
    return error_response(422, "invalid_request", "; ".join(problems) or "invalid request")


async def on_http_error(_request: Request, error: Exception) -> JSONResponse:
    """Starlette's HTTP errors (unknown route, wrong method, ...) in our JSON shape."""
    assert isinstance(error, HTTPException)
    code = _http_code(error.status_code)
    return error_response(error.status_code, code, str(error.detail), error.headers)


async def on_unexpected_error(_request: Request, _error: Exception) -> JSONResponse:
    """A bug: 500 in our JSON shape (the traceback is logged by the server, not returned)."""
    return error_response(500, "internal_error", INTERNAL_DETAIL)


def install_error_handlers(app: FastAPI) -> None:
    """Register every mapping above on ``app``."""
    app.add_exception_handler(SpamFilterError, on_spamfilter_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(HTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected_error)


def _headers_of(error: SpamFilterError) -> dict[str, str]:
    headers: dict[str, str] = {}
    if isinstance(error, NotAuthenticated):
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(error, Overloaded):
        headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    if isinstance(error, _CLOSES_CONNECTION):
        headers["Connection"] = "close"
    return headers


def _http_code(status: int) -> str:
    codes = {404: "not_found", 405: "method_not_allowed", 413: "message_too_large"}
    return codes.get(status, f"http_{status}")
