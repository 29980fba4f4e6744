"""The command group imports a subcommand's modules only when that subcommand runs.

Each check runs in a new interpreter, so ``sys.modules`` shows what one call imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from app.cli import LAZY_COMMANDS, SHORT_HELP_LIMIT, cli

# Never imported by --version or --help: settings, storage, service, web and eval stacks.
HEAVY = ("pydantic", "sqlalchemy", "alembic", "fastapi", "uvicorn", "starlette", "app.settings",
         "app.service", "app.storage", "app.evaluation", "app.api")  # fmt: skip
# Never imported by one judgement through `spamfilter filter`.
NOT_FOR_A_JUDGEMENT = ("alembic", "fastapi", "uvicorn", "starlette", "app.api",
                       "app.evaluation", "matplotlib", "numpy")  # fmt: skip

PROBE = """
import json, sys
from app.cli import cli
try:
    cli.main(sys.argv[1:], prog_name="spamfilter", standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _imported(
    args: list[str], cwd: Path, stdin: bytes = b"", env: dict[str, str] | None = None
) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        input=stdin, capture_output=True, cwd=cwd, env=env, timeout=120, check=False,
    )  # fmt: skip
    modules: list[str] = json.loads(done.stderr.decode().strip().splitlines()[-1])
    return set(modules)


def _offenders(modules: set[str], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in forbidden))


def test_the_one_line_help_shown_is_each_command_s_own() -> None:
    ctx = click.Context(cli)
    for name, lazy in LAZY_COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None and command.name == name
        assert lazy.short_help == command.get_short_help_str(SHORT_HELP_LIMIT), name


def test_every_command_is_listed_and_found() -> None:
    ctx = click.Context(cli)
    names = cli.list_commands(ctx)
    assert {"serve", "learn", "classify", "filter", "eval", "db", "bench"} <= set(names)
    assert all(cli.get_command(ctx, name) is not None for name in names)
    assert cli.get_command(ctx, "no-such-command") is None


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["-h"]])
def test_version_and_help_import_no_command(args: list[str], tmp_path: Path) -> None:
    modules = _imported(args, tmp_path)
    assert "app.cli" in modules
    assert _offenders(modules, HEAVY) == []
    assert not [m for m in modules if m.startswith("app.cli.")]


def test_a_filter_call_imports_only_what_one_judgement_needs(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "SPAMFILTER_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    modules = _imported(["filter"], tmp_path, b"Subject: hi\n\nhello\n", env)
    assert "app.adapters.pipe.filter" in modules  # it did run
    assert _offenders(modules, NOT_FOR_A_JUDGEMENT) == []
    assert "app.cli.evaluate" not in modules and "benchmarks.cli" not in modules


def test_bench_exists_only_where_the_source_tree_has_the_benchmarks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.cli as commands

    ctx = click.Context(cli)
    assert "bench" in cli.list_commands(ctx)  # a checkout: benchmarks/ beside app/
    monkeypatch.setattr(commands, "_source_tree", lambda: tmp_path)  # an installed wheel
    assert "bench" not in cli.list_commands(ctx)
    assert cli.get_command(ctx, "bench") is None
    assert cli.get_command(ctx, "eval") is not None
