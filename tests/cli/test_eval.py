"""spamfilter eval on a small generated corpus (60 messages with two clearly different
vocabularies): online and cross-validation, JSON and table output, scores, ROC plot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Run
from tests.cli.mailfiles import messages, write_corpus

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
METRIC_KEYS = {
    "n", "n_spam", "n_ham", "roca_1_pct", "hm_pct", "sm_pct", "sm_at_hm01_pct", "lam_pct",
    "lam_smoothed", "unsure_pct", "unsure", "unsure_reasons", "roca_1_pct_probability_scale",
    "ties_at_probability_1", "spam_judged_ham_pct", "spam_unsure_pct", "ham_unsure_pct",
    "verdicts",
}  # fmt: skip
TIMING_KEYS = {
    "classify_s", "classify_ms_per_msg", "train_s", "train_ms_per_msg", "n_classified",
    "n_trained", "includes",
}  # fmt: skip
TOP_KEYS = {
    "filter", "corpus", "protocol", "folds", "order", "seed", "limit", "skip", "threshold",
    "threshold_rule", "score_kind", "metrics", "timing", "db_bytes", "failures", "wall_s",
    "started", "finished", "database", "settings", "host", "learn_outcomes", "messages",
}  # fmt: skip


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "synthetic", n_ham=30, n_spam=30)


def _eval_json(run: Run, *args: str) -> dict[str, Any]:
    result = run("eval", "--json", *args)
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_online_json_scores_and_plot(
    run_sqlite: Run, corpus: Path, tmp_path: Path, sqlite_database: str
) -> None:
    out, scores, plot = tmp_path / "result.json", tmp_path / "scores.tsv", tmp_path / "roc.png"
    doc = _eval_json(
        run_sqlite,
        "--corpus", str(corpus), "--out", str(out), "--scores", str(scores),
        "--roc-plot", str(plot),
    )  # fmt: skip
    assert set(doc) == TOP_KEYS
    assert set(doc["metrics"]) == METRIC_KEYS and set(doc["timing"]) == TIMING_KEYS
    assert (doc["filter"], doc["corpus"], doc["protocol"]) == ("spamfilter", "synthetic", "online")
    assert (doc["order"], doc["seed"], doc["score_kind"]) == ("shuffle", 1, "log_odds")
    metrics = doc["metrics"]
    assert (metrics["n"], metrics["n_ham"], metrics["n_spam"]) == (60, 30, 30)
    assert metrics["roca_1_pct"] < 20
    assert 0 <= metrics["unsure_pct"] <= 100 and metrics["unsure"] > 0  # no verdict untrained
    assert metrics["unsure_reasons"].get("not_enough_training", 0) > 0
    verdicts = metrics["verdicts"]
    assert sum(verdicts["ham"].values()) == 30 and sum(verdicts["spam"].values()) == 30
    assert metrics["spam_judged_ham_pct"] == pytest.approx(
        100 * verdicts["spam"].get("ham", 0) / 30
    )
    assert doc["timing"]["n_classified"] == doc["timing"]["n_trained"] == 60
    assert doc["timing"]["classify_ms_per_msg"] > 0 and doc["timing"]["train_ms_per_msg"] > 0
    assert doc["failures"] == 0 and doc["db_bytes"] > 0
    outcomes = doc["learn_outcomes"]
    assert {"learned", "skipped"} <= set(outcomes) and sum(outcomes.values()) == 60
    assert outcomes["learned"] > 0
    messages = doc["messages"]
    assert messages["columns"] == ["position", "label", "log_odds", "verdict", "path"]
    assert [row[0] for row in messages["rows"]] == list(range(60))
    assert all(row[4].split("/")[0] == row[1] for row in messages["rows"])
    assert set(doc["settings"]) >= {"model", "decision", "tokenizer"}
    assert "database_url" not in json.dumps(doc)

    assert json.loads(out.read_text()) == doc
    rows = [line.split("\t") for line in scores.read_text().splitlines()]
    assert rows[0] == ["i", "label", "log_odds", "verdict", "classify_ms", "learn_ms", "path"]
    assert [int(row[0]) for row in rows[1:]] == list(range(60))
    assert all(row[6].split("/")[0] == row[1] for row in rows[1:])  # ham/..., spam/...
    assert plot.read_bytes().startswith(PNG_SIGNATURE)


def test_eval_never_touches_the_configured_database(
    run_sqlite: Run, corpus: Path, sqlite_database: str
) -> None:
    assert run_sqlite("eval", "--corpus", str(corpus), "--limit", "10").exit_code == 0
    stats = json.loads(run_sqlite("stats", "--json").stdout)
    assert all(label["messages"] == 0 for label in stats["labels"].values())


def test_cross_validation_pools_the_folds(run_sqlite: Run, corpus: Path) -> None:
    doc = _eval_json(run_sqlite, "--corpus", str(corpus), "--protocol", "cv", "--folds", "3")
    assert (doc["protocol"], doc["folds"]) == ("cv", 3)
    assert doc["metrics"]["n"] == 60
    assert doc["metrics"]["roca_1_pct"] < 20
    assert doc["timing"]["n_classified"] == 60 and doc["timing"]["n_trained"] == 120
    assert doc["metrics"]["unsure_reasons"].get("not_enough_training", 0) == 0


def test_the_table_names_metrics_and_settings(run_sqlite: Run, corpus: Path) -> None:
    result = run_sqlite("eval", "--corpus", str(corpus), "--limit", "20", "--seed", "3")
    assert result.exit_code == 0, result.output
    text = result.stdout
    for word in ("1-ROCA%", "hm%", "sm%@hm.1", "lam%", "unsure%", "cls_ms", "lrn_ms", "alpha"):
        assert word in text
    assert "order shuffle seed 3, first 20" in text
    assert "max_tokens" in text and "min" in text


def test_an_index_corpus_is_read_in_index_order(run_sqlite: Run, tmp_path: Path) -> None:
    root = tmp_path / "indexed"
    root.mkdir()
    lines = []
    for number, raw in enumerate(messages("ham", 5) + messages("spam", 5)):
        label = "ham" if number < 5 else "spam"
        (root / f"m{number}").write_bytes(raw)
        lines.append(f"{label} m{number}")
    (root / "index").write_text("\n".join(lines) + "\n")
    scores = tmp_path / "scores.tsv"
    doc = _eval_json(run_sqlite, "--corpus", str(root), "--scores", str(scores))
    assert (doc["order"], doc["seed"]) == ("index", None)
    paths = [line.split("\t")[-1] for line in scores.read_text().splitlines()[1:]]
    assert paths == [f"m{number}" for number in range(10)]


def test_a_failing_message_is_counted_and_scored_neutral(
    run_sqlite: Run, corpus: Path, tmp_path: Path
) -> None:
    (corpus / "spam" / "zz-broken").write_bytes(b"\x00not a message\n")
    scores = tmp_path / "scores.tsv"
    doc = _eval_json(run_sqlite, "--corpus", str(corpus), "--scores", str(scores))
    assert doc["failures"] == 1 and doc["metrics"]["n"] == 61
    assert doc["timing"]["n_trained"] == 60
    (row,) = [line for line in scores.read_text().splitlines() if "zz-broken" in line]
    assert row.split("\t")[2:4] == ["0.0", "unsure"]


def test_eval_on_a_given_database_refuses_one_that_holds_a_model(
    run: Run, corpus: Path, cli_database: str
) -> None:
    doc = _eval_json(run, "--database-url", cli_database, "--corpus", str(corpus), "--limit", "12")
    assert doc["database"].endswith("(--database-url)") and doc["metrics"]["n"] == 12
    result = run("--database-url", cli_database, "eval", "--corpus", str(corpus))
    assert result.exit_code == 2
    assert "configuration_error" in result.stderr and "already holds 12" in result.stderr


def test_cross_validation_on_a_given_database_uses_a_scope_per_fold(
    run: Run, corpus: Path, cli_database: str
) -> None:
    args = ("--corpus", str(corpus), "--protocol", "cv", "--folds", "2", "--limit", "20")
    doc = _eval_json(run, "--database-url", cli_database, *args)
    assert doc["metrics"]["n"] == 20
    assert doc["timing"]["n_trained"] == 20  # each fold learns the other half, fresh
    stats = json.loads(run("stats", "--json").stdout)  # the default scope stays empty
    assert all(label["messages"] == 0 for label in stats["labels"].values())


def test_skip_judges_only_the_messages_after_the_first_n(
    run_sqlite: Run, corpus: Path, tmp_path: Path
) -> None:
    whole = _eval_json(run_sqlite, "--corpus", str(corpus))
    later = _eval_json(run_sqlite, "--corpus", str(corpus), "--skip", "40")
    assert later["skip"] == 40 and whole["skip"] == 0
    # The same run: every message classified and learned, the same scores...
    assert (
        later["timing"]["n_classified"] == 60 and later["learn_outcomes"] == whole["learn_outcomes"]
    )
    rows = later["messages"]["rows"]
    assert [row[0] for row in rows] == list(range(40, 60))
    assert rows == whole["messages"]["rows"][40:]
    # ...judged on the last 20 alone.
    n_spam = sum(1 for row in rows if row[1] == "spam")
    assert (later["metrics"]["n"], later["metrics"]["n_spam"]) == (20, n_spam)
    judged = sum(sum(v.values()) for v in later["metrics"]["verdicts"].values())
    assert judged == 20
    table = run_sqlite("eval", "--corpus", str(corpus), "--skip", "40", "--limit", "50")
    assert "first 50, judged after the first 40" in table.stdout
    assert table.stdout.splitlines()[3].split()[0] == "10"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--protocol", "cv", "--folds", "61"], "--folds 61 needs at least 61 messages"),
        (["--order", "index"], "needs an index file"),
        (["--skip", "60"], "--skip 60 leaves none of the 60 messages to judge"),
        (["--skip", "10", "--limit", "10"], "--skip 10 leaves nothing of --limit 10"),
        (["--skip", "10", "--protocol", "cv"], "--skip goes with --protocol online"),
        (["--skip", "10", "--per-user"], "drop --skip"),
    ],
)
def test_usage_errors(run_sqlite: Run, corpus: Path, args: list[str], message: str) -> None:
    result = run_sqlite("eval", "--corpus", str(corpus), *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_a_folder_that_is_no_corpus_is_refused(run_sqlite: Run, tmp_path: Path) -> None:
    result = run_sqlite("eval", "--corpus", str(tmp_path))
    assert result.exit_code == 2
    assert "no index file and no ham/ folder" in result.stderr


def test_seeds_then_compare(run_sqlite: Run, corpus: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    result = run_sqlite("eval", "--corpus", str(corpus), "--seeds", "1-2", "--out", str(first))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "order shuffle seeds 1-2" in lines[0] and lines[1].split()[:2] == ["seed", "n"]
    assert [line.split()[0] for line in lines[3:5]] == ["1", "2"]
    assert lines[6].startswith("mean") and lines[7].startswith("sd")
    doc = json.loads(first.read_text())
    assert doc["seeds"] == [1, 2] and doc["aggregate"]["n_runs"] == 2
    assert {"roca_1_pct", "learned", "skipped"} <= set(doc["aggregate"]["sd"])
    for seed, seed_run in zip((1, 2), doc["runs"], strict=True):
        assert set(seed_run) == TOP_KEYS and seed_run["seed"] == seed
        assert len(seed_run["messages"]["rows"]) == 60
    assert doc["runs"][0]["messages"]["rows"] != doc["runs"][1]["messages"]["rows"]

    parallel = run_sqlite(
        "eval", "--corpus", str(corpus), "--seeds", "1,2", "--jobs", "2", "--json",
        "--out", str(second),
    )  # fmt: skip
    assert parallel.exit_code == 0, parallel.output
    doc_b = json.loads(parallel.stdout)
    assert doc_b == json.loads(second.read_text()) and doc_b["jobs"] == 2
    for run_a, run_b in zip(doc["runs"], doc_b["runs"], strict=True):  # each seed in a process
        assert run_a["messages"]["rows"] == run_b["messages"]["rows"]

    compared = run_sqlite("eval", "--compare", str(first), str(second), "--bootstrap", "200")
    assert compared.exit_code == 0, compared.output
    text = compared.stdout
    assert "200 paired resamples" in text and "no setting or setup value" in text
    assert text.count("[+0.000, +0.000]") == 6 and "over 2 seeds" in text
    as_json = run_sqlite("eval", "--compare", str(first), str(second), "--json")
    seeds = json.loads(as_json.stdout)["seeds"]
    assert [s["seed"] for s in seeds] == [1, 2]
    assert seeds[0]["metrics"]["roca_1_pct"]["verdict"] == "no significant difference"


def test_compare_refuses_different_message_sets(
    run_sqlite: Run, corpus: Path, tmp_path: Path
) -> None:
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    for path, limit in ((small, "20"), (large, "30")):
        args = ("eval", "--corpus", str(corpus), "--limit", limit, "--out", str(path))
        assert run_sqlite(*args).exit_code == 0
    result = run_sqlite("eval", "--compare", str(small), str(large))
    assert result.exit_code == 2
    assert "did not classify the same messages" in result.stderr
    assert "0 only in A" in result.stderr and "10 only in B" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seeds", "1-2", "--seed", "3"], "--seeds and --seed are mutually exclusive"),
        (["--seeds", "5-1"], "runs backwards"),
        (["--seeds", "1,x"], "expected seeds such as 1-5"),
        (["--seeds", "1-2", "--scores", "s.tsv"], "--scores: one run only"),
        (["--seeds", "1-2", "--database-url", "sqlite://"], "--database-url: one run only"),
        (["--jobs", "2"], "--jobs goes with --seeds"),
        (["--bootstrap", "10"], "--bootstrap and --bootstrap-seed go with --compare"),
        (["--compare", "a.json", "b.json"], "runs nothing; drop --corpus"),
    ],
)
def test_seeds_and_compare_usage_errors(
    run_sqlite: Run, corpus: Path, args: list[str], message: str
) -> None:
    for name in ("a.json", "b.json"):
        Path(name).write_text("{}")  # the working folder is the test's own
    result = run_sqlite("eval", "--corpus", str(corpus), *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_corpus_is_required_and_seeds_need_a_shuffle(run_sqlite: Run, tmp_path: Path) -> None:
    result = run_sqlite("eval", "--limit", "5")
    assert result.exit_code == 2 and "--corpus is required" in result.stderr
    root = tmp_path / "indexed"
    root.mkdir()
    (root / "m0").write_bytes(messages("ham", 1)[0])
    (root / "index").write_text("ham m0\n")
    result = run_sqlite("eval", "--corpus", str(root), "--seeds", "1-2")
    assert result.exit_code == 2 and "add --order shuffle" in result.stderr


def test_decisive_names_a_mislabelled_message(
    run_sqlite: Run, corpus: Path, tmp_path: Path
) -> None:
    # A spam filed as ham: judged after some spam has been learned, it scores as spam.
    (corpus / "ham" / "ham_9999.eml").write_bytes(messages("spam", 1, start=500)[0])
    out = tmp_path / "run.json"
    result = run_sqlite(
        "eval", "--corpus", str(corpus), "--decisive", "2", "--out", str(out)
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = next(k for k, line in enumerate(lines) if line.startswith("decisive   this run"))
    first = lines[at + 2].split()
    assert first[0] == "ham" and first[-1] == "ham/ham_9999.eml"
    assert float(first[2].rstrip("%")) > 50  # most of the run's 1-ROCA%
    compared = run_sqlite("eval", "--compare", str(out), str(out), "--decisive", "1")
    assert compared.exit_code == 0, compared.output
    assert compared.stdout.count("ham/ham_9999.eml") == 2  # A's and B's


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--decisive", "3", "--json"], "--decisive prints a table; drop --json"),
        (["--decisive", "3", "--seeds", "1-2"], "--decisive goes with one run or with --compare"),
        (["--decisive", "0"], "0 is not in the range x>=1"),
    ],
)
def test_decisive_usage_errors(
    run_sqlite: Run, corpus: Path, args: list[str], message: str
) -> None:
    result = run_sqlite("eval", "--corpus", str(corpus), *args)
    assert result.exit_code == 2
    assert message in result.stderr
