"""serve: check the bind, migrate once, then run uvicorn on the app factory.

With several workers, each listens on a socket of its own (``app.api.workers``): uvicorn's
shared socket let one worker accept a whole burst of connections.

Workers are separate processes that load their own settings
(``app.settings.loading.load_settings``), so the config file read here is exported as
``SPAMFILTER_CONFIG`` and the options given here as ``SPAMFILTER_*`` variables (which
override the file) before uvicorn starts.
uvicorn and FastAPI are imported here only, so the other commands start without them.

uvicorn gets the connection limits of ``settings.server`` (``app.api.connections``): the idle
timeout, which also bounds how long a request head may take, and the connection cap.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from app.cli.context import (
    CliState,
    announce_database,
    log_level_option,
    pass_state,
    warn_unknown_variables,
)
from app.settings.schema import Settings

APP_FACTORY = "app.api.app:app_factory"
HTTP_IMPLEMENTATIONS = ("auto", "h11", "httptools")


def with_server_options(
    settings: Settings,
    host: str | None,
    port: int | None,
    workers: int | None,
    allow_public_bind: bool,
) -> Settings:
    """``settings`` with the command-line server options applied (None keeps the setting)."""
    changes: dict[str, object] = {"host": host, "port": port, "workers": workers}
    update = {key: value for key, value in changes.items() if value is not None}
    if allow_public_bind:
        update["allow_public_bind"] = True
    return settings.model_copy(update={"server": settings.server.model_copy(update=update)})


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


@click.command()
@click.option("--host", help="Address to bind (default: settings, 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), help="TCP port (default: 8000).")
@click.option(
    "--workers", type=click.IntRange(1, 64), help="Worker processes (default: one per core)."
)
@click.option(
    "--allow-public-bind",
    is_flag=True,
    help="Allow a non-loopback address without API tokens (SPAMFILTER_API_TOKENS).",
)
@click.option(
    "--http",
    type=click.Choice(HTTP_IMPLEMENTATIONS),
    default="auto",
    show_default=True,
    help="uvicorn's HTTP/1.1 implementation.",
)
@click.option("--access-log/--no-access-log", default=False, show_default=True)
@log_level_option("Of uvicorn and the spamfilter loggers.")
@pass_state
def serve(
    state: CliState,
    host: str | None,
    port: int | None,
    workers: int | None,
    allow_public_bind: bool,
    http: str,
    access_log: bool,
    log_level: str,
) -> None:
    """Run the HTTP API (uvicorn, app.api.app:app_factory)."""
    from app.binding import check_bind
    from app.bootstrap import migrate_database

    warn_unknown_variables()
    settings = with_server_options(state.settings, host, port, workers, allow_public_bind)
    check_bind(settings)
    revision = migrate_database(settings)  # a database that cannot be opened ends here
    announce_database(settings)
    click.echo(f"database at revision {revision}", err=True)
    os.environ.update(worker_environment(settings, state.config_file))

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
