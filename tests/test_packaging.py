"""Packaging: the runtime installs, and runs, without the test and analysis tools.

``requirements.lock`` is the runtime (what ``pip install .`` needs, exact pins) and
``requirements-dev.lock`` the runtime with the ``test``, ``eval`` and ``docs`` extras. The locks are
checked against pyproject.toml and against the dependency metadata of the installed
packages; the entry points are then run in a subprocess in which numpy, scipy, matplotlib
and scikit-learn cannot be imported, as in an install of the runtime lock alone.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
RUNTIME_LOCK = ROOT / "requirements.lock"
DEV_LOCK = ROOT / "requirements-dev.lock"
PROJECT = "spamfilter"

# Test and analysis tools: none may be part of the runtime.
NOT_RUNTIME = {
    "numpy",
    "scipy",
    "scikit-learn",
    "matplotlib",
    "mypy",
    "ruff",
    "pytest",
    "hypothesis",
    "import-linter",
}
# What the subprocess below cannot import (top-level module names).
BLOCKED = ("numpy", "scipy", "matplotlib", "sklearn")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^=\s;]+)$")


def pyproject() -> dict[str, Any]:
    """The ``[project]`` table of pyproject.toml."""
    with (ROOT / "pyproject.toml").open("rb") as file:
        table: dict[str, Any] = tomllib.load(file)["project"]
    return table


def lock(path: Path) -> dict[str, str]:
    """{canonical name: version} of a lock file; every line must be ``name==version``."""
    pins: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = PIN.match(line)
        assert match, f"{path.name}: {line!r} is not an exact pin"
        name = canonicalize_name(match[1])
        assert name not in pins, f"{path.name}: {name} pinned twice"
        pins[name] = match[2]
    return pins


def exact_version(requirement: Requirement) -> str:
    """The version of an ``==`` pin; fails for any other specifier."""
    (spec,) = requirement.specifier
    assert spec.operator == "==", f"{requirement} is not an exact pin"
    return spec.version


def runtime_requirements() -> list[Requirement]:
    return [Requirement(spec) for spec in pyproject()["dependencies"]]


def extra_requirements() -> dict[str, list[Requirement]]:
    extras = pyproject()["optional-dependencies"]
    return {name: [Requirement(spec) for spec in specs] for name, specs in extras.items()}


def closure(requirements: list[Requirement]) -> set[str]:
    """Canonical names of the installed distributions ``requirements`` need, transitively,
    as their metadata says on this platform (extras followed, markers evaluated)."""
    seen: set[tuple[str, str]] = set()
    pending = [r for r in requirements if applies(r.marker, "")]
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        for extra in {"", *requirement.extras} - {e for n, e in seen if n == name}:
            seen.add((name, extra))
            for spec in metadata.distribution(name).requires or []:
                child = Requirement(spec)
                if applies(child.marker, extra):
                    pending.append(child)
    return {name for name, _ in seen}


def applies(marker: Marker | None, extra: str) -> bool:
    """Whether a requirement with ``marker`` holds here, for ``extra`` ("" for none)."""
    return marker is None or marker.evaluate({"extra": extra})


# The locks


@pytest.mark.parametrize("path", [RUNTIME_LOCK, DEV_LOCK], ids=lambda p: p.name)
def test_the_locks_pin_every_package_exactly(path: Path) -> None:
    assert lock(path)


def test_the_runtime_lock_has_no_test_or_analysis_package() -> None:
    assert not NOT_RUNTIME & set(lock(RUNTIME_LOCK))


def test_the_runtime_dependencies_have_no_test_or_analysis_package() -> None:
    names = {canonicalize_name(r.name) for r in runtime_requirements()}
    assert not NOT_RUNTIME & names
    assert not NOT_RUNTIME & closure(runtime_requirements())


def test_every_runtime_dependency_is_pinned_in_the_runtime_lock() -> None:
    pins = lock(RUNTIME_LOCK)
    for requirement in runtime_requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in requirements.lock"
        assert pins[name] == exact_version(requirement), f"{requirement} vs {pins[name]}"


def test_the_runtime_lock_holds_what_the_dependencies_need_and_nothing_else() -> None:
    assert set(lock(RUNTIME_LOCK)) == closure(runtime_requirements())


def test_the_dev_lock_is_the_runtime_lock_and_the_extras() -> None:
    runtime, dev = lock(RUNTIME_LOCK), lock(DEV_LOCK)
    assert {name: dev.get(name) for name in runtime} == runtime
    tools = [r for reqs in extra_requirements().values() for r in reqs if r.name != PROJECT]
    for requirement in tools:
        name = canonicalize_name(requirement.name)
        assert dev.get(name) == exact_version(requirement), f"{requirement} vs {dev.get(name)}"
    assert set(dev) == closure(runtime_requirements() + tools)


def test_the_extras_name_only_extras_of_the_project() -> None:
    extras = extra_requirements()
    assert {"test", "eval", "plot"} <= set(extras)
    for requirements in extras.values():
        for requirement in requirements:
            if requirement.name == PROJECT:
                assert requirement.extras <= set(extras) and not requirement.specifier
    assert [r.name for r in extras["eval"]] == ["matplotlib"]
    assert [str(r) for r in extras["plot"]] == [f"{PROJECT}[eval]"]
    assert f"{PROJECT}[eval]" in {str(r) for r in extras["test"]}


# The entry points without the analysis packages

BLOCKER = f"""
import importlib.abc
import sys


