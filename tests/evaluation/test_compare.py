"""--compare on hand-made result files: pairing by seed and by message path, a clearly better
B, identical files, mismatched message sets, and the result file format itself."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from app.evaluation import compare
from app.evaluation.compare import CompareError, compare_files
from app.evaluation.paired_bootstrap import B_BETTER, NO_DIFFERENCE
from app.evaluation.resultfile import ResultFileError, dumps, load_runs

Rows = list[list[Any]]
N = 240


def _rows(gap: float, seed: int, n: int = N) -> Rows:
    """Messages ham/0..., spam/0... whose log-odds separate the labels by ``gap``."""
    rng = random.Random(seed)
    rows: Rows = []
    for position in range(n):
        label = "spam" if position % 3 == 0 else "ham"
        log_odds = rng.gauss(gap if label == "spam" else -gap, 2.0)
        verdict = "spam" if log_odds > 0 else "ham"
        rows.append([position, label, log_odds, verdict, f"{label}/{position:04d}.eml"])
    return rows


def _run(seed: int | None, rows: Rows, alpha: float = 1.0) -> dict[str, Any]:
    return {
        "filter": "spamfilter",
        "corpus": "hand-made",
        "protocol": "online",
        "folds": None,
        "order": "shuffle",
        "seed": seed,
        "limit": None,
        "metrics": {},
        "settings": {"model": {"alpha": alpha}},
        "messages": {
            "columns": ["position", "label", "log_odds", "verdict", "path"],
            "rows": rows,
        },
    }


def _write(path: Path, runs: list[dict[str, Any]]) -> Path:
    doc = runs[0] if len(runs) == 1 else {"seeds": [r["seed"] for r in runs], "runs": runs}
    path.write_text(dumps(doc) + "\n", encoding="utf-8")
    return path


def test_a_clearly_better_b(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.json", [_run(1, _rows(1.0, seed=1))])
    b = _write(tmp_path / "b.json", [_run(1, _rows(6.0, seed=2), alpha=0.5)])
    result = compare_files(a, b, resamples=300)
    (seed,) = result.seeds
    assert (seed.seed, seed.n) == (1, N)
    for name in ("roca_1_pct", "hm_pct", "sm_pct"):
        interval = seed.intervals[name]
        assert interval.b < interval.a and interval.diff == interval.b - interval.a
        assert interval.low <= interval.diff <= interval.high < 0
        assert interval.verdict == B_BETTER
    assert result.differences == ["model.alpha: 1.0 -> 0.5"]
    assert result.mean_diff() is None
    text = compare.text(result)
    assert "B better" in text and "1-ROCA%" in text and "model.alpha: 1.0 -> 0.5" in text


def test_identical_files_differ_by_exactly_zero(tmp_path: Path) -> None:
    runs = [_run(1, _rows(2.0, seed=1)), _run(2, _rows(2.0, seed=5))]
    a = _write(tmp_path / "a.json", runs)
    b = _write(tmp_path / "b.json", runs)
    result = compare_files(a, b, resamples=200)
    assert [s.seed for s in result.seeds] == [1, 2]
    for seed in result.seeds:
        for interval in seed.intervals.values():
            assert (interval.diff, interval.low, interval.high) == (0.0, 0.0, 0.0)
            assert interval.verdict == NO_DIFFERENCE
    assert result.mean_diff() == {"roca_1_pct": 0.0, "hm_pct": 0.0, "sm_pct": 0.0}
    assert result.differences == []
    assert "[+0.000, +0.000]" in compare.text(result)


def test_messages_pair_by_path_whatever_their_order(tmp_path: Path) -> None:
    rows_b = _rows(3.0, seed=2)
    shuffled = list(rows_b)
    random.Random(0).shuffle(shuffled)
    for position, row in enumerate(shuffled):  # another presentation order, same messages
        row[0] = position
    a = _write(tmp_path / "a.json", [_run(1, _rows(1.0, seed=1))])
    b = _write(tmp_path / "b.json", [_run(1, rows_b)])
    c = _write(tmp_path / "c.json", [_run(1, shuffled)])
    assert compare_files(a, b, resamples=100).seeds == compare_files(a, c, resamples=100).seeds


def test_mismatched_message_sets_are_refused(tmp_path: Path) -> None:
    rows = _rows(1.0, seed=1)
    other = [*rows[:-1], [N - 1, "ham", -1.0, "ham", "ham/elsewhere.eml"]]
    a = _write(tmp_path / "a.json", [_run(1, rows)])
    b = _write(tmp_path / "b.json", [_run(1, other)])
    with pytest.raises(CompareError) as error:
        compare_files(a, b)
    message = str(error.value)
    assert "seed 1: A and B did not classify the same messages" in message
    assert f"1 only in A (ham/{N - 1:04d}.eml)" in message
    assert "1 only in B (ham/elsewhere.eml)" in message


def test_different_gold_labels_and_duplicate_paths_are_refused(tmp_path: Path) -> None:
    rows = _rows(1.0, seed=1)
    relabelled = [list(row) for row in rows]
    relabelled[1][1] = "spam"
    a = _write(tmp_path / "a.json", [_run(1, rows)])
    b = _write(tmp_path / "b.json", [_run(1, relabelled)])
    with pytest.raises(CompareError, match="1 messages have different gold labels"):
        compare_files(a, b)
    twice = _write(tmp_path / "twice.json", [_run(1, [*rows, rows[0]])])
    with pytest.raises(ResultFileError, match="appears twice"):
        compare_files(a, twice)


def test_seeds_pair_by_seed_and_the_rest_is_listed(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.json", [_run(s, _rows(1.0, seed=s)) for s in (1, 2, 3)])
    b = _write(tmp_path / "b.json", [_run(s, _rows(4.0, seed=10 + s)) for s in (3, 2, 4)])
    result = compare_files(a, b, resamples=50)
    assert [s.seed for s in result.seeds] == [2, 3] and result.only == ([1], [4])
    mean = result.mean_diff()
    assert mean is not None
    diffs = [s.intervals["roca_1_pct"].diff for s in result.seeds]
    assert mean["roca_1_pct"] == pytest.approx(sum(diffs) / 2)
    text = compare.text(result)
    assert "over 2 seeds: B better 2" in text
    assert "seeds only in A: 1" in text and "seeds only in B: 4" in text
    doc = json.loads(dumps(compare.document(result)))
    assert [s["seed"] for s in doc["seeds"]] == [2, 3]
    assert doc["seeds"][0]["metrics"]["roca_1_pct"]["verdict"] == B_BETTER
    assert doc["bootstrap"]["resamples"] == 50 and doc["only_in_b"] == [4]
    lone = _write(tmp_path / "lone.json", [_run(9, _rows(1.0, seed=9))])
    with pytest.raises(CompareError, match="no seed in common"):
        compare_files(a, lone)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not a readable JSON result file"),
        ('{"hello": 1}', "not a result file written by 'spamfilter eval --out'"),
        ('{"runs": 3}', "'runs' is not a list"),
    ],
)
def test_files_that_are_no_results(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(ResultFileError, match=message):
        load_runs(path)


def test_a_result_without_message_rows_cannot_be_compared(tmp_path: Path) -> None:
    run = _run(1, _rows(1.0, seed=1))
    del run["messages"]
    a = _write(tmp_path / "a.json", [run])
    with pytest.raises(ResultFileError, match="no per-message rows"):
        compare_files(a, a)


def test_result_files_hold_one_message_per_line_and_stay_small() -> None:
    rows = [
        [i, "spam", -123.45678901234567, "unsure", f"spam/spam_2_{i:05d}.{'0' * 32}"]
        for i in range(6046)
    ]
    doc = {"seeds": [1, 2], "runs": [_run(s, rows) for s in range(1, 6)]}
    text = dumps(doc)
    assert json.loads(text) == doc
    lines = text.splitlines()
    assert lines[1] == ' "seeds": [1, 2],'
    assert sum(1 for line in lines if line.lstrip().startswith("[0, ")) == 5
    assert len(text.encode()) < 3_600_000  # 6,046 messages x 5 seeds
