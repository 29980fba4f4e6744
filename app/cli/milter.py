"""milter: serve the mail-filter protocol to Postfix (smtpd_milters, non_smtpd_milters) and
Sendmail (INPUT_MAIL_FILTER); see docs/integration/postfix.md.

Start-up (bind check, migration, service, listener) is ``app.daemons.run_milter``,
imported when the command runs, so the other commands start without the transport and the
database layer.
"""

from __future__ import annotations

import click

from app.cli.context import (
    CliState,
    log_level_option,
    pass_state,
    setup_logging,
    warn_unknown_variables,
)


@click.command()
@click.option(
    "--socket",
    "socket_spec",
    metavar="SPEC",
    help="inet:PORT@HOST, inet6:PORT@HOST, unix:PATH or local:PATH "
    "(default: SPAMFILTER_MILTER__SOCKET, inet:8891@127.0.0.1).",
)
@click.option(
    "--allow-public-bind",
    is_flag=True,
    help="Allow a non-loopback TCP address (the milter protocol has no authentication).",
)
@log_level_option("Of the spamfilter loggers (one line per message at info; no addresses).")
@pass_state
def milter(
    state: CliState, socket_spec: str | None, allow_public_bind: bool, log_level: str
) -> None:
    """Run the milter: X-Spam headers, and reject or quarantine as the mail settings say."""
    setup_logging(log_level)
    warn_unknown_variables()
    from app.daemons import run_milter

    run_milter(state.settings, socket_spec, allow_public_bind, _announce)


def _announce(line: str) -> None:
    click.echo(f"spamfilter: {line}", err=True)
