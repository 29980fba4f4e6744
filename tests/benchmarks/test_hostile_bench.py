"""The hostile benchmark's bookkeeping, on a fake clock: which sizes run, best of the repeats,
flatness, the bounds, errors reported by code, and the table and JSON it prints.

The timed functions here cost what the test says (they move the fake clock), so every
number is exact; the real service's timings are a benchmark, not a test.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from app.errors import InvalidMessage
from benchmarks.hostile import SHAPES, Shape, shape
from benchmarks.hostile_bench import (
    FAIL_MARK,
    KIB,
    MIB,
    Bounds,
    Measurement,
    ShapeResult,
    Target,
    build_message,
    flatness,
    format_row,
    format_size,
    format_summary,
    parse_size,
    run_shape,
    sizes_up_to,
    to_json,
    training_messages,
)

SIZES = [KIB, 4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB]
FLAT = Shape("flat", "a run of x", lambda size: b"Subject: x\r\n\r\n" + b"x" * size)


class FakeClock:
    """A clock that only moves when a fake timed function says it took time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.calls = 0

    def __call__(self) -> float:
        return self.now

    def costing(self, seconds: Callable[[int], float]) -> Callable[[bytes], object]:
        """A timed function whose call takes ``seconds(len(raw))``."""

        def timed(raw: bytes) -> object:
            self.calls += 1
            self.now += seconds(len(raw))
            return None

        return timed


def run(cost: Callable[[int], float], repeats: int = 3) -> ShapeResult:
    """FLAT at every size of SIZES, each call costing ``cost(bytes)`` seconds."""
    clock = FakeClock()
    target = Target(clock.costing(cost))
    return run_shape(FLAT, SIZES, target, clock=clock, repeats=repeats, memory=False)


def test_sizes_grow_fourfold_to_the_cap() -> None:
    assert sizes_up_to(MIB) == [KIB, 4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB]
    assert sizes_up_to(25 * MIB)[-3:] == [4 * MIB, 16 * MIB, 25 * MIB]
    assert sizes_up_to(16 * KIB) == [KIB, 4 * KIB, 16 * KIB]
    assert sizes_up_to(512) == [512]


@pytest.mark.parametrize(
    ("text", "size"),
    [("4096", 4096), ("16K", 16 * KIB), ("16KiB", 16 * KIB), ("1m", MIB), ("25MiB", 25 * MIB)],
)
def test_sizes_are_read_in_powers_of_1024(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "K", "1G", "-1K", "1.5M", "ten"])
def test_a_size_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a size"):
        parse_size(text)


def test_sizes_are_shown_in_their_unit() -> None:
    assert [format_size(s) for s in (MIB, 16 * KIB, 1000)] == ["1 MiB", "16 KiB", "1000 B"]


def test_a_linear_cost_is_flat_and_passes() -> None:
    result = run(lambda n: n * 1e-8)
    assert result.flatness == pytest.approx(1.0)
    assert result.ok
    assert [m.size for m in result.measurements] == SIZES
    assert all(m.error is None and not m.skipped for m in result.measurements)


def test_a_quadratic_cost_breaks_the_flatness_bound() -> None:
    result = run(lambda n: n * n * 1e-13)
    # µs/KiB grows with n: from 16 KiB to 256 KiB it is 16 times larger.
    assert result.flatness == pytest.approx(16.0, rel=0.01)
    assert not result.ok
    assert result.failures == ("flatness 16.0x (bound 3x)",)


def test_the_worst_size_counts_not_the_largest() -> None:
    # Quadratic to 64 KiB, then cheap (as past the scan limit): still a failure.
    result = run(lambda n: n * n * 1e-13 if n < 100 * KIB else n * 1e-9)
    assert result.flatness == pytest.approx(4.0, rel=0.01)
    assert not result.ok


def test_the_best_of_the_repeats_counts() -> None:
    costs = iter([3e-3, 1e-3, 2e-3] * len(SIZES))
    result = run(lambda n: next(costs), repeats=3)
    assert [m.analyse_seconds for m in result.measurements] == [pytest.approx(1e-3)] * len(SIZES)


def test_a_call_over_the_time_bound_is_not_repeated_and_larger_sizes_are_skipped() -> None:
    clock = FakeClock()
    slow = clock.costing(lambda n: 2.0 if n > 10 * KIB else 1e-4)
    result = run_shape(FLAT, SIZES, Target(slow), clock=clock, repeats=3, memory=False)
    runs = [m for m in result.measurements if not m.skipped]
    assert [m.size for m in runs] == [KIB, 4 * KIB, 16 * KIB]
    assert [m.skipped for m in result.measurements] == [False, False, False, True, True]
    assert clock.calls == 3 + 3 + 1
    assert result.failures == ("16 KiB took 2.00 s (bound 1 s)",)


