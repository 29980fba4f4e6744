"""What a route needs from its app: the service, the settings, the metrics, the caller's token.

Every dependency here is ``async def`` on purpose: none does I/O, and FastAPI would run a
plain ``def`` dependency in the threadpool, one thread hop per request for nothing.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.api.errors import NotAuthenticated
from app.api.metrics import Metrics
from app.errors import StorageUnavailable
from app.service import SpamFilter
from app.settings import Settings

_bearer = HTTPBearer(
    auto_error=False,
    description="Required by feedback and forget when the server has API tokens configured.",
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


async def require_token(
    settings: Annotated[Settings, Depends(settings_of)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Refuse the request (401) unless it carries one of the configured API tokens.

    With no tokens configured every caller is let through: the CLI refuses to bind a public
    address in that case (see ``app.binding.check_bind``).
    """
    if not settings.api_tokens:
        return
    if credentials is None:
        raise NotAuthenticated("this route needs an 'Authorization: Bearer <token>' header")
    given = credentials.credentials.encode()
    # Compare with every token, in constant time per token, so timing reveals nothing.
    matches = [hmac.compare_digest(given, token.encode()) for token in settings.api_tokens]
    if not any(matches):
        raise NotAuthenticated("the bearer token is not valid")


ServiceDep = Annotated[SpamFilter, Depends(service_of)]
SettingsDep = Annotated[Settings, Depends(settings_of)]
MetricsDep = Annotated[Metrics, Depends(metrics_of)]
