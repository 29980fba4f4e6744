"""``spamfilter bench hostile`` through click: the table, the JSON, and ``--check`` as a gate.

The command trains its own model on a database in a temporary folder. Nothing here asserts
how fast the real service is: the slow and raising cases are injected into
``SpamFilter.analyse``, and the real runs only check the shape of the output.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from app.cli import cli
from app.service import Analysed, Form, SpamFilter
from benchmarks.hostile_bench import FAIL_MARK, HEADER

QUICK = ("bench", "hostile", "--max-size", "16K", "--repeat", "1")
SHAPES = ("--shape", "long-line", "--shape", "nested-comments")


@pytest.fixture
def bench(clean_environment: None) -> Iterator[CliRunner]:
    yield CliRunner()


def invoke(runner: CliRunner, *args: str) -> Result:
    return runner.invoke(cli, list(args), catch_exceptions=False)


def analyse_that(monkeypatch: pytest.MonkeyPatch, *, over: int, slow: float = 0.0) -> None:
    """SpamFilter.analyse raises RecursionError (or, with ``slow``, sleeps that long first)
    for messages longer than ``over`` bytes; the training messages are all shorter."""
    real = SpamFilter.analyse

    def analyse(
        self: SpamFilter, raw: bytes, legacy: bool = False, form: Form = "rfc822"
    ) -> Analysed:
        if len(raw) > over:
            if not slow:
                raise RecursionError("maximum recursion depth exceeded")
            time.sleep(slow)
        return real(self, raw, legacy, form)

    monkeypatch.setattr(SpamFilter, "analyse", analyse)


def test_the_table_has_a_row_per_size_and_a_verdict_per_shape(bench: CliRunner) -> None:
    result = invoke(bench, *QUICK, *SHAPES)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert HEADER in lines
    rows = [line.split() for line in lines if line.startswith(("long-line ", "nested-comments "))]
    sizes = [(row[0], row[1]) for row in rows if row[2] == "KiB"]
    assert sizes == [
        (name, n) for name in ("nested-comments", "long-line") for n in ("1", "4", "16")
    ]
    assert sum(1 for row in rows if row[1] == "flatness") == 2
    assert lines[-1].startswith(("all 2 shapes within bounds", "1 of 2", "2 of 2"))


def test_json_holds_every_shape_and_size(bench: CliRunner) -> None:
    result = invoke(bench, *QUICK, *SHAPES, "--shape", "nested-multipart", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc) == {"ok", "bounds", "flatness_from_bytes", "memory", "shapes"}
    assert doc["bounds"] == {"max_flatness": 3.0, "max_seconds": 1.0}
    assert [s["name"] for s in doc["shapes"]] == [
        "nested-comments",
        "nested-multipart",
        "long-line",
    ]
    for shape in doc["shapes"]:
        assert [m["size"] for m in shape["sizes"]] == [1024, 4096, 16384]
        for m in shape["sizes"]:
            assert m["bytes"] >= m["size"] * 0.9
            assert (m["error"] is None) == (m["analyse_ms"] is not None and m["us_per_kib"] > 0)


def test_check_passes_when_every_shape_is_within_bounds(bench: CliRunner) -> None:
    result = invoke(bench, *QUICK, "--shape", "long-line", "--max-seconds", "60", "--check")
    assert result.exit_code == 0, result.output
    assert "all 1 shapes within bounds" in result.output


def test_a_raising_analyse_is_shown_by_its_code_and_fails_the_check(
    bench: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    analyse_that(monkeypatch, over=8 * 1024)
    result = invoke(bench, *QUICK, *SHAPES, "--check")
    assert result.exit_code == 1
    assert f"{FAIL_MARK} RecursionError: maximum recursion depth exceeded" in result.stdout
    assert "FAIL: RecursionError: maximum recursion depth exceeded at 16 KiB" in result.stdout
    assert "out of bounds: nested-comments, long-line" in result.stderr


def test_a_slow_analyse_fails_the_check_and_larger_sizes_are_skipped(
    bench: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    analyse_that(monkeypatch, over=2 * 1024, slow=0.05)
    args = ("bench", "hostile", "--max-size", "16K", "--shape", "long-line", "--json")
    result = invoke(bench, *args, "--max-seconds", "0.05", "--check")
    assert result.exit_code == 1
    (shape,) = json.loads(result.stdout)["shapes"]
    assert [m["skipped"] for m in shape["sizes"]] == [False, False, True]
    assert shape["failures"][0].startswith("4 KiB took 0.05 s (bound 0.05 s)")
    assert shape["ok"] is False


def test_without_check_a_failing_shape_still_exits_zero(
    bench: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    analyse_that(monkeypatch, over=8 * 1024)
    result = invoke(bench, *QUICK, "--shape", "long-line")
    assert result.exit_code == 0
    assert result.output.splitlines()[-1] == "1 of 1 shapes out of bounds: long-line"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--max-size", "26M"), "over the cap"),
        (("--max-size", "lots"), "not a size"),
        (("--shape", "no-such-shape"), "no-such-shape"),
    ],
)
def test_bad_options_are_usage_errors(
    bench: CliRunner, args: tuple[str, ...], message: str
) -> None:
    result = bench.invoke(cli, ["bench", "hostile", *args])
    assert result.exit_code == 2
    assert message in result.output


def test_the_bench_group_lists_hostile(bench: CliRunner) -> None:
    result = invoke(bench, "bench", "--help")
    assert result.exit_code == 0
    assert "hostile" in result.output


def test_speed_passes_its_settings_file_to_the_commands_it_spawns(
    bench: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``spamfilter --config X bench speed``: the new processes and servers it times read X
    too, not whatever file they would find on their own."""
    import subprocess

    from benchmarks import speed_run
    from benchmarks.bench_servers import environment, program

    config = tmp_path / "bench.toml"
    config.write_text("[model]\ntop_tokens = 17\n", encoding="utf-8")
    (tmp_path / "ham").mkdir()
    (tmp_path / "spam").mkdir()
    plans: list[speed_run.Plan] = []

    def run(plan: speed_run.Plan, _progress: object) -> dict[str, object]:
        plans.append(plan)
        raise SystemExit(0)  # the plan is what is checked here

    monkeypatch.setattr(speed_run, "run", run)
    invoke(bench, "--config", str(config), "bench", "speed", "--corpus", str(tmp_path))
    (plan,) = plans
    assert plan.config == config and plan.settings.model.top_tokens == 17
    shown = subprocess.run(
        [*program("spamfilter"), "config", "show"],
        env=environment(f"sqlite:///{tmp_path / 'x.db'}", plan.config),
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert "model.top_tokens = 17" in shown.stdout
