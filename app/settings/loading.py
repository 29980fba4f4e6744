"""Where the settings come from: a TOML file, the environment, a ``.env`` file, options.

Every entry point calls ``load_settings`` (or ``load_configuration``, which also says where
each value came from), so the HTTP workers, spamd, the milter, the pipe filter and the CLI
read one configuration the same way. The file is the first of these that exists:

1. ``--config PATH`` (the ``config`` argument), then ``SPAMFILTER_CONFIG``: either must exist;
2. ``/etc/spamfilter/spamfilter.toml``;
3. ``$XDG_CONFIG_HOME/spamfilter/spamfilter.toml`` (default ``~/.config/...``).

Priority, highest first: command-line options, ``SPAMFILTER_*`` variables, a ``.env`` file in
the working folder, the TOML file, the defaults. Its keys mirror the settings: top-level keys
and one table per group (``[model]``, ``[server]``, ...); an unknown key is an error. Nothing
here runs at import.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ValidationError
from pydantic_settings import (
    DotEnvSettingsSource,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    TomlConfigSettingsSource,
)

from app.errors import ConfigurationError
from app.settings.schema import Settings

CONFIG_VARIABLE = "SPAMFILTER_CONFIG"
SYSTEM_CONFIG = Path("/etc/spamfilter/spamfilter.toml")
PREFIX = "SPAMFILTER_"
# SPAMFILTER_* variables that are not settings: the config file, the pipe filter's daemon
# client, the Dovecot wrappers' programs, and the test suite's.
NON_SETTINGS = frozenset(
    {
        CONFIG_VARIABLE,
        "SPAMFILTER_FILTER_URL",
        "SPAMFILTER_FILTER_TIMEOUT",
        "SPAMFILTER_FILTER_BIN",
        "SPAMFILTER_BIN",
        "SPAMFILTER_UPDATE_GOLDEN",
    }
)
NON_SETTING_PREFIXES = ("SPAMFILTER_TEST_",)
SECRET = "***"


class ConfigurationProblems(ConfigurationError):
    """One or more problems with the configuration; ``problems`` has one line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class Configuration:
    """Effective settings, the file read (if any) and each dotted key's origin.

    An origin is ``file PATH``, ``env NAME``, ``dotenv PATH`` or ``option``; keys missing
    from ``origins`` have their default.
    """

    settings: Settings
    file: Path | None
    origins: dict[str, str] = field(default_factory=dict)

    def origin(self, key: str) -> str:
        """Where the dotted ``key`` came from (``default`` when nowhere)."""
        return self.origins.get(key, "default")


def find_config_file(config: Path | None, environ: Mapping[str, str]) -> Path | None:
    """The TOML file to read, or None; ConfigurationError when an explicit one is missing."""
    explicit = config or (Path(environ[CONFIG_VARIABLE]) if environ.get(CONFIG_VARIABLE) else None)
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigurationProblems([f"config file {explicit} does not exist"])
        return explicit
    home = Path(environ["HOME"]) if environ.get("HOME") else Path.home()
    user_dir = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    for candidate in (SYSTEM_CONFIG, user_dir / "spamfilter" / "spamfilter.toml"):
        if candidate.is_file():
            return candidate
    return None


def load_settings(
    config: Path | None = None,
    environ: Mapping[str, str] = os.environ,
    options: Mapping[str, Any] | None = None,
) -> Settings:
    """Settings from the config file, ``environ`` and ``options`` (see the module docstring).

    Raises ConfigurationError (one line) for a missing explicit file, unreadable TOML, an
    unknown key in the file or an invalid value.
    """
    return load_configuration(config, environ, options).settings


def load_configuration(
    config: Path | None = None,
    environ: Mapping[str, str] = os.environ,
    options: Mapping[str, Any] | None = None,
    env_file: Path | None = Path(".env"),
) -> Configuration:
    """``load_settings`` with the file used and where each value came from."""
    file = find_config_file(config, environ)
    toml = _toml_source(file)
    env = _EnvironSource(Settings, environ)
    dotenv = DotEnvSettingsSource(Settings, env_file=env_file)
    init = InitSettingsSource(Settings, dict(options or {}))
    labelled: list[tuple[str, PydanticBaseSettingsSource]] = [
        ("option", init),
        ("env", env),
        (f"dotenv {env_file}", dotenv),
        (f"file {file}", toml),
    ]
    origins: dict[str, str] = {}
    for label, source in reversed(labelled):
        for key in _dotted(source()):
            origins[key] = _env_name(key, environ) if label == "env" else label
    try:
        settings = Settings(_build_sources=(tuple(s for _, s in labelled), {}))
    except ValidationError as error:
        raise ConfigurationProblems(
            [f"invalid settings: {line}" for line in _problems(error, origins)]
        ) from error
    return Configuration(settings, file, origins)


