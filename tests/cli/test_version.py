"""``spamfilter --version``: what an administrator quotes in a bug report."""

from __future__ import annotations

from importlib import metadata

import pytest
from click.testing import CliRunner

from app.cli import cli
from app.compiled import build_kind


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_the_installed_package_version(flag: str) -> None:
    result = CliRunner().invoke(cli, [flag])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"spamfilter {metadata.version('spamfilter')} ({build_kind()})\n"


def test_version_needs_no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # it answers before the group builds settings, so broken settings do not hide it
    monkeypatch.setenv("SPAMFILTER_TRAINING_MODE", "not-a-mode")
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("spamfilter ")


def test_an_uninstalled_checkout_says_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    result = CliRunner().invoke(cli, ["-V"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"spamfilter unknown ({build_kind()})\n"
