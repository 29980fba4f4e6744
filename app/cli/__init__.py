"""The ``spamfilter`` command line: serve, learn, classify, forget, stats, user, classes,
eval, expire, db, export, import, backup.

Settings are built once here by ``app.settings.loading.load_settings`` (the TOML file chosen by
``--config``, the ``SPAMFILTER_*`` environment on top of it, ``--database-url`` on top of
both) and passed to every command; ``spamfilter config`` shows and checks them instead.
Every command goes through ``app.bootstrap`` and the service. Errors the service raises on
purpose become one line on stderr and an exit status: 1 for a message that cannot be
processed, 2 for usage and configuration, 75 (EX_TEMPFAIL) when the database is unavailable.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import click

if TYPE_CHECKING:
    from app.cli.context import CliState


class _Lazy(NamedTuple):
    """Where a subcommand lives, and its one-line help (shown by ``--help`` without
    importing it; a test holds it to the command's own)."""

    module: str
    attribute: str
    short_help: str


# Each subcommand's module is imported only when that subcommand runs: ``--version`` and
# ``--help`` then import click and this module alone, and ``filter`` no evaluation, bench or
# HTTP code.
LAZY_COMMANDS: dict[str, _Lazy] = {
    "backup": _Lazy("app.cli.data", "backup", "Copy the live SQLite database to PATH,..."),
    "bench": _Lazy("benchmarks.cli", "bench", "Benchmarks of the real service path."),
    "classes": _Lazy(
        "app.cli.classes", "classes_group", "The classes messages are learned as: list,..."
    ),
    "classify": _Lazy("app.cli.messages", "classify", "Print a verdict per message: verdict,..."),
    "config": _Lazy("app.cli.config", "config_group", "Show or check the settings (TOML file,..."),
    "eval": _Lazy("app.cli.evaluate", "evaluate", "Run the service over a corpus: online..."),
    "expire": _Lazy("app.cli.upkeep", "expire", "Expire tokens not learned for a while,..."),
    "export": _Lazy("app.cli.data", "export_command", "Write the learned models to a portable..."),
    "filter": _Lazy(
        "app.cli.filter", "filter_command", "Add X-Spam headers to the message on stdin..."
    ),
    "forget": _Lazy("app.cli.messages", "forget", "Remove learned messages from the model..."),
    "import": _Lazy(
        "app.cli.data", "import_command", "Read an export file (- for stdin) into the..."
    ),
    "learn": _Lazy("app.cli.messages", "learn", "Learn messages as spam or ham (PATH: file,..."),
    "milter": _Lazy("app.cli.milter", "milter", "Run the milter: X-Spam headers, and reject..."),
    "serve": _Lazy("app.cli.serve", "serve", "Run the HTTP API (uvicorn,..."),
    "spamd": _Lazy("app.cli.spamd", "spamd", "Serve SpamAssassin's spamd protocol..."),
    "stats": _Lazy("app.cli.users", "stats", "Learned messages and tokens per label, and..."),
    "user": _Lazy("app.cli.users", "user_group", "Per-user models: list them, delete one."),
}
SHORT_HELP_LIMIT = 45
# Commands whose code is not part of the runtime package: the benchmarks live in the source
# tree's ``benchmarks/`` (beside ``app/``), so an installed wheel has no ``bench`` command.
SOURCE_TREE_COMMANDS = frozenset({"bench"})


def _source_tree() -> Path:
    """The folder holding ``app/`` (and, in a checkout, ``benchmarks/``)."""
    return Path(__file__).resolve().parent.parent.parent


def _available(name: str) -> bool:
    """Whether a lazily imported command can be imported here."""
    if name not in SOURCE_TREE_COMMANDS:
        return True
    module = LAZY_COMMANDS[name].module.split(".")[0]
    return (_source_tree() / module / "__init__.py").is_file()


class _Commands(click.Group):
    """The command group: subcommands imported when they run (``LAZY_COMMANDS``), and the
    service's errors turned into one stderr line and an exit status."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *(name for name in LAZY_COMMANDS if _available(name))})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands or cmd_name not in LAZY_COMMANDS:
            return self.commands.get(cmd_name)
        if not _available(cmd_name):
            return None
        if cmd_name in SOURCE_TREE_COMMANDS and str(_source_tree()) not in sys.path:
            sys.path.append(str(_source_tree()))
        lazy = LAZY_COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(lazy.module), lazy.attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The subcommands and their one-line help, without importing any of them."""
        rows = [
            (name, LAZY_COMMANDS[name].short_help)
            if name in LAZY_COMMANDS
            else (name, self.commands[name].get_short_help_str(SHORT_HELP_LIMIT))
            for name in self.list_commands(ctx)
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        from app.cli.context import EXIT_PROCESSING, exit_code, fail
        from app.errors import SpamFilterError, describe

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
    """``spamfilter 0.1.0 (compiled: mypyc)``: the installed package's version ("unknown" when
    run uninstalled) and which build runs (``app.compiled.build_kind``).

    Looked up only when asked for: nothing happens at import.
    """
    if not value or ctx.resilient_parsing:
        return
    from importlib import metadata  # 20 ms of every command's start-up, so only here

    from app.compiled import build_kind

    try:
        version = metadata.version("spamfilter")
    except metadata.PackageNotFoundError:
        version = "unknown"
    click.echo(f"spamfilter {version} ({build_kind()})")
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
    from app.cli.context import ConfigRequest

    request = ConfigRequest(config, {"database_url": database_url} if database_url else {})
    if ctx.invoked_subcommand == "config":
        ctx.obj = request  # shown or checked there, problems included
        return
    ctx.obj = request.state()


@cli.group()
def db() -> None:
    """Database maintenance."""


@db.command()
@click.pass_obj
def upgrade(state: CliState) -> None:
    """Create the database or migrate it to the newest schema."""
    from app.bootstrap import migrate_database

    revision = migrate_database(state.settings)
    click.echo(f"database at revision {revision}")


def main() -> None:
    """Console-script entry point (``spamfilter``)."""
    cli.main(prog_name="spamfilter")
