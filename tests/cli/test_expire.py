"""``spamfilter expire`` through the real command line: dry run, the cap, --user and --all."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.service import SpamFilter
from app.settings.schema import Settings
from tests.cli.conftest import Run
from tests.cli.mailfiles import messages

Stats = Callable[[], dict[str, Any]]
LINE = re.compile(
    r"^(?P<scope>\S+): (?:would remove|removed) (?P<age>[\d,]+) by age, (?P<size>[\d,]+) by size; "
    r"vocabulary (?P<before>[\d,]+) -> (?P<after>[\d,]+)$"
)


def learn_folder(run: Run, tmp_path: Path, label: str, n: int = 8) -> None:
    folder = tmp_path / label
    folder.mkdir()
    for number, raw in enumerate(messages(label, n)):
        (folder / f"{number}.eml").write_bytes(raw)
    result = run("learn", "--label", label, str(folder))
    assert result.exit_code == 0, result.output


def lines(output: str) -> list[dict[str, Any]]:
    found = []
    for line in output.splitlines():
        match = LINE.match(line)
        assert match, line
        found.append(
            {
                k: v if k == "scope" else int(v.replace(",", ""))
                for k, v in match.groupdict().items()
            }
        )
    return found


def test_a_dry_run_reports_and_changes_nothing_then_expire_does(
    run: Run, stats: Stats, tmp_path: Path
) -> None:
    learn_folder(run, tmp_path, "ham")
    learn_folder(run, tmp_path, "spam")
    vocabulary = stats()["vocabulary"]

    result = run("expire", "--dry-run", "--max-tokens", "20")
    assert result.exit_code == 0, result.output
    assert "would remove" in result.output
    assert lines(result.output) == [
        {"scope": "global", "age": 0, "size": vocabulary - 20, "before": vocabulary, "after": 20}
    ]
    assert stats()["vocabulary"] == vocabulary

    result = run("expire", "--max-tokens", "20", "--max-age-days", "365")
    assert result.exit_code == 0, result.output
    assert "removed" in result.output
    assert lines(result.output)[0]["after"] == 20
    assert stats()["vocabulary"] == 20


def test_the_cap_comes_from_the_environment_and_zero_means_none(
    run: Run, stats: Stats, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    learn_folder(run, tmp_path, "spam")
    vocabulary = stats()["vocabulary"]
    result = run("expire")
    assert lines(result.output)[0]["after"] == vocabulary  # the default removes nothing here
    monkeypatch.setenv("SPAMFILTER_MAX_TOKENS", "7")
    assert lines(run("expire").output)[0]["after"] == 7
    assert stats()["vocabulary"] == 7


def test_user_and_all(
    run: Run,
    tmp_path: Path,
    cli_database: str,
    make_service: Callable[[Settings], SpamFilter],
) -> None:
    learn_folder(run, tmp_path, "ham")
    service = make_service(Settings(_env_file=None, database_url=cli_database))
    for raw in messages("spam", 4):
        service.learn(raw, "spam", user="Dave")

    result = run("expire", "--user", "dave", "--max-tokens", "5", "--dry-run")
    assert [line["scope"] for line in lines(result.output)] == ["global/user:dave"]

    result = run("expire", "--all", "--max-tokens", "5")
    assert [(line["scope"], line["after"]) for line in lines(result.output)] == [
        ("global", 5),
        ("global/user:dave", 5),
    ]


def test_user_and_all_exclude_each_other(run: Run) -> None:
    result = run("expire", "--all", "--user", "dave")
    assert result.exit_code == 2
    assert "exclude each other" in result.output
