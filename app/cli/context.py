"""What every command shares: the settings built once by the group, the service, exit codes.

The group reads its ``--config`` and ``--database-url`` into a ``ConfigRequest``; every
command but ``config`` gets the ``CliState`` it loads (``app.settings.loading.load_settings``).

The service is built lazily (``build_service`` pulls in pydantic and SQLAlchemy, about
0.3 s, and Alembic when the database is behind the code), so ``spamfilter --help`` and
option errors answer at once.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from app.errors import (
    ConfigurationError,
    InvalidLabel,
    InvalidUser,
    SpamFilterError,
    StorageConflict,
    StorageUnavailable,
)
from app.settings.schema import Settings

if TYPE_CHECKING:
    from app.service import SpamFilter

F = TypeVar("F", bound=Callable[..., Any])

EXIT_PROCESSING = 1
EXIT_USAGE = 2
EXIT_BAD_USER = 64  # sysexits.h EX_USAGE: a --user that cannot name a model
EXIT_TEMPFAIL = 75  # sysexits.h EX_TEMPFAIL: try again later (database down or locked)
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


def log_level_option(help_text: str) -> Callable[[F], F]:
    """The ``--log-level`` option of the long-running commands (default info)."""
    return click.option(
        "--log-level",
        type=click.Choice(LOG_LEVELS),
        default="info",
        show_default=True,
        help=help_text,
    )


def setup_logging(level: str) -> None:
    """Log lines on stderr with a time stamp; the spamfilter loggers at ``level``."""
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("app").setLevel(level.upper())


@dataclass(frozen=True, slots=True)
class CliState:
    """The settings of this invocation; ``database_url_given`` when --database-url was used;
    ``config_file`` the TOML file they were read from, if any."""

    settings: Settings
    database_url_given: bool
    config_file: Path | None = None


@dataclass(frozen=True, slots=True)
class ConfigRequest:
    """The group's ``--config`` and its setting options (``--database-url``), not yet read."""

    config: Path | None
    options: Mapping[str, Any] = field(default_factory=dict)

    def state(self, environ: Mapping[str, str] = os.environ) -> CliState:
        """The settings these ask for; a configuration problem exits 2 with one line."""
        from app.settings.loading import load_configuration

        try:
            loaded = load_configuration(self.config, environ, self.options)
        except ConfigurationError as error:
            raise fail(str(error), EXIT_USAGE) from error
        return CliState(loaded.settings, "database_url" in self.options, loaded.file)


pass_state = click.make_pass_decorator(CliState)
pass_request = click.make_pass_decorator(ConfigRequest)


def build(settings: Settings, recorded: bool = True) -> SpamFilter:
    """The service for ``settings``, its database created or upgraded first; with
    ``recorded`` its learn, forget and classify calls are recorded for the web console
    (Dovecot's learn-on-move feedback arrives through ``spamfilter learn``). Benchmarks and
    evaluations, on databases of their own, pass False."""
    from app.bootstrap import build_service

    service = build_service(settings, migrate=True, record=recorded)
    context = click.get_current_context(silent=True)
    if context is not None:
        # Closed when the command ends rather than at interpreter exit: the console's
        # recorder writes what it holds while the database is surely still there.
        context.call_on_close(service.close)
    return service


def user_option(help_text: str) -> Callable[[F], F]:
    """The ``--user`` option: whose model a command reads or trains (default: site-wide)."""
    return click.option("--user", "-u", metavar="USER", default=None, help=help_text)


def exit_code(error: SpamFilterError) -> int:
    """The process exit status for an error the service raised on purpose."""
    if isinstance(error, StorageUnavailable | StorageConflict):
        return EXIT_TEMPFAIL
    if isinstance(error, ConfigurationError | InvalidLabel):
        return EXIT_USAGE
    if isinstance(error, InvalidUser):
        return EXIT_BAD_USER
    return EXIT_PROCESSING


def warn_unknown_variables(environ: Mapping[str, str] = os.environ) -> None:
    """A stderr line per ``SPAMFILTER_*`` variable that names no setting (daemons at start)."""
    from app.settings.loading import unknown_variables

    for line in unknown_variables(environ):
        click.echo(f"spamfilter: warning: {line}", err=True)


def announce(line: str) -> None:
    """One progress line of a daemon's start-up on stderr."""
    click.echo(line, err=True)


def fail(message: str, code: int) -> click.exceptions.Exit:
    """Print ``spamfilter: message`` on stderr and return the exit to raise."""
    click.echo(f"spamfilter: {message}", err=True)
    return click.exceptions.Exit(code)
