"""The console's routes under /ui/: login, status, traffic, history, scan, accuracy.

Every page needs a session (``access``); every POST needs the session's CSRF token, and
learning or forgetting an admin session. Service calls run in worker threads like the API's
(``app.api.calls``).
"""

from __future__ import annotations

import base64
import binascii
import time
from datetime import UTC, datetime
from importlib import metadata
from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from app.api.calls import call_service
from app.api.console import figures
from app.api.console.access import (
    Forbidden,
    SessionDep,
    console_keys,
    csrf_form,
    html,
    keys_of,
    open_session,
    received_form,
    require_admin,
    scan_fields,
    scan_limit,
)
from app.api.console.health import probe_all
from app.api.console.markup import login_page, page
from app.api.console.pages import (
    StatusFacts,
    accuracy_body,
    charts_body,
    entry_body,
    history_body,
    scan_body,
    status_body,
)
from app.api.console.session import LOGIN_COOKIE, Session, new_nonce
from app.api.dependencies import ServiceDep, SettingsDep
from app.errors import MessageTooLarge, SpamFilterError
from app.service import SpamFilter
from app.service.console_access import client_key
from app.service.history import EntryFilter
from app.service.results import Outcome

router = APIRouter(prefix="/ui", include_in_schema=False)
ADAPTERS = ("http", "spamd", "milter")

# A history entry's id: a positive 63-bit integer (anything else is a 422, not a 500).
EntryId = Annotated[int, Path(ge=1, le=2**63 - 1)]


@router.get("/login")
async def login_form(request: Request) -> Response:
    """The login form, bound to a fresh nonce in a short-lived cookie."""
    keys = await console_keys(request)
    nonce = new_nonce()
    response = html(login_page(keys.csrf(nonce)))
    response.set_cookie(
        LOGIN_COOKIE,
        nonce,
        max_age=900,
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=_secure(request),
    )
    return response


@router.post("/login")
async def login(request: Request, service: ServiceDep) -> Response:
    """Check the token; on success open a session and go to the status page. A client
    address past its failed logins (``ConsoleGuard.admit_login``) gets 429 and Retry-After,
    its token unchecked."""
    keys = await console_keys(request)
    async with received_form(request) as form:
        nonce = request.cookies.get(LOGIN_COOKIE, "")
        if not nonce or not keys.csrf_ok(nonce, form.get("csrf")):
            raise Forbidden("the login form expired; reload it")
        token = form.get("token", "")
    client = client_key(request.client.host if request.client else None)
    wait = await run_in_threadpool(service.console.admit_login, client)
    if wait is not None:
        told = f"Too many failed logins from your address; try again in {wait:.0f} seconds."
        refused = html(login_page(keys.csrf(nonce), told), 429)
        refused.headers["Retry-After"] = f"{wait:.0f}"
        return refused
    role = keys.role_of(token)
    if role is None:
        return html(login_page(keys.csrf(nonce), "That token is not configured."), 401)
    await run_in_threadpool(service.console.login_succeeded, client)
    response = RedirectResponse("/ui/", 303)
    open_session(response, keys.issue(token, role), keys.lifetime, _secure(request))
    response.delete_cookie(LOGIN_COOKIE, path="/ui")
    return response


@router.post("/logout")
async def logout(request: Request, session: SessionDep, service: ServiceDep) -> Response:
    """End the session: the cookie is cleared, and the session revoked in the database, so
    that a copy of the cookie taken before is refused by every worker."""
    async with csrf_form(request, session):
        pass
    expires_at = datetime.fromtimestamp(session.expires, UTC)
    await run_in_threadpool(service.console.revoke, session.nonce, expires_at)
    response = RedirectResponse("/ui/login", 303)
    open_session(response, "", 0, _secure(request))
    return response


@router.get("")
async def bare() -> Response:
    """/ui goes to /ui/."""
    return RedirectResponse("/ui/", 308)


