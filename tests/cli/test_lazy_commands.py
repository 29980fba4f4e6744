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
from tests.environment import without_settings

# Never imported by --version or --help: settings, storage, service, web and eval stacks.
HEAVY = ("pydantic", "sqlalchemy", "alembic", "fastapi", "uvicorn", "starlette", "app.settings",
         "app.service", "app.storage", "app.evaluation", "app.api")  # fmt: skip
# Never imported by one judgement through `spamfilter filter` or `spamfilter-filter`: the web
# stack, the migrations, evaluation and benchmarks, the daemons' start-up, metrics, the ORM.
NOT_FOR_A_JUDGEMENT = ("alembic", "fastapi", "uvicorn", "starlette", "app.api",
                       "app.evaluation", "matplotlib", "numpy", "benchmarks", "app.daemons",
                       "prometheus_client", "sqlalchemy.orm")  # fmt: skip
SPAM = b"Subject: cheap pills\n\nbuy cheap pills now\n"
HAM = b"Subject: lunch\n\nlunch with the team tomorrow\n"

PROBE = """
import json, sys
from app.cli import cli
try:
    cli.main(sys.argv[1:], prog_name="spamfilter", standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


# The console script ``spamfilter-filter``, then the modules it imported (on stderr).
FILTER_PROBE = """
import json, sys
from app.adapters.pipe.main import main
code = main(sys.argv[1:])
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
sys.exit(code)
"""


def _imported(
    args: list[str],
    cwd: Path,
    stdin: bytes = b"",
    env: dict[str, str] | None = None,
    probe: str = PROBE,
) -> set[str]:
    return _probe(args, cwd, stdin, env, probe)[1]


def _probe(
    args: list[str], cwd: Path, stdin: bytes, env: dict[str, str] | None, probe: str
) -> tuple[subprocess.CompletedProcess[bytes], set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", probe, *args],
        input=stdin, capture_output=True, cwd=cwd, env=env, timeout=120, check=False,
    )  # fmt: skip
    modules: list[str] = json.loads(done.stderr.decode().strip().splitlines()[-1])
    return done, set(modules)


@pytest.fixture
def trained_database(tmp_path: Path) -> dict[str, str]:
    """The environment of a process judging with a migrated SQLite model that learned one
    spam and one ham (so a filter call goes all the way to a verdict)."""
    env = without_settings(
        {
            "SPAMFILTER_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}",
            "SPAMFILTER_TRAINING_MODE": "everything",
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"),  # no config file of the user's
        }
    )
    for label, raw in (("spam", SPAM), ("ham", HAM)):
        learned = subprocess.run(
            [sys.executable, "-c", "from app.cli import main; main()", "learn", "-q", "-l",
             label, "-"],
            input=raw, capture_output=True, cwd=tmp_path, env=env, timeout=120, check=False,
        )  # fmt: skip
        assert learned.returncode == 0, learned.stderr
    return env


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
    # The installed version is looked up for --version alone (importlib.metadata: 20 ms).
    assert ("importlib.metadata" in modules) == (args == ["--version"])


def test_a_filter_call_imports_only_what_one_judgement_needs(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "SPAMFILTER_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    modules = _imported(["filter"], tmp_path, b"Subject: hi\n\nhello\n", env)
    assert "app.adapters.pipe.filter" in modules  # it did run
    assert _offenders(modules, NOT_FOR_A_JUDGEMENT) == []
    assert "app.cli.evaluate" not in modules and "benchmarks.cli" not in modules


@pytest.mark.parametrize(
    ("probe", "args"), [(PROBE, ["filter"]), (FILTER_PROBE, [])], ids=["filter", "pipe"]
)
def test_a_judgement_start_to_verdict_imports_no_web_migration_or_bench_code(
    trained_database: dict[str, str], tmp_path: Path, probe: str, args: list[str]
) -> None:
    done, modules = _probe(args, tmp_path, SPAM, trained_database, probe)
    assert b"X-Spam-Status: " in done.stdout  # judged: the whole path ran, not an error
    assert done.returncode in (0, 1, 2), done.stderr
    assert _offenders(modules, NOT_FOR_A_JUDGEMENT) == []
    if probe == FILTER_PROBE:  # the console script skips the command-line stack entirely
        assert _offenders(modules, ("click", "app.cli")) == []


@pytest.mark.parametrize(
    "args", [["classify", "-"], ["learn", "-q", "-l", "spam", "-"]], ids=["classify", "learn"]
)
def test_a_message_command_on_a_current_database_imports_no_migrations_and_no_bar(
    trained_database: dict[str, str], tmp_path: Path, args: list[str]
) -> None:
    # Dovecot's learn-on-move runs one `spamfilter learn` per message moved: no migrations
    # on a database already current, and no progress bar's rich for one message.
    done, modules = _probe(args, tmp_path, SPAM, trained_database, PROBE)
    assert done.returncode == 0, done.stderr
    answer = done.stdout.split()[:1]  # the verdict, or what the learn did
    wanted = ("spam", "ham", "unsure") if args[0] == "classify" else ("learned",)
    assert answer in [[word.encode()] for word in wanted], done.stderr
    assert _offenders(modules, ("alembic", "mako", "rich")) == []


def test_a_database_behind_the_code_is_still_migrated_first(tmp_path: Path) -> None:
    from app.storage.engine import make_engine
    from app.storage.migrate import upgrade
    from app.storage.store import current_revision
    from app.storage.tables import SCHEMA_REVISION

    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    engine = make_engine(url)
    previous = f"{int(SCHEMA_REVISION) - 1:04d}"
    upgrade(engine, previous)  # as an older release left it
    assert current_revision(engine) == previous
    env = without_settings(
        {"SPAMFILTER_DATABASE_URL": url, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    )
    done, modules = _probe(["classify", "-"], tmp_path, SPAM, env, PROBE)
    assert done.stdout.split()[:1] in ([b"spam"], [b"ham"], [b"unsure"]), done.stderr
    assert "alembic" in modules
    assert current_revision(engine) == SCHEMA_REVISION
    engine.dispose()


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
