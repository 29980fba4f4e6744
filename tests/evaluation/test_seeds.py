"""--seeds: the seed list syntax, the mean and standard deviation over hand-made per-seed
results, the multi-seed document and its table, and seeds run one after the other."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from app.evaluation import seeds
from app.evaluation.seeds import SeedsError, aggregate, describe_seeds, parse_seeds
from app.evaluation.session import Plan, run_seeds
from app.settings.schema import Settings
from tests.cli.mailfiles import write_corpus


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1-5", [1, 2, 3, 4, 5]),
        ("1,3,7", [1, 3, 7]),
        ("7", [7]),
        ("0-0", [0]),
        ("4-6, 1", [4, 5, 6, 1]),
        (" 2 - 3 ,9", [2, 3, 9]),
    ],
)
def test_seed_lists(text: str, expected: list[int]) -> None:
    assert parse_seeds(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "an empty item"),
        ("1,,2", "an empty item"),
        ("1-", "an empty item"),
        ("-3", "an empty item"),
        ("a", "'a'"),
        ("1.5", "'1.5'"),
        ("²", "'²'"),
        ("1-3-5", "'3-5'"),
        ("5-1", "runs backwards; write 1-5"),
        ("1-3,2", "seed 2 is given twice"),
    ],
)
def test_bad_seed_lists(text: str, message: str) -> None:
    with pytest.raises(SeedsError, match=r"expected seeds|backwards|twice") as error:
        parse_seeds(text)
    assert message in str(error.value)


def test_seed_lists_are_described_compactly() -> None:
    assert describe_seeds([1, 2, 3, 4, 5]) == "1-5"
    assert describe_seeds([3, 4]) == "3-4"
    assert describe_seeds([1, 3, 7]) == "1,3,7"
    assert describe_seeds([2]) == "2"


def _run(seed: int, roca: float | None, hm: float, learned: int, skipped: int) -> dict[str, Any]:
    """A per-seed result with the fields the aggregate and the table read."""
    return {
        "filter": "spamfilter",
        "corpus": "hand-made",
        "protocol": "online",
        "folds": None,
        "order": "shuffle",
        "seed": seed,
        "limit": None,
        "score_kind": "log_odds",
        "metrics": {
            "n": 100,
            "roca_1_pct": roca,
            "hm_pct": hm,
            "sm_pct": 10.0,
            "sm_at_hm01_pct": 20.0,
            "lam_pct": 2.0,
            "unsure_pct": 5.0,
        },
        "timing": {
            "classify_ms_per_msg": 1.0 + seed,
            "train_ms_per_msg": 0.5,
            "includes": "classify: read + parse + tokenise + score; train: learn",
        },
        "learn_outcomes": {"learned": learned, "skipped": skipped},
        "db_bytes": 2_000_000,
        "failures": 0,
        "wall_s": 1.5,
        "database": "sqlite (temporary file)",
        "settings": {
            "model": {"kind": "multinomial", "counting": "presence", "alpha": 1.0},
            "decision": {"ham_log_odds": 0.0, "spam_log_odds": 10.0, "min_messages": 10},
            "tokenizer": {"max_token_length": 40, "max_tokens": 5000, "scan_bytes": 524288},
            "training": {"mode": "thick", "margin": 30.0},
        },
    }


def test_mean_and_sample_standard_deviation_of_every_column() -> None:
    runs = [_run(1, 1.0, 0.5, 60, 40), _run(2, 2.0, 0.5, 70, 30), _run(3, 3.0, 0.8, 80, 20)]
    agg = aggregate(runs)
    mean, sd = agg["mean"], agg["sd"]
    assert agg["n_runs"] == 3
    assert mean["roca_1_pct"] == pytest.approx(2.0) and sd["roca_1_pct"] == pytest.approx(1.0)
    assert mean["hm_pct"] == pytest.approx(0.6)
    assert sd["hm_pct"] == pytest.approx(math.sqrt((0.01 + 0.01 + 0.04) / 2))
    assert mean["classify_ms_per_msg"] == pytest.approx(3.0)
    assert (mean["learned"], sd["learned"]) == (pytest.approx(70.0), pytest.approx(10.0))
    assert (mean["skipped"], sd["skipped"]) == (pytest.approx(30.0), pytest.approx(10.0))
    assert (mean["sm_pct"], sd["sm_pct"]) == (10.0, 0.0)
    assert mean["db_mb"] == pytest.approx(2.0)
    assert set(mean) >= {"sm_at_hm01_pct", "lam_pct", "unsure_pct", "train_ms_per_msg"}


def test_an_undefined_value_is_left_out_and_one_seed_has_no_spread() -> None:
    agg = aggregate([_run(1, None, 0.5, 1, 0), _run(2, 4.0, 0.5, 1, 0)])
    assert agg["mean"]["roca_1_pct"] == 4.0 and agg["sd"]["roca_1_pct"] is None
    single = aggregate([_run(1, 1.0, 0.5, 1, 0)])
    assert single["mean"]["roca_1_pct"] == 1.0
    assert all(value is None for value in single["sd"].values())


def test_document_and_table_of_several_seeds() -> None:
    doc = seeds.document([_run(1, 1.0, 0.5, 60, 40), _run(2, 2.0, 0.5, 70, 30)], jobs=2)
    assert doc["seeds"] == [1, 2] and doc["jobs"] == 2 and len(doc["runs"]) == 2
    assert doc["corpus"] == "hand-made" and doc["aggregate"]["mean"]["roca_1_pct"] == 1.5
    lines = seeds.table(doc).splitlines()
    assert "order shuffle seeds 1-2" in lines[0]
    assert lines[1].split()[:3] == ["seed", "n", "1-ROCA%"] and "skipped" in lines[1]
    by_lead = {line.split()[0]: line.split() for line in lines[3:8] if line.strip("-")}
    assert by_lead["1"][2] == "1.000" and by_lead["2"][2] == "2.000"
    assert by_lead["mean"][2] == "1.500" and by_lead["sd"][2] == "0.707"
    assert by_lead["mean"][-3:-1] == ["65.00", "35.00"]  # learned, skipped
    assert any(line.startswith("training   thick, margin 30.0") for line in lines)
    assert any("2 seeds at a time" in line for line in lines)


def test_seeds_run_one_after_the_other_on_fresh_databases(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", n_ham=12, n_spam=12)
    settings = Settings(_env_file=None, database_url="sqlite://")
    plan = Plan(corpus, "online", 10, "auto", None, settings)
    seen: list[tuple[int, int, str]] = []
    runs = run_seeds(plan, [3, 1], progress=lambda d, t, p: seen.append((d, t, p)))
    assert [run["seed"] for run in runs] == [3, 1]
    assert seen[0] == (1, 48, "seed 3 online") and seen[-1] == (48, 48, "seed 1 online")
    first, second = (run["messages"]["rows"] for run in runs)
    assert sorted(row[4] for row in first) == sorted(row[4] for row in second)
    assert [row[4] for row in first] != [row[4] for row in second]  # two shuffles
    for run in runs:  # each seed starts from an empty model
        assert run["timing"]["n_trained"] == 24
        assert run["metrics"]["unsure_reasons"]["not_enough_training"] >= 10