@router.get("/")
async def status(
    request: Request, session: SessionDep, service: ServiceDep, settings: SettingsDep
) -> Response:
    """Version, database, what is learned, training, users, daemons."""
    stats = await run_in_threadpool(service.stats)
    readiness = await run_in_threadpool(service.readiness)
    size = await run_in_threadpool(service.history.database_bytes)
    http_detail = "ready" if readiness is None else f"not ready: {readiness}"
    daemons = await run_in_threadpool(probe_all, settings, http_detail)
    users = await run_in_threadpool(service.users)
    found = StatusFacts(
        version=_version(),
        stats=stats,
        readiness=readiness,
        database_bytes=size,
        uptime_seconds=time.monotonic() - request.app.state.console_started,
        daemons=daemons,
        users=users,
    )
    return _page(request, session, "Status", status_body(found, settings), "status")


@router.get("/traffic")
async def traffic(request: Request, session: SessionDep, service: ServiceDep) -> Response:
    """Throughput by verdict and adapter, feedback, latency: the last hour and last 7 days."""
    now = datetime.now(UTC)
    hour = await run_in_threadpool(figures.window, service.history, now, 60, 1)
    days = await run_in_threadpool(figures.window, service.history, now, 7 * 1440, 60)
    body = charts_body(
        figures.traffic_charts(*hour, 1), "<h2>The last hour (per minute)</h2>"
    ) + charts_body(figures.traffic_charts(*days, 60), "<h2>The last 7 days (hourly means)</h2>")
    return _page(request, session, "Traffic", body, "traffic")


@router.get("/accuracy")
async def accuracy(request: Request, session: SessionDep, service: ServiceDep) -> Response:
    """Errors reported through feedback, per day over the last 30 days."""
    starts, rows = await run_in_threadpool(
        figures.window, service.history, datetime.now(UTC), 30 * 1440, 1440
    )
    days = figures.accuracy_rows(starts, rows)
    body = accuracy_body(days, figures.accuracy_chart(days))
    return _page(request, session, "Accuracy", body, "accuracy")


@router.get("/history")
async def history(request: Request, session: SessionDep, service: ServiceDep) -> Response:
    """The newest verdicts, filtered by verdict, adapter, user and text."""
    query = request.query_params
    before = query.get("before", "")
    chosen = EntryFilter(
        verdict=query.get("verdict") or None,
        adapter=query.get("adapter") or None,
        user=query.get("user") or None,
        text=(query.get("q") or "").strip()[:100] or None,
        before_id=int(before) if _an_id(before) else None,
    )
    entries = await run_in_threadpool(service.history.entries, chosen, 100)
    return _page(request, session, "History", history_body(entries, chosen, ADAPTERS), "history")


@router.get("/history/{entry_id}")
async def entry(
    request: Request, entry_id: EntryId, session: SessionDep, service: ServiceDep
) -> Response:
    """One verdict with its clue chart; learn or forget it while its tokens are kept."""
    found = await run_in_threadpool(service.history.entry, entry_id)
    if found is None:
        return _page(request, session, "Not found", "<p>No such history entry.</p>", "history", 404)
    shown, analysed = found
    classes = _classes(request)
    done = request.query_params.get("done", "")
    told = done if done in _done(classes) else ""
    csrf = keys_of(request).csrf(session.nonce)
    body = entry_body(shown, analysed is not None, csrf, session.is_admin, told, classes)
    return _page(request, session, "Verdict", body, "history")


@router.post("/history/{entry_id}")
async def learn_entry(
    request: Request, entry_id: EntryId, session: SessionDep, service: ServiceDep
) -> Response:
    """Learn (or forget) a history entry from its kept tokens, as the feedback endpoint would."""
    async with csrf_form(request, session) as form:
        action = form.get("action", "")
    require_admin(session)
    found = await run_in_threadpool(service.history.entry, entry_id)
    if found is None:
        raise Forbidden("no such history entry")
    shown, analysed = found
    if analysed is None:
        raise Forbidden("this entry's tokens are no longer kept")
    if action == "forget":
        result = await call_service(request, service.forget, analysed, user=shown.user)
    elif action in _classes(request):
        result = await call_service(request, service.learn, analysed, action, user=shown.user)
    else:
        raise Forbidden("unknown action")
    done = f"{result.outcome.value} as {result.label}" if result.label else result.outcome.value
    return RedirectResponse(f"/ui/history/{entry_id}?done={done.replace(' ', '+')}", 303)


