"""Start-up of the three daemons (``serve``, ``spamd``, ``milter``), composed in one place.

Each starts the same way: settings (the command line's options already applied) -> its
listener checked by the one bind rule (``app.binding.check_bind``) -> the database opened,
checked writable and migrated, once -> the service -> the listener, until SIGINT or SIGTERM.
A refused address or a database that cannot be opened ends start-up before anything
listens. A daemon's transport (and, for ``serve``, uvicorn and FastAPI) is imported only when
that daemon starts. ``announce`` receives the one-line progress notes for stderr.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from app.binding import Endpoint, Listener, check_bind, parse_socket
from app.settings.schema import Settings

if TYPE_CHECKING:
    from app.service import SpamFilter

Announce = Callable[[str], None]
APP_FACTORY = "app.api.app:app_factory"


def http_listener(settings: Settings) -> Listener:
    """The HTTP API's listener: a public address needs API tokens, or the operator's opt-out
    ``server.allow_public_bind`` (feedback and forget change the model)."""
    host = settings.server.host
    return Listener(
        Endpoint("inet", host=host, port=settings.server.port),
        bool(settings.api_tokens) or settings.server.allow_public_bind,
        f"refusing to listen on {host} without API tokens: set SPAMFILTER_API_TOKENS, "
        "bind 127.0.0.1, or set SPAMFILTER_SERVER__ALLOW_PUBLIC_BIND=true",
    )


def spamd_listener(settings: Settings, allow_public_bind: bool) -> Listener:
    """spamd's listener: a public address needs ``--allow-public-bind``. The spamd protocol
    has no authentication: anyone who reaches the port can have mail classified and, with
    TELL enabled, change the model."""
    host = settings.spamd.host
    return Listener(
        Endpoint("inet", host=host, port=settings.spamd.port),
        allow_public_bind,
        f"refusing to listen on {host}: the spamd protocol has no authentication; "
        "bind 127.0.0.1, or pass --allow-public-bind and restrict access with a firewall",
    )


def milter_listener(endpoint: Endpoint, allow_public_bind: bool) -> Listener:
    """The milter's listener: a unix socket, or a TCP address that is loopback unless
    ``--allow-public-bind``. The milter protocol has no authentication: anyone who reaches
    the port can have mail scored."""
    return Listener(
        endpoint,
        allow_public_bind,
        f"refusing to listen on {endpoint.describe()}: the milter protocol has no "
        "authentication; bind a loopback address or a unix socket, or pass --allow-public-bind",
    )


def open_database(settings: Settings, listener: Listener, announce: Announce) -> None:
    """Check ``listener``'s bind, then create or upgrade the database once, and announce it
    (``database: sqlite /path``, then its revision)."""
    from app.bootstrap import migrate_database
    from app.settings.loading import describe_database

    check_bind(listener)
    revision = migrate_database(settings)  # a database that cannot be opened ends here
    announce(f"database: {describe_database(settings.database_url)}")
    announce(f"database at revision {revision}")


def worker_environment(settings: Settings, config_file: Path | None = None) -> dict[str, str]:
    """The ``SPAMFILTER_*`` variables that carry the command-line overrides to workers, and
    ``SPAMFILTER_CONFIG`` naming the config file read here (absolute: workers read the same)."""
    server = settings.server
    environment = {
        "SPAMFILTER_DATABASE_URL": settings.database_url,
        "SPAMFILTER_SERVER__HOST": server.host,
        "SPAMFILTER_SERVER__PORT": str(server.port),
        "SPAMFILTER_SERVER__WORKERS": str(server.workers),
        "SPAMFILTER_SERVER__ALLOW_PUBLIC_BIND": "true" if server.allow_public_bind else "false",
    }
    if config_file is not None:
        environment["SPAMFILTER_CONFIG"] = str(config_file.resolve())
    return environment


def run_http(
    settings: Settings,
    config_file: Path | None,
    announce: Announce,
    *,
    http: str,
    access_log: bool,
    log_level: str,
) -> None:
    """Start the HTTP API: uvicorn on the app factory, with ``server.workers`` workers.

    Workers are separate processes that load their own settings
    (``app.settings.loading.load_settings``), so the config file read here is exported as
    ``SPAMFILTER_CONFIG`` and the command-line options as ``SPAMFILTER_*`` variables (which
    override the file) before uvicorn starts. Each worker listens on a socket of its own
    (``app.api.workers``); uvicorn gets the connection limits of ``settings.server``
    (``app.api.connections``).
    """
    open_database(settings, http_listener(settings), announce)
    os.environ.update(worker_environment(settings, config_file))

    from app.api.connections import server_options
    from app.api.workers import run_server

    run_server(
        APP_FACTORY,
        factory=True,
        host=settings.server.host,
        port=settings.server.port,
        workers=settings.server.workers,
        access_log=access_log,
        log_level=log_level,
        **server_options(settings, http),
    )


def run_spamd(settings: Settings, allow_public_bind: bool, announce: Announce) -> None:
    """Serve SpamAssassin's spamd protocol on ``spamd.host``/``spamd.port`` until a signal."""
    from app.adapters.spamd.server import main as entry

    open_database(settings, spamd_listener(settings, allow_public_bind), announce)
    allowed = ", ".join(settings.spamd.tell_from)
    tell = f"enabled from {allowed}" if settings.spamd.allow_tell else "disabled"

    def ready(bound_host: str, bound_port: int) -> None:
        announce(f"spamd listening on {bound_host}:{bound_port} (TELL {tell})")

    metrics = (settings.spamd.host, settings.spamd.metrics_port)
    with _daemon_service(settings, "spamd", metrics, announce) as service:
        entry(service, settings, ready)


def run_milter(
    settings: Settings, socket_spec: str | None, allow_public_bind: bool, announce: Announce
) -> None:
    """Serve the milter protocol on ``socket_spec`` (default ``milter.socket``) until a
    signal."""
    endpoint = parse_socket(socket_spec or settings.milter.socket)
    open_database(settings, milter_listener(endpoint, allow_public_bind), announce)
    from app.adapters.milter.server import listen

    metrics = (settings.milter.metrics_host, settings.milter.metrics_port)
    with _daemon_service(settings, "milter", metrics, announce) as service:
        listen(service, settings, endpoint, announce)


@contextmanager
def _daemon_service(
    settings: Settings, adapter: str, metrics: tuple[str, int | None], announce: Announce
) -> Iterator[SpamFilter]:
    """The daemon's service (``app.bootstrap.daemon_service``), announcing where its metrics
    are served when ``metrics`` has a port."""
    from app.bootstrap import daemon_service

    with daemon_service(settings, adapter, metrics) as service:
        host, port = metrics
        if port is not None:
            announce(f"metrics on http://{host}:{port}/metrics")
        yield service
