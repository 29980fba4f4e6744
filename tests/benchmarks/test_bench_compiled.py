"""``spamfilter bench compiled``: loading a module's pure source beside it, the table, and a
real short run. Nothing here asserts how fast either build is."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import cli
from app.compiled import CANDIDATES, COMPILED, compiled_modules
from benchmarks.compiled_bench import MIN_GAIN, table
from benchmarks.compiled_work import load_source, prefer_source
from tests.builders import ham_message, spam_message


def test_a_pure_copy_runs_from_the_source_beside_the_module() -> None:
    import app.domain.naive_bayes as loaded

    pure = load_source("app.domain.naive_bayes")
    assert pure is not loaded
    assert pure.__file__ is not None and pure.__file__.endswith("naive_bayes.py")
    assert pure.log_sum_exp([0.0, 0.0]) == loaded.log_sum_exp([0.0, 0.0])


def test_prefer_source_refuses_a_module_already_imported() -> None:
    import app.domain.fallback  # noqa: F401

    assert "app.domain.fallback" in sys.modules
    with pytest.raises(RuntimeError, match="already imported"):
        prefer_source(["app.domain.fallback"])


def test_the_table_marks_a_module_under_the_bar_and_one_not_built() -> None:
    row = {"pure_ms": 1.0, "compiled_ms": 0.5, "gain": 2.0, "kept_compiled": True}
    slow = {"pure_ms": 1.0, "compiled_ms": 0.8, "gain": 1.25, "kept_compiled": False}
    absent = {"pure_ms": None, "compiled_ms": None, "gain": None, "kept_compiled": False}
    doc = {
        "messages": 10,
        "corpus": "c",
        "rounds": 1,
        "repeat": 2,
        "modules": {
            "app.domain.naive_bayes": row,
            "app.domain.tokenizer": slow,
            "app.domain.message": absent,
        },
        "classify": {"pure_ms": 2.0, "built_ms": 1.6, "gain": 1.25},
    }
    lines = table(doc).splitlines()
    row_line = "| app.domain.naive_bayes | pair_multinomial | 1.000 | 0.500 | 2.00x | compiled |"
    assert row_line in lines
    assert (
        f"| app.domain.tokenizer | tokenize | 1.000 | 0.800 | 1.25x | pure (< {MIN_GAIN:g}x) |"
        in (lines)
    )
    assert "| app.domain.message | parse | — | — | (not built) | pure |" in lines
    assert lines[-1].endswith("| 2.000 | 1.600 (as built) | 1.25x | |")


@pytest.mark.skipif(not compiled_modules(), reason="a pure build: nothing to measure")
def test_a_short_run_measures_every_compiled_module(tmp_path: Path) -> None:
    rng = random.Random(3)
    for label, make in (("ham", ham_message), ("spam", spam_message)):
        (tmp_path / label).mkdir()
        for serial in range(12):
            (tmp_path / label / str(serial)).write_bytes(make(rng, serial))
    result = CliRunner().invoke(
        cli,
        [
            "bench",
            "compiled",
            "--corpus",
            str(tmp_path),
            "--rounds",
            "1",
            "--repeat",
            "1",
            "--json",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["messages"] == 24
    assert set(doc["modules"]) == set(CANDIDATES)
    for name, row in doc["modules"].items():
        assert (row["gain"] is not None) == (name in doc["built"]), name
        assert row["kept_compiled"] == (name in COMPILED)
    assert doc["classify"]["pure_ms"] > 0 and doc["classify"]["built_ms"] > 0
