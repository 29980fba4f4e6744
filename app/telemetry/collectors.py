"""Prometheus metrics of the service, the same in every daemon (serve, spamd, milter).

Messages by call, adapter and outcome (a classify's outcome is its verdict, a learn's or
forget's what it did), call durations, and failed calls by error code — storage errors
(``storage_unavailable``, ``storage_conflict``) among them. Label values come from small
fixed sets, never from a message, so the series cannot grow without bound.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from app.service.events import Event
from app.service.history import LATENCY_BOUNDS_MS

# The console's latency buckets, in seconds, so that both tell the same percentiles.
BUCKETS = tuple(ms / 1000 for ms in LATENCY_BOUNDS_MS)


class ServiceMetrics:
    """An observer counting and timing the service's calls in ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.messages = Counter(
            "spamfilter_messages",
            "Service calls by call, adapter and outcome (a classify's outcome is its verdict).",
            ("call", "adapter", "outcome"),
            registry=registry,
        )
        self.duration = Histogram(
            "spamfilter_call_duration_seconds",
            "Time a service call took, seconds (reading and tokenising the message included).",
            ("call", "adapter"),
            buckets=BUCKETS,
            registry=registry,
        )
        self.errors = Counter(
            "spamfilter_errors",
            "Failed service calls by call, adapter and error code.",
            ("call", "adapter", "error"),
            registry=registry,
        )

    def observe(self, event: Event) -> None:
        """Count and time ``event``."""
        self.messages.labels(event.call, event.adapter, event.outcome).inc()
        self.duration.labels(event.call, event.adapter).observe(event.seconds)
        if event.error is not None:
            self.errors.labels(event.call, event.adapter, event.error).inc()