@router.get("/scan")
async def scan_form(request: Request, session: SessionDep) -> Response:
    """Paste or upload a message."""
    csrf = keys_of(request).csrf(session.nonce)
    body = scan_body(csrf, session.is_admin, classes=_classes(request))
    return _page(request, session, "Scan and learn", body, "scan")


@router.post("/scan")
async def scan(request: Request, session: SessionDep, service: ServiceDep) -> Response:
    """Classify the message; learn or forget it (admin). A field over its cap is refused
    before the rest of the form is read, on a page that does not show the field again."""
    settings = request.app.state.settings
    limit, fields = scan_limit(settings), scan_fields(settings)
    try:
        async with csrf_form(request, session, limit, fields) as form:  # held until answered
            return await _scan(request, session, service, form)
    except MessageTooLarge as error:
        return _scan_refused(request, session, error, 413)


def _scan_refused(
    request: Request, session: Session, error: SpamFilterError, status_code: int
) -> Response:
    """The scan page with ``error`` and an empty form: what was sent is never echoed back."""
    told = f"{error.code}: {error}"
    csrf = keys_of(request).csrf(session.nonce)
    body = scan_body(csrf, session.is_admin, error=told, classes=_classes(request))
    return _page(request, session, "Scan and learn", body, "scan", status_code)


async def _scan(
    request: Request, session: Session, service: SpamFilter, form: dict[str, str]
) -> Response:
    csrf = keys_of(request).csrf(session.nonce)
    raw_text = form.get("raw", "")
    raw = _uploaded(form.get("upload_b64", "")) or raw_text.encode("utf-8")
    action = form.get("action", "classify")
    if action != "classify":
        require_admin(session)
    learned = None
    try:
        if action == "forget":
            learned = await call_service(request, service.forget, raw, form="auto")
        elif action in _classes(request):
            learned = await call_service(request, service.learn, raw, action, form="auto")
        result = await call_service(request, service.classify, raw, form="auto")
    except SpamFilterError as error:
        return _scan_refused(request, session, error, 400)
    shown = raw_text or raw.decode("utf-8", "replace")
    body = scan_body(csrf, session.is_admin, shown, result, learned, classes=_classes(request))
    return _page(request, session, "Scan and learn", body, "scan")


def _classes(request: Request) -> tuple[str, ...]:
    """The classes the site declares: one learn button each."""
    classes: tuple[str, ...] = request.app.state.settings.model.classes
    return classes


def _done(classes: tuple[str, ...]) -> frozenset[str]:
    """What an entry page may say was done (anything else in ``done=`` is not shown)."""
    return frozenset(
        [o.value for o in Outcome] + [f"{o.value} as {name}" for o in Outcome for name in classes]
    )


def _an_id(text: str) -> bool:
    """Whether ``text`` is a history id: ASCII digits that fit a 63-bit integer."""
    return text.isascii() and text.isdigit() and 0 < len(text) <= 18


def _uploaded(encoded: str) -> bytes:
    if not encoded:
        return b""
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return b""


def _page(
    request: Request, session: Session, title: str, body: str, active: str, status_code: int = 200
) -> Response:
    csrf = keys_of(request).csrf(session.nonce)
    return html(page(title, body, active, session, csrf), status_code)


def _secure(request: Request) -> bool:
    settings = request.app.state.settings
    return request.url.scheme == "https" or bool(settings.console.secure_cookie)


def _version() -> str:
    try:
        return metadata.version("spamfilter")
    except metadata.PackageNotFoundError:  # pragma: no cover
        return "0.0.0"