def _problems(error: ValidationError, origins: Mapping[str, str]) -> list[str]:
    """A line per invalid value: ``key: message (origin)``."""
    lines = []
    for item in error.errors():
        key = ".".join(str(p) for p in item["loc"])
        where = f" ({origins[key]})" if key in origins else ""
        lines.append(f"{key}: {item['msg']}{where}")
    return lines


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One line per ``SPAMFILTER_*`` variable that names no setting, with the nearest name."""
    known = setting_variables()
    lines = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith(PREFIX) or upper in known or upper in NON_SETTINGS:
            continue
        if upper.startswith(NON_SETTING_PREFIXES):
            continue
        import difflib  # only for a name that is wrong: one judgement never needs it

        # Compared without the prefix, which every name shares and would make all look alike.
        bare = sorted(known_name.removeprefix(PREFIX) for known_name in known)
        close = difflib.get_close_matches(upper.removeprefix(PREFIX), bare, n=1)
        hint = f" (did you mean {PREFIX}{close[0]}?)" if close else ""
        lines.append(f"unknown variable {name}{hint}")
    return lines


def setting_variables() -> set[str]:
    """Every ``SPAMFILTER_*`` name a setting is read from (a group both whole and by field)."""
    names = set()
    for key, info in Settings.model_fields.items():
        names.add(f"{PREFIX}{key.upper()}")
        group = info.annotation
        if isinstance(group, type) and issubclass(group, BaseModel):
            names.update(f"{PREFIX}{key.upper()}__{sub.upper()}" for sub in group.model_fields)
    return names


def describe_database(url: str) -> str:
    """``sqlite /path/file.db`` or ``postgresql user@host:port/db``: never the password."""
    scheme, _, rest = url.partition("://")
    dialect = scheme.split("+", 1)[0]
    if dialect == "sqlite":
        return f"sqlite {rest[1:] if rest.startswith('/') else rest or ':memory:'}"
    parts = urlsplit(url)
    user = f"{unquote(parts.username)}@" if parts.username else ""
    port = f":{parts.port}" if parts.port else ""
    return f"{dialect} {user}{parts.hostname or 'localhost'}{port}{parts.path}"


def mask_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{user}:{SECRET}@{host}").geturl()


class _EnvironSource(EnvSettingsSource):
    """The ``SPAMFILTER_*`` variables of ``environ`` rather than of ``os.environ``."""

    def __init__(self, settings_cls: type[Settings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        fold = (lambda name: name) if self.case_sensitive else str.lower
        return {
            fold(name): value
            for name, value in self._environ.items()
            if not (self.env_ignore_empty and value == "")
        }


def _toml_source(file: Path | None) -> TomlConfigSettingsSource:
    """The file's values (none without a file); unreadable TOML or unknown keys raise."""
    try:
        source = TomlConfigSettingsSource(Settings, toml_file=file)
    except tomllib.TOMLDecodeError as error:
        raise ConfigurationProblems([f"{file}: {error}"]) from error
    except OSError as error:
        raise ConfigurationProblems([f"{file}: {error.strerror or error}"]) from error
    unknown = _unknown_keys(source.toml_data, Settings)
    if unknown:
        raise ConfigurationProblems([f"{file}: {line}" for line in unknown])
    return source


def _unknown_keys(data: Mapping[str, Any], model: type[BaseModel], prefix: str = "") -> list[str]:
    problems = []
    fields = model.model_fields
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        info = fields.get(key)
        if info is None:
            import difflib  # only for a key that is wrong

            close = difflib.get_close_matches(key, list(fields), n=1)
            hint = f" (did you mean {prefix}{close[0]}?)" if close else ""
            problems.append(f"unknown key {dotted}{hint}")
            continue
        group = info.annotation
        if isinstance(group, type) and issubclass(group, BaseModel) and isinstance(value, dict):
            problems.extend(_unknown_keys(value, group, f"{dotted}."))
    return problems


def _dotted(data: Mapping[str, Any], prefix: str = "") -> list[str]:
    keys = []
    for key, value in data.items():
        if isinstance(value, dict) and value:
            keys.extend(_dotted(value, f"{prefix}{key}."))
        else:
            keys.append(f"{prefix}{key}")
    return keys


def _env_name(key: str, environ: Mapping[str, str]) -> str:
    present = {name.upper() for name in environ}
    nested = PREFIX + key.replace(".", "__").upper()
    if nested in present:
        return f"env {nested}"
    return f"env {PREFIX}{key.split('.', 1)[0].upper()}"