def test_a_call_that_raises_is_reported_by_its_error_code() -> None:
    def analyse(raw: bytes) -> object:
        if len(raw) > 10 * KIB:
            raise RecursionError("maximum recursion depth exceeded")
        return None

    result = run_shape(FLAT, SIZES, Target(analyse), memory=False)
    codes = [m.error for m in result.measurements]
    assert codes[:2] == [None, None]
    assert codes[2:] == ["RecursionError: maximum recursion depth exceeded"] * 3
    assert [m.us_per_kib is None for m in result.measurements] == [False, False, True, True, True]
    assert result.flatness is None
    assert result.failures == ("RecursionError: maximum recursion depth exceeded at 16 KiB",)


def test_the_service_errors_give_their_code() -> None:
    def analyse(raw: bytes) -> object:
        raise InvalidMessage("no header")

    result = run_shape(FLAT, [KIB], Target(analyse), memory=False)
    assert result.measurements[0].error == "invalid_message: no header"


def test_classify_is_timed_after_analyse_and_its_errors_count() -> None:
    clock = FakeClock()
    calls: list[str] = []

    def classify(raw: bytes) -> object:
        calls.append("classify")
        raise RuntimeError("database gone")

    target = Target(clock.costing(lambda n: 1e-4), classify)
    result = run_shape(FLAT, [KIB], target, clock=clock, memory=False)
    assert calls == ["classify"]
    assert result.measurements[0].error == "RuntimeError: database gone"
    assert not result.ok


def test_memory_is_the_peak_of_one_call() -> None:
    def analyse(raw: bytes) -> object:
        return bytearray(4 * MIB)

    result = run_shape(FLAT, [KIB], Target(analyse, analyse), repeats=1)
    peak = result.measurements[0].peak_bytes
    assert peak is not None and 4 * MIB <= peak < 5 * MIB
    assert result.measurements[0].classify_seconds is not None


def test_flatness_needs_a_size_of_16_kib() -> None:
    assert flatness([Measurement(4 * KIB, 4 * KIB, 1e-3)]) is None
    assert flatness([Measurement(16 * KIB, 16 * KIB, 1e-3)]) == pytest.approx(1.0)


@pytest.mark.parametrize("built", SHAPES, ids=lambda s: s.name)
def test_every_shape_is_built_within_the_cap(built: Shape) -> None:
    cap = 64 * KIB
    raw = build_message(built, cap, cap)
    assert cap * 0.9 <= len(raw) <= cap


def test_the_table_marks_errors_slow_calls_and_skipped_sizes() -> None:
    bounds = Bounds()
    ok = format_row("long-line", Measurement(KIB, KIB, 2e-3, 3e-3, 10 * KIB), bounds)
    assert ok.split() == ["long-line", "1", "KiB", "2.0", "2000.0", "3.0", "10"]
    slow = format_row("x", Measurement(16 * KIB, 16 * KIB, 1.5), bounds)
    assert slow.endswith(FAIL_MARK) and "1500.0" in slow
    error = format_row("x", Measurement(16 * KIB, 16 * KIB, 0.1, error="RecursionError"), bounds)
    assert f"{FAIL_MARK} RecursionError" in error
    assert "skipped" in format_row("x", Measurement(64 * KIB, 0, skipped=True), bounds)


def test_the_summary_says_ok_or_what_broke() -> None:
    good = run(lambda n: n * 1e-8)
    bad = run(lambda n: n * n * 1e-13)
    assert format_summary(good).split()[-1] == "ok"
    assert f"{FAIL_MARK} FAIL: flatness 16.0x" in format_summary(bad)


def test_the_json_document_holds_every_size() -> None:
    results = [run(lambda n: n * 1e-8), run(lambda n: n * n * 1e-13)]
    doc = json.loads(json.dumps(to_json(results, Bounds())))
    assert doc["ok"] is False
    assert [s["ok"] for s in doc["shapes"]] == [True, False]
    first = doc["shapes"][0]["sizes"][0]
    assert first["size"] == KIB and first["error"] is None and first["skipped"] is False
    assert first["analyse_ms"] == pytest.approx(first["bytes"] * 1e-5)


def test_the_training_messages_are_distinct_and_of_both_labels() -> None:
    messages = training_messages(per_label=12)
    assert len({raw for raw, _ in messages}) == 24
    assert sorted({label for _, label in messages}) == ["ham", "spam"]


def test_a_named_shape_is_found() -> None:
    assert shape("long-line").name == "long-line"
