"""What a route needs from its app: the service, the settings, the metrics, the caller's token.

With API tokens configured, feedback, forget, stats, users and metrics need one
(``require_token``, 401 without); deleting a user needs one even when none is configured
(``require_admin_token``: 403 then); classify answers everyone and shows the header,
address and URL tokens among its clues to token holders only (``caller_is_trusted``).

Every dependency here is ``async def`` on purpose: none does I/O, and FastAPI would run a
plain ``def`` dependency in the threadpool, one thread hop per request for nothing.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param

from app.api.errors import AdminDisabled, NotAuthenticated
from app.api.metrics import Metrics
from app.errors import StorageUnavailable
from app.service import SpamFilter
from app.settings.schema import Settings

_bearer = HTTPBearer(
    auto_error=False,
    description="When the server has API tokens configured: required by feedback, forget, "
    "stats, users and metrics (deleting a user needs one always); on classify, it reveals "
    "the header, address and URL tokens among the clues.",
)


async def settings_of(request: Request) -> Settings:
    """The settings the app was created with."""
    settings: Settings = request.app.state.settings
    return settings


async def metrics_of(request: Request) -> Metrics:
    """The app's Prometheus collectors."""
    metrics: Metrics = request.app.state.metrics
    return metrics


async def service_of(request: Request) -> SpamFilter:
    """The app's service; StorageUnavailable (503) until the lifespan has built it."""
    service: SpamFilter | None = getattr(request.app.state, "service", None)
    if service is None:
        raise StorageUnavailable("the service is starting; retry shortly")
    return service


CredentialsDep = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


async def require_token(
    settings: Annotated[Settings, Depends(settings_of)], credentials: CredentialsDep
) -> None:
    """Refuse the request (401) unless it carries one of the configured API tokens.

    With no tokens configured every caller is let through: the CLI refuses to bind a public
    address in that case (see ``app.daemons.http_listener``).
    """
    if not settings.api_tokens:
        return
    if credentials is None:
        raise NotAuthenticated("this route needs an 'Authorization: Bearer <token>' header")
    if not _is_configured(credentials.credentials, settings.api_tokens):
        raise NotAuthenticated("the bearer token is not valid")


async def require_admin_token(
    settings: Annotated[Settings, Depends(settings_of)], credentials: CredentialsDep
) -> None:
    """Refuse the request unless it carries one of the configured API tokens: 401 without a
    valid one, and 403 when none is configured (an administrative call, such as deleting a
    user's data, is never open to every caller)."""
    if not settings.api_tokens:
        raise AdminDisabled(
            "administrative calls are refused while no API tokens are configured; "
            "set api_tokens (SPAMFILTER_API_TOKENS) and send one as a bearer token"
        )
    await require_token(settings, credentials)


async def caller_is_trusted(
    settings: Annotated[Settings, Depends(settings_of)], credentials: CredentialsDep
) -> bool:
    """True when no tokens are configured or the request carries a valid one; never 401."""
    return _trusted(settings, credentials.credentials if credentials is not None else None)


def carries_token(request: Request, settings: Settings) -> bool:
    """Whether the request may use what token holders may (as ``caller_is_trusted``), read
    straight from its Authorization header, parsed as HTTPBearer parses it: for code that
    runs outside dependencies."""
    scheme, given = get_authorization_scheme_param(request.headers.get("authorization"))
    return _trusted(settings, given if scheme.lower() == "bearer" and given else None)


def _trusted(settings: Settings, given: str | None) -> bool:
    """The one rule: no tokens configured, or ``given`` is one of them."""
    if not settings.api_tokens:
        return True
    return given is not None and _is_configured(given, settings.api_tokens)


def _is_configured(given: str, tokens: list[str]) -> bool:
    # Compare with every token, in constant time per token, so timing reveals nothing.
    matches = [hmac.compare_digest(given.encode(), token.encode()) for token in tokens]
    return any(matches)


ServiceDep = Annotated[SpamFilter, Depends(service_of)]
SettingsDep = Annotated[Settings, Depends(settings_of)]
MetricsDep = Annotated[Metrics, Depends(metrics_of)]
TrustedDep = Annotated[bool, Depends(caller_is_trusted)]
