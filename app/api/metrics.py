"""Prometheus metrics of HTTP requests: one registry per app and a pure ASGI middleware.

Classify, learn and forget are counted once, by the service's observer
(``app.telemetry.collectors``: ``spamfilter_messages_total`` and its neighbours, the same in
every daemon), into the same registry; this module counts only what is HTTP's own.

The middleware is plain ASGI rather than ``@app.middleware("http")`` because Starlette's
BaseHTTPMiddleware cost ~45 % of throughput in our measurements, while this costs nothing
measurable. Requests are labelled by route template (``/v1/classify``), never by raw path,
so that unknown URLs cannot grow the label set.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED_ROUTE = "unmatched"


class Metrics:
    """The app's collectors, registered in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "spamfilter_http_requests",
            "HTTP requests by method, route and status.",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "spamfilter_http_request_duration_seconds",
            "Time from request start to the end of the response, seconds.",
            ("method", "route"),
            registry=self.registry,
        )


class MetricsMiddleware:
    """Count and time every HTTP request by method, route template and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, remembering the response status and the elapsed time."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500  # if the app raises before responding, the server answers 500
        started = time.perf_counter()

        async def send_and_record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_record)
        finally:
            route = _route_of(scope)
            method = str(scope.get("method", ""))
            self.metrics.latency.labels(method, route).observe(time.perf_counter() - started)
            self.metrics.requests.labels(method, route, str(status)).inc()


def _route_of(scope: Scope) -> str:
    # The router stores the matched route in the scope it was given, which is ours.
    route = scope.get("route")
    if isinstance(route, BaseRoute):
        path = getattr(route, "path", None)
        if isinstance(path, str):
            return path
    return UNMATCHED_ROUTE
