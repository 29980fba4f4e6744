"""A Prometheus endpoint for the daemons that speak no HTTP of their own (spamd, milter).

``serve`` answers ``/metrics`` itself; spamd and the milter serve the same service metrics
(``collectors``) on a port of their own when one is configured, from a background thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from prometheus_client import CollectorRegistry, start_http_server

log = logging.getLogger(__name__)


def serve_metrics(registry: CollectorRegistry, host: str, port: int) -> Callable[[], None]:
    """Serve ``registry`` at ``http://host:port/metrics``; returns what stops it.

    OSError when the port cannot be bound (a daemon should not start half-watched)."""
    server, thread = start_http_server(port, addr=host, registry=registry)
    log.info("metrics on http://%s:%d/metrics", host, server.server_port)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return stop
