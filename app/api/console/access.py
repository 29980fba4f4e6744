"""Who may see the console: sessions from the cookie, CSRF on every POST, roles, responses.

``install`` adds the console to an app: its routes, static files, the signing keys and the
handlers that turn a missing session into a redirect to the login page and a refused
action into a 403 page. Every console response carries a strict Content-Security-Policy.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from importlib import resources
from typing import Annotated

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from app.admission import BodyBudget
from app.api.body import read_message
from app.api.console.forms import FormReader
from app.api.console.markup import notice, page, refused_page
from app.api.console.session import COOKIE, Keys, Session
from app.api.dependencies import service_of
from app.settings.schema import Settings

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
STATIC = {
    "console.css": "text/css; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "uPlot.min.css": "text/css; charset=utf-8",
    "uPlot.iife.min.js": "text/javascript; charset=utf-8",
    "uPlot.LICENSE.txt": "text/plain; charset=utf-8",
}


class LoginNeeded(Exception):
    """No valid session: go to the login page."""


class Forbidden(Exception):
    """The session may not do this (role, CSRF), or the console is closed (``closed``)."""


def keys_of(request: Request) -> Keys:
    """The app's console keys, once ``console_keys`` has made them (every route that needs
    a session has)."""
    keys: Keys | None = request.app.state.console_keys
    if keys is None:
        raise RuntimeError("the console keys are made by console_keys first")
    return keys


async def console_keys(request: Request) -> Keys:
    """The app's console keys, made on first use from ``console.session_key`` or the secret
    the database keeps; Forbidden("closed") while no token is configured (the database is
    not asked then)."""
    settings: Settings = request.app.state.settings
    if not (settings.api_tokens or settings.read_tokens):
        raise Forbidden("closed")
    keys: Keys | None = request.app.state.console_keys
    if keys is None:
        service = await service_of(request)
        secret = await run_in_threadpool(service.console.session_secret)
        keys = request.app.state.console_keys = Keys(settings, secret)
    return keys


async def console_session(request: Request) -> Session:
    """The request's session; LoginNeeded without one (or one ended by logging out, in any
    worker), Forbidden("closed") without tokens."""
    keys = await console_keys(request)
    session = keys.session(request.cookies.get(COOKIE))
    if session is None:
        raise LoginNeeded()
    service = await service_of(request)
    if await run_in_threadpool(service.console.is_revoked, session.nonce):
        raise LoginNeeded()
    return session


# A form without a message in it (login, logout, a history action): a token, a CSRF field,
# an action name. Any field of a form but a scan's message is at most FIELD_LIMIT bytes.
FORM_LIMIT = 8192
FIELD_LIMIT = 4096


def scan_limit(settings: Settings) -> int:
    """The largest scan form: a message at the size cap, percent- or base64-encoded."""
    return settings.server.max_message_bytes * 4 + 65536


def scan_fields(settings: Settings) -> dict[str, int]:
    """The most decoded bytes of each message field of the scan form: the pasted text and
    the uploaded file (base64) of a message at the size cap."""
    cap = settings.server.max_message_bytes
    return {"raw": cap, "upload_b64": (cap + 2) // 3 * 4}


@asynccontextmanager
async def received_form(
    request: Request, limit: int = FORM_LIMIT, fields: Mapping[str, int] | None = None
) -> AsyncIterator[dict[str, str]]:
    """The urlencoded form in the body (first value of each field), read as the API reads a
    message: at most ``limit`` bytes, within the read deadline, its bytes held from the
    app's budget until the block ends (MessageTooLarge, RequestTimeout, Overloaded). A field
    is refused (MessageTooLarge) as soon as its decoded bytes pass its cap in ``fields``, or
    FIELD_LIMIT for any other, before the rest of the form is read."""
    settings: Settings = request.app.state.settings
    budget: BodyBudget = request.app.state.budget
    reader = FormReader(fields or {}, FIELD_LIMIT)
    with budget.reserve() as hold:
        timeout = settings.server.read_timeout_seconds
        await read_message(request, limit, hold, timeout, allow_empty=True, inspect=reader.feed)
        yield reader.finish()


@asynccontextmanager
async def csrf_form(
    request: Request,
    session: Session,
    limit: int = FORM_LIMIT,
    fields: Mapping[str, int] | None = None,
) -> AsyncIterator[dict[str, str]]:
    """The POSTed form (see ``received_form``), once its CSRF token is the session's;
    Forbidden otherwise."""
    async with received_form(request, limit, fields) as form:
        if not keys_of(request).csrf_ok(session.nonce, form.get("csrf")):
            raise Forbidden("the form's CSRF token is missing or wrong; reload the page")
        yield form


def require_admin(session: Session) -> None:
    """Forbidden unless the session may learn and forget."""
    if not session.is_admin:
        raise Forbidden("learning and forgetting need an admin (API) token")


def html(content: str, status_code: int = 200) -> HTMLResponse:
    """An HTML response with the console's security headers, never cached."""
    response = HTMLResponse(content, status_code)
    response.headers.update(SECURITY_HEADERS)
    response.headers["Cache-Control"] = "no-store"
    return response


def open_session(response: Response, value: str, lifetime: int, secure: bool) -> None:
    """Set (or with ``lifetime`` 0 clear) the session cookie on ``response``."""
    response.set_cookie(
        COOKIE, value, max_age=lifetime, path="/ui", httponly=True, samesite="strict", secure=secure
    )


async def on_login_needed(_request: Request, _error: Exception) -> Response:
    """Go to the login page."""
    return RedirectResponse("/ui/login", 303)


async def on_forbidden(_request: Request, error: Exception) -> Response:
    """The refusal as a page (the closed console says how to open it)."""
    if str(error) == "closed":
        return html(refused_page(), 403)
    body = notice(str(error), "error") + '<p><a href="/ui/">Back to the console</a></p>'
    return html(page("Not allowed", body), 403)


async def static_file(name: str) -> Response:
    """One of the console's own assets (no directory listing, no other file)."""
    media = STATIC.get(name)
    if media is None:
        return Response("not found", 404, media_type="text/plain")
    data = resources.files("app.api.console").joinpath("static", name).read_bytes()
    headers = {"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"}
    return Response(data, media_type=media, headers=headers)


def install(app: FastAPI, settings: Settings) -> None:
    """Serve the console at /ui/ in ``app`` (when ``console.enabled``)."""
    if not settings.console.enabled:
        return
    from app.api.console.routes import router

    configured = settings.console.session_key
    app.state.console_keys = Keys(settings, configured) if configured else None
    app.state.console_started = time.monotonic()
    app.add_exception_handler(LoginNeeded, on_login_needed)
    app.add_exception_handler(Forbidden, on_forbidden)
    app.add_api_route("/ui/static/{name}", static_file, include_in_schema=False)
    app.include_router(router)


SessionDep = Annotated[Session, Depends(console_session)]
