"""serve: the HTTP API under uvicorn; start-up (bind check, one migration, the workers'
environment, uvicorn) is ``app.daemons.run_http``.

uvicorn and FastAPI are imported only when it runs, so the other commands start without them.
"""

from __future__ import annotations

import click

from app.cli.context import (
    CliState,
    announce,
    log_level_option,
    pass_state,
    warn_unknown_variables,
)
from app.settings.schema import Settings

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
    from app.daemons import run_http

    warn_unknown_variables()
    settings = with_server_options(state.settings, host, port, workers, allow_public_bind)
    run_http(
        settings,
        state.config_file,
        announce,
        http=http,
        access_log=access_log,
        log_level=log_level,
    )
