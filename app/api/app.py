"""The application factory. Nothing is built at import: ``create_app(settings)`` builds it all.

``uvicorn --factory app.api.app:app_factory`` runs it with the settings
``app.settings.loading`` loads: the config file ``SPAMFILTER_CONFIG`` names (``spamfilter
serve`` sets it) or the first of the usual places, the ``SPAMFILTER_*`` environment on top.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from importlib import metadata

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from app.admission import BodyBudget
from app.api import accounts
from app.api.calls import service_slots
from app.api.console import install as install_console
from app.api.docs import install_docs
from app.api.errors import install_error_handlers
from app.api.metrics import Metrics, MetricsMiddleware
from app.api.routes import router
from app.bootstrap import build_service, settle
from app.service import SpamFilter
from app.settings.schema import Settings

DESCRIPTION = """
A Naive Bayes spam filter that learns from every correction.

Send a raw message (RFC 822 bytes) to **classify** it, to give **feedback** (learn it as
spam or ham) or to **forget** it. Scores are natural-log odds; every verdict lists the tokens
that moved it. Errors are JSON `{"error": code, "detail": text}`.

Each of them, and stats, takes an optional `user` query parameter: that user's own model
(blended with the site-wide one when classifying); without it, the site-wide model. **users**
lists the users with a model of their own and deletes one.

When the server has API tokens configured, feedback, forget, stats, users and metrics need
`Authorization: Bearer <token>`; deleting a user needs one always (403 while none is
configured). Classify answers every caller, but to a caller without a
valid token the clues that are header, address, URL or MIME tokens show their namespace and
weight only (`from:addr:*`), not the learned value.

Limits: a body must arrive within the read timeout (408), stay under the size cap (413) and
fit in the process's budget of message bytes in flight, counted as they arrive (callers
without a token share a quarter of it): a body waits a few seconds for room, while bodies
that stopped arriving are cut off (408), then gets 503 `overloaded` with Retry-After; past
the connection cap the server answers 503 before the request reaches the app.
"""


def create_app(settings: Settings, service: SpamFilter | None = None) -> FastAPI:
    """A FastAPI app serving ``service``, or a service built from ``settings`` at startup.

    Without a service the lifespan builds one (running the idempotent migrations first), and
    either way the database engine is disposed of at shutdown. The app holds the process's
    one ``BodyBudget`` (``server.max_buffered_bytes``) that request bodies are drawn from.
    """
    metrics = Metrics()
    app = FastAPI(
        title="spamfilter",
        version=_version(),
        description=DESCRIPTION,
        lifespan=_lifespan(settings, service),
        # Served by install_docs from files in the package: FastAPI's own load from a CDN.
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.budget = BodyBudget.for_server(settings.server)
    app.state.service_slots = service_slots(settings.server.service_threads)
    app.state.service = service
    install_error_handlers(app)
    app.include_router(router)
    install_console(app, settings)
    app.include_router(accounts.router)
    install_docs(app)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app


def app_factory() -> FastAPI:
    """The app with settings from the config file and the environment (``uvicorn --factory``);
    a worker then freezes what it has made out of the garbage collector's full passes
    (``app.bootstrap.settle``)."""
    from app.settings.loading import load_settings

    app = create_app(load_settings())
    settle()
    return app


def _lifespan(
    settings: Settings, given: SpamFilter | None
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = given
        if service is None:
            registry = app.state.metrics.registry
            service = await run_in_threadpool(build_service, settings, True, "http", registry)
        app.state.service = service
        try:
            yield
        finally:
            service.close()

    return lifespan


def _version() -> str:
    try:
        return metadata.version("spamfilter")
    except metadata.PackageNotFoundError:  # pragma: no cover - always installed in practice
        return "0.0.0"
