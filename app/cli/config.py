"""config show / config check: the effective settings, where each came from, and problems.

``show`` prints one ``key = value  # origin`` line per setting (dotted names for the groups:
valid TOML, so it can seed a config file), secrets masked; ``--json`` for programs.
``check`` validates the file, the environment and the options together and names every
``SPAMFILTER_*`` variable that matches no setting; exit 0 ``ok`` or 2 with a line per problem.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, NoReturn

import click

from app.cli.context import EXIT_USAGE, ConfigRequest, pass_request


@click.group("config")
def config_group() -> None:
    """Show or check the settings (TOML file, SPAMFILTER_* environment, options)."""


@config_group.command()
@click.option("--json", "as_json", is_flag=True, help="Print the settings as JSON.")
@pass_request
def show(request: ConfigRequest, as_json: bool) -> None:
    """Print every effective setting and where it came from (default, file, env, option)."""
    from app.settings.loading import ConfigurationProblems, load_configuration

    try:
        loaded = load_configuration(request.config, os.environ, request.options)
    except ConfigurationProblems as error:
        _fail(error.problems)
    values = effective_values(loaded.settings.model_dump(mode="json"))
    if as_json:
        doc = {
            "file": str(loaded.file) if loaded.file else None,
            "settings": {
                key: {"value": value, "origin": loaded.origin(key)} for key, value in values.items()
            },
        }
        click.echo(json.dumps(doc, indent=1))
        return
    click.echo(f"# config file: {loaded.file or 'none'}")
    for key, value in values.items():
        click.echo(f"{key} = {json.dumps(value)}  # {loaded.origin(key)}")


@config_group.command()
@pass_request
def check(request: ConfigRequest) -> None:
    """Validate the settings; name SPAMFILTER_* variables that match no setting."""
    from app.settings.loading import ConfigurationProblems, load_configuration, unknown_variables

    problems = unknown_variables(os.environ)
    try:
        loaded = load_configuration(request.config, os.environ, request.options)
    except ConfigurationProblems as error:
        problems = error.problems + problems
    if problems:
        _fail(problems)
    click.echo(f"ok: {loaded.file or 'no config file (defaults and environment)'}")


def effective_values(dumped: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Settings as dotted keys, secrets masked: API and read tokens, the console's session key
    and a database URL's password."""
    from app.settings.loading import SECRET, mask_url

    values: dict[str, Any] = {}
    for key, value in dumped.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            values.update(effective_values(value, f"{dotted}."))
        elif dotted in ("api_tokens", "read_tokens"):
            values[dotted] = [SECRET for _ in value]
        elif dotted == "console.session_key":
            values[dotted] = SECRET if value else value
        elif dotted == "database_url":
            values[dotted] = mask_url(value)
        else:
            values[dotted] = value
    return values


def _fail(problems: list[str]) -> NoReturn:
    for line in problems:
        click.echo(f"spamfilter: {line}", err=True)
    raise click.exceptions.Exit(EXIT_USAGE)