class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {BLOCKED!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None


sys.meta_path.insert(0, Blocked())
"""


def run_blocked(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that cannot import numpy, scipy, matplotlib or
    sklearn (no SPAMFILTER_* variables, the home directory under ``tmp_path``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPAMFILTER_")}
    env.update(PYTHONPATH=str(ROOT), HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"))
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_blocker_blocks(tmp_path: Path) -> None:
    """The check below can fail: drawing a ROC curve needs matplotlib, and cannot."""
    result = run_blocked(
        """
        from pathlib import Path
        from app.evaluation.plot import plot_roc

        plot_roc(["ham", "spam"], [-1.0, 1.0], Path("roc.png"), "roc")
        """,
        tmp_path,
    )
    assert result.returncode != 0
    assert "No module named 'matplotlib" in result.stderr and "(blocked)" in result.stderr


def test_the_cli_version_and_every_help_work_without_analysis_packages(tmp_path: Path) -> None:
    result = run_blocked(
        """
        import sys
        import click
        from click.testing import CliRunner
        from app.cli import cli

        def paths(command, prefix):
            yield prefix
            if isinstance(command, click.Group):
                ctx = click.Context(command)
                for name in command.list_commands(ctx):
                    yield from paths(command.get_command(ctx, name), [*prefix, name])

        runner = CliRunner()
        version = runner.invoke(cli, ["--version"])
        assert version.exit_code == 0 and version.output.startswith("spamfilter "), version
        for path in paths(cli, []):
            reply = runner.invoke(cli, [*path, "--help"])
            assert reply.exit_code == 0, (path, reply.output, reply.exception)
            print(" ".join(["spamfilter", *path]))
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    for command in ("spamfilter", "spamfilter serve", "spamfilter eval", "spamfilter db upgrade"):
        assert command in result.stdout.splitlines()


def test_the_api_classifies_without_analysis_packages(tmp_path: Path) -> None:
    result = run_blocked(
        f"""
        from fastapi.testclient import TestClient
        from app.api.app import create_app
        from app.settings.schema import Settings
        from tests.api.samples import HAM, SPAM, SPAMMY

        settings = Settings(database_url="sqlite:///{tmp_path / "api.db"}")
        with TestClient(create_app(settings)) as client:
            assert client.get("/readyz").status_code == 200
            for label, messages in (("ham", HAM), ("spam", SPAM)):
                for raw in messages:
                    reply = client.post("/v1/feedback", params={{"label": label}}, content=raw)
                    assert reply.status_code == 200, reply.text
            reply = client.post("/v1/classify", content=SPAMMY)
            assert reply.status_code == 200, reply.text
            print(reply.json()["verdict"])
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() in (["spam"], ["unsure"], ["ham"])


def test_the_pipe_filter_starts_without_analysis_packages(tmp_path: Path) -> None:
    result = run_blocked(
        """
        import sys
        from app.adapters.pipe.main import main

        sys.argv = ["spamfilter-filter", "--help"]
        main()
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: spamfilter-filter")


def test_the_build_compiles_with_the_locked_mypy() -> None:
    # setup.py compiles with the mypyc of [build-system]: the mypy that type-checks the code.
    with (ROOT / "pyproject.toml").open("rb") as file:
        requires = [Requirement(spec) for spec in tomllib.load(file)["build-system"]["requires"]]
    (mypy,) = [r for r in requires if canonicalize_name(r.name) == "mypy"]
    assert exact_version(mypy) == lock(DEV_LOCK)["mypy"]
