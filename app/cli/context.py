"""What every command shares: the settings built once by the group, the service, exit codes.

The service is built lazily (``build_service`` pulls in SQLAlchemy and Alembic, about
0.4 s), so ``spamfilter --help`` and option errors answer at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from app.errors import (
    ConfigurationError,
    InvalidLabel,
    SpamFilterError,
    StorageConflict,
    StorageUnavailable,
)
from app.settings import Settings

if TYPE_CHECKING:
    from app.service import SpamFilter

F = TypeVar("F", bound=Callable[..., Any])

EXIT_PROCESSING = 1
EXIT_USAGE = 2
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
    """The settings of this invocation; ``database_url_given`` when --database-url was used."""

    settings: Settings
    database_url_given: bool


pass_state = click.make_pass_decorator(CliState)


def build(settings: Settings) -> SpamFilter:
    """The service for ``settings``, its database created or upgraded first."""
    from app.bootstrap import build_service

    return build_service(settings, migrate=True)


def exit_code(error: SpamFilterError) -> int:
    """The process exit status for an error the service raised on purpose."""
    if isinstance(error, StorageUnavailable | StorageConflict):
        return EXIT_TEMPFAIL
    if isinstance(error, ConfigurationError | InvalidLabel):
        return EXIT_USAGE
    return EXIT_PROCESSING


def fail(message: str, code: int) -> click.exceptions.Exit:
    """Print ``spamfilter: message`` on stderr and return the exit to raise."""
    click.echo(f"spamfilter: {message}", err=True)
    return click.exceptions.Exit(code)
