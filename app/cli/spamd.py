"""spamd: check the bind, migrate once, then serve SpamAssassin's spamd protocol.

spamc, Exim's ``spam=`` ACL condition and other spamc clients use it unchanged (see
docs/integration/spamd.md). The listener has no authentication (neither has spamd), so an
address other than loopback needs ``--allow-public-bind``; TELL (``spamc -L``) changes the
model and is refused unless ``--allow-tell`` (or ``SPAMFILTER_SPAMD__ALLOW_TELL=true``), and
then taken only from the peers of ``spamd.tell_from`` (loopback by default).
"""

from __future__ import annotations

import click

from app.binding import check_open_listener
from app.cli.context import (
    CliState,
    announce_database,
    log_level_option,
    pass_state,
    setup_logging,
    warn_unknown_variables,
)
from app.settings.schema import Settings


def with_spamd_options(
    settings: Settings, host: str | None, port: int | None, allow_tell: bool
) -> Settings:
    """``settings`` with the command-line spamd options applied (None keeps the setting)."""
    changes: dict[str, object] = {"host": host, "port": port}
    update = {key: value for key, value in changes.items() if value is not None}
    if allow_tell:
        update["allow_tell"] = True
    return settings.model_copy(update={"spamd": settings.spamd.model_copy(update=update)})


def check_spamd_bind(host: str, allow_public_bind: bool) -> None:
    """Raise ConfigurationError for a non-loopback address without ``--allow-public-bind``.

    The spamd protocol has no authentication: anyone who reaches the port can have mail
    classified and, with TELL enabled, change the model.
    """
    check_open_listener(
        host,
        allow_public_bind,
        f"refusing to listen on {host}: the spamd protocol has no authentication; "
        "bind 127.0.0.1, or pass --allow-public-bind and restrict access with a firewall",
    )


@click.command()
@click.option("--host", help="Address to bind (default: settings, 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), help="TCP port (default: 783).")
@click.option(
    "--allow-tell",
    is_flag=True,
    help="Accept TELL (spamc -L spam|ham|forget): learn and forget, like spamd --allow-tell.",
)
@click.option(
    "--allow-public-bind",
    is_flag=True,
    help="Allow a non-loopback address (the protocol has no authentication).",
)
@log_level_option("Of the spamfilter loggers (a line per request at info; refusals too).")
@pass_state
def spamd(
    state: CliState,
    host: str | None,
    port: int | None,
    allow_tell: bool,
    allow_public_bind: bool,
    log_level: str,
) -> None:
    """Serve SpamAssassin's spamd protocol (spamc, Exim's spam= condition)."""
    setup_logging(log_level)
    from app.adapters.spamd.server import main as entry
    from app.bootstrap import daemon_service, migrate_database

    warn_unknown_variables()
    settings = with_spamd_options(state.settings, host, port, allow_tell)
    check_spamd_bind(settings.spamd.host, allow_public_bind)
    revision = migrate_database(settings)  # a database that cannot be opened ends here
    announce_database(settings)
    click.echo(f"database at revision {revision}", err=True)
    allowed = ", ".join(settings.spamd.tell_from)
    tell = f"enabled from {allowed}" if settings.spamd.allow_tell else "disabled"

    def ready(bound_host: str, bound_port: int) -> None:
        click.echo(f"spamd listening on {bound_host}:{bound_port} (TELL {tell})", err=True)

    metrics = (settings.spamd.host, settings.spamd.metrics_port)
    with daemon_service(settings, "spamd", metrics) as service:
        if settings.spamd.metrics_port is not None:
            where = f"{settings.spamd.host}:{settings.spamd.metrics_port}"
            click.echo(f"metrics on http://{where}/metrics", err=True)
        entry(service, settings, ready)
