"""The ``spamfilter`` command line: serve, learn, classify, forget, stats, user, eval,
expire, db, export, import, backup.

Settings are built once here by ``app.config.load_settings`` (the TOML file chosen by
``--config``, the ``SPAMFILTER_*`` environment on top of it, ``--database-url`` on top of
both) and passed to every command; ``spamfilter config`` shows and checks them instead.
Every command goes through ``app.bootstrap`` and the service. Errors the service raises on
purpose become one line on stderr and an exit status: 1 for a message that cannot be
processed, 2 for usage and configuration, 75 (EX_TEMPFAIL) when the database is unavailable.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

import click

from app.cli.bench import bench
from app.cli.config import config_group
from app.cli.context import (
    EXIT_PROCESSING,
    CliState,
    ConfigRequest,
    exit_code,
    fail,
    pass_state,
)
from app.cli.data import backup, export_command, import_command
from app.cli.evaluate import evaluate
from app.cli.filter import filter_command
from app.cli.messages import classify, forget, learn
from app.cli.milter import milter
from app.cli.serve import serve
from app.cli.spamd import spamd
from app.cli.upkeep import expire
from app.cli.users import stats, user_group
from app.errors import SpamFilterError, describe


class _Commands(click.Group):
    """A group that turns the service's errors into one stderr line and an exit status."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SpamFilterError as error:
            raise fail(describe(error), exit_code(error)) from error
        except BrokenPipeError:
            raise  # a reader such as `head` went away: click exits quietly
        except OSError as error:
            where = f"{error.filename}: " if error.filename else ""
            raise fail(f"{where}{error.strerror or error}", EXIT_PROCESSING) from error


def _show_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``spamfilter 0.1.0``: the installed package's version ("unknown" when run uninstalled).

    Looked up only when asked for: nothing happens at import.
    """
    if not value or ctx.resilient_parsing:
        return
    try:
        version = metadata.version("spamfilter")
    except metadata.PackageNotFoundError:
        version = "unknown"
    click.echo(f"spamfilter {version}")
    ctx.exit()


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    "-V",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Print the version and exit.",
)
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="PATH",
    help="TOML settings file (default: SPAMFILTER_CONFIG, /etc/spamfilter/spamfilter.toml, "
    "then ~/.config/spamfilter/spamfilter.toml).",
)
@click.option(
    "--database-url",
    metavar="URL",
    help="sqlite:///PATH or postgresql://... (default: SPAMFILTER_DATABASE_URL).",
)
@click.pass_context
def cli(ctx: click.Context, config: Path | None, database_url: str | None) -> None:
    """A Naive Bayes spam filter that learns from every correction."""
    request = ConfigRequest(config, {"database_url": database_url} if database_url else {})
    if ctx.invoked_subcommand == "config":
        ctx.obj = request  # shown or checked there, problems included
        return
    ctx.obj = request.state()


@cli.group()
def db() -> None:
    """Database maintenance."""


@db.command()
@pass_state
def upgrade(state: CliState) -> None:
    """Create the database or migrate it to the newest schema."""
    from app.bootstrap import migrate_database

    revision = migrate_database(state.settings)
    click.echo(f"database at revision {revision}")


cli.add_command(serve)
cli.add_command(learn)
cli.add_command(classify)
cli.add_command(forget)
cli.add_command(evaluate)
cli.add_command(filter_command)
cli.add_command(spamd)
cli.add_command(milter)
cli.add_command(bench)
cli.add_command(config_group)
cli.add_command(export_command)
cli.add_command(import_command)
cli.add_command(backup)
cli.add_command(expire)
cli.add_command(stats)
cli.add_command(user_group)


def main() -> None:
    """Console-script entry point (``spamfilter``)."""
    cli.main(prog_name="spamfilter")
