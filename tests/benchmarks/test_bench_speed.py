"""``spamfilter bench speed`` through click, on a small synthetic corpus with the slow parts
skipped: the real service learns and classifies on a temporary database (never the
configured one), and the table, the JSON and ``--compare`` have the shape they promise.
Nothing here asserts how fast anything is, and bogofilter is never needed.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from app.cli import cli
from tests.builders import ham_message, spam_message

QUICK = (
    "bench",
    "speed",
    "--limit",
    "40",
    "--skip",
    "http",
    "--skip",
    "process",
    "--skip",
    "bogofilter",
)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    rng = random.Random(3)
    root = tmp_path / "corpus"
    for label, build in (("spam", spam_message), ("ham", ham_message)):
        (root / label).mkdir(parents=True)
        for serial in range(30):
            (root / label / f"{serial:03d}").write_bytes(build(rng, serial))
    return root


@pytest.fixture
def configured(clean_environment: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The database the environment configures: the bench must never create it."""
    path = tmp_path / "configured" / "spamfilter.db"
    monkeypatch.setenv("SPAMFILTER_DATABASE_URL", f"sqlite:///{path}")
    return path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_the_table_has_each_figure_with_its_target(corpus: Path, configured: Path) -> None:
    result = invoke(*QUICK, "--corpus", str(corpus))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert f"corpus          {corpus.resolve()}" in lines
    assert "messages        40" in lines
    assert any(line.startswith("learned         first 20 (spam ") for line in lines)
    assert any(line.startswith("cores           ") for line in lines)
    learn = next(line for line in lines if line.startswith("bulk learn, sqlite"))
    assert ">= 1,000 msg/s" in learn and learn.split()[-1] in ("yes", "NO")
    assert any(line.startswith("classify vs bogofilter, sqlite") for line in lines)
    # Skipped by QUICK's --skip where it is installed; said to be missing where it is not.
    installed = shutil.which("bogofilter") is not None
    note = "bogofilter skipped" if installed else "bogofilter not installed: no side-by-side"
    assert f"note: {note}" in lines
    assert not any(line.startswith(("HTTP", "new process")) for line in lines)
    assert not configured.parent.exists()


def test_json_holds_the_whole_result(corpus: Path, configured: Path, tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    result = invoke(*QUICK, "--corpus", str(corpus), "--json", "--out", str(out))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc == json.loads(out.read_text())
    assert doc["bench"] == "speed"
    bulk = doc["bulk"]["sqlite"]
    assert bulk["learn"]["n"] == 20 and bulk["classify"]["n"] == 20
    assert sum(bulk["learn"]["outcomes"].values()) + bulk["learn"]["failures"] == 20
    assert sum(bulk["classify"]["outcomes"].values()) == 20
    assert bulk["db_bytes"] > 0
    assert doc["bogofilter"] is None and doc["process"] == [] and doc["http"] == []
    keys = [figure["key"] for figure in doc["figures"]]
    assert keys == [
        "learn.sqlite",
        "classify.sqlite",
        "classify_ratio.sqlite",
        "read.sqlite",
        "read_ratio.sqlite",
        "plain_check.sqlite",
        "db.sqlite",
    ]
    # The classified half read once more and judged by nothing.
    assert bulk["read"]["n"] == 20
    assert set(bulk["read"]["outcomes"]) <= {"ham:read", "spam:read"}
    assert sum(bulk["read"]["outcomes"].values()) + bulk["read"]["failures"] == 20
    # Every classified message scored again with no cache: the same log-odds.
    assert bulk["plain_check"] == {"checked": 20, "differing": 0}
    assert not configured.parent.exists()


def test_two_saved_runs_compare_figure_by_figure(
    corpus: Path, configured: Path, tmp_path: Path
) -> None:
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path in paths:
        result = invoke(*QUICK, "--corpus", str(corpus), "--out", str(path))
        assert result.exit_code == 0, result.output
    result = invoke("bench", "speed", "--compare", *map(str, paths))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["figure", "A", "B", "B", "/", "A", "met", "A", "->", "B"]
    assert any(line.startswith("bulk learn, sqlite") for line in lines)
    doc = json.loads(invoke("bench", "speed", "--compare", *map(str, paths), "--json").stdout)
    assert doc["learn.sqlite"]["unit"] == "msg/s"


def test_compare_refuses_a_file_that_is_not_a_speed_result(
    tmp_path: Path, configured: Path
) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"protocol": "online"}')
    result = invoke("bench", "speed", "--compare", str(other), str(other))
    assert result.exit_code == 2
    assert "not a bench speed result" in result.stderr


def test_only_postgresql_is_taken_as_a_database_url(corpus: Path, configured: Path) -> None:
    result = invoke(*QUICK, "--corpus", str(corpus), "--database-url", "sqlite:///x.db")
    assert result.exit_code == 2
    assert "postgresql://" in result.stderr


def test_a_folder_that_is_no_corpus_is_a_usage_error(corpus: Path, configured: Path) -> None:
    result = invoke("bench", "speed", "--corpus", str(corpus / "spam"), "--skip", "http")
    assert result.exit_code == 2
    assert "no index file and no ham/ folder" in result.stderr


def test_each_new_process_row_has_its_own_target() -> None:
    from benchmarks.speed_report import STACK_IMPORTS, figures

    def spawns(command: str, median: float, failures: int = 0) -> dict[str, object]:
        return {"command": command, "median_ms": median, "best_ms": median, "failures": failures}

    found = {
        figure.key: figure
        for figure in figures(
            {
                "process": [
                    spawns("spamfilter --version", 140.0),
                    spawns("spamfilter filter", 260.0),
                    spawns("spamfilter-filter", 150.0, failures=1),
                    spawns("spamfilter-filter via serve", 29.0),
                    spawns("spamfilter classify -", 400.0),
                    spawns(STACK_IMPORTS, 300.0),
                ]
            }
        )
    }
    assert found["process.spamfilter --version"].target == "<= 150 ms"
    assert found["process.spamfilter --version"].met is True
    assert found["process.spamfilter filter"].met is False
    assert found["process.spamfilter-filter"].met is False  # a failed run misses it
    assert found["process.spamfilter-filter via serve"].met is True
    assert found["process.spamfilter classify -"].target == ""
    assert found["process.spamfilter classify -"].met is None
    # The libraries' imports alone: shown beside the filter rows, with no target.
    floor = found[f"process.{STACK_IMPORTS}"]
    assert (floor.value, floor.target, floor.met) == (300.0, "", None)
