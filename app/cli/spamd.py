"""spamd: serve SpamAssassin's spamd protocol (start-up: ``app.daemons.run_spamd``).

spamc, Exim's ``spam=`` ACL condition and other spamc clients use it unchanged (see
docs/integration/spamd.md). The listener has no authentication (neither has spamd), so an
address other than loopback needs ``--allow-public-bind``; TELL (``spamc -L``) changes the
model and is refused unless ``--allow-tell`` (or ``SPAMFILTER_SPAMD__ALLOW_TELL=true``), and
then taken only from the peers of ``spamd.tell_from`` (loopback by default).
"""

from __future__ import annotations

import click

from app.cli.context import (
    CliState,
    announce,
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
    from app.daemons import run_spamd

    warn_unknown_variables()
    settings = with_spamd_options(state.settings, host, port, allow_tell)
    run_spamd(settings, allow_public_bind, announce)
