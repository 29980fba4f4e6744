"""spamfilter eval with more than two classes: the ham of a generated corpus split into
easy_ham and hard_ham by file name, as the SpamAssassin corpus's sub-corpora are."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.evaluation.multiclass import class_scores, confusion
from tests.cli.conftest import Run
from tests.cli.mailfiles import write_corpus
from tests.cli.test_eval import _eval_json

SPLIT = ("--classes-from-names", "easy_ham,hard_ham")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """30 ham (20 easy_ham_*, 10 hard_ham_*) and 30 spam files."""
    root = write_corpus(tmp_path / "three", n_ham=30, n_spam=30)
    for number, path in enumerate(sorted((root / "ham").iterdir())):
        kind = "easy_ham" if number < 20 else "hard_ham"
        path.rename(path.with_name(f"{kind}_{number:04d}.eml"))
    return root


def test_three_classes_from_file_names_learned_as_ham_and_spam(
    run_sqlite: Run, corpus: Path
) -> None:
    doc = _eval_json(run_sqlite, "--corpus", str(corpus), *SPLIT)
    block = doc["classes"]
    assert block["corpus"] == {"easy_ham": 20, "hard_ham": 10, "spam": 30}
    assert block["learned_as"] == {"easy_ham": "ham", "hard_ham": "ham", "spam": "spam"}
    # The junk-vs-not-junk figures are those of the same stream read as two classes.
    two = _eval_json(run_sqlite, "--corpus", str(corpus))
    assert "classes" not in two
    assert doc["metrics"] == two["metrics"]
    # The per-class figures are those of the message rows.
    columns = doc["messages"]["columns"]
    assert columns[-2:] == ["class", "predicted"]
    rows = [dict(zip(columns, row, strict=True)) for row in doc["messages"]["rows"]]
    matrix = confusion([r["class"] for r in rows], [r["predicted"] for r in rows])
    assert block["confusion"] == {
        "rows": ["easy_ham", "hard_ham", "spam"],
        "columns": list(matrix.columns),
        "counts": [list(line) for line in matrix.counts],
    }
    taught = [block["learned_as"][r["class"]] for r in rows]
    scores = class_scores(taught, [r["predicted"] for r in rows])
    assert set(block["per_class"]) == {"ham", "spam"}
    assert block["per_class"]["spam"]["f1_pct"] == pytest.approx(scores["spam"].f1_pct)
    assert block["per_class"]["ham"]["support"] == 30
    assert 50 < block["macro_f1_pct"] <= 100
    assert sum(block["verdicts"]["hard_ham"].values()) == 10


def test_the_scores_file_names_each_messages_classes(
    run_sqlite: Run, corpus: Path, tmp_path: Path
) -> None:
    scores = tmp_path / "scores.tsv"
    doc = _eval_json(run_sqlite, "--corpus", str(corpus), "--scores", str(scores), *SPLIT)
    rows = [line.split("\t") for line in scores.read_text().splitlines()]
    assert rows[0][-3:] == ["path", "class", "predicted"]
    assert [row[-3:] for row in rows[1:]] == [row[-3:] for row in doc["messages"]["rows"]]


def test_the_table_prints_the_confusion_matrix_and_macro_f1(run_sqlite: Run, corpus: Path) -> None:
    result = run_sqlite("eval", "--corpus", str(corpus), *SPLIT)
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "classes    easy_ham 20 learned as ham, hard_ham 10 learned as ham, spam 30" in text
    assert "junk: spam" in text
    assert "confusion  corpus \\ predicted" in text
    assert "macro-F1" in text and "by class   easy_ham   ham " in text
    plain = run_sqlite("eval", "--corpus", str(corpus)).stdout
    assert "confusion" not in plain and "macro-F1" not in plain


def test_seeds_pool_the_class_figures(run_sqlite: Run, corpus: Path) -> None:
    args = ("--corpus", str(corpus), "--seeds", "1-2", *SPLIT)
    doc = _eval_json(run_sqlite, *args)
    runs = doc["runs"]
    assert [sum(run["classes"]["verdicts"]["hard_ham"].values()) for run in runs] == [10, 10]
    assert sum(doc["classes"]["verdicts"]["hard_ham"].values()) == 20
    mean = (runs[0]["classes"]["macro_f1_pct"] + runs[1]["classes"]["macro_f1_pct"]) / 2
    assert doc["classes"]["macro_f1_pct"]["mean"] == pytest.approx(mean)
    text = run_sqlite("eval", *args).stdout
    assert "mean over 2 seeds" in text and "(all seeds)" in text


def test_unknown_class_names_are_refused(run_sqlite: Run, corpus: Path) -> None:
    result = run_sqlite("eval", "--corpus", str(corpus), "--classes-from-names", "a,,b")
    assert result.exit_code == 2
    assert "class names" in result.output


def test_a_model_declaring_the_third_class_learns_it(
    run_sqlite: Run, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ham and spam stay declared; easy_ham, not declared, is learned as its folder's ham.
    monkeypatch.setenv("SPAMFILTER_MODEL__CLASSES", "ham,spam,hard_ham")
    monkeypatch.setenv("SPAMFILTER_MODEL__JUNK_CLASSES", "spam")
    doc = _eval_json(run_sqlite, "--corpus", str(corpus), *SPLIT)
    block = doc["classes"]
    assert block["learned_as"] == {"easy_ham": "ham", "hard_ham": "hard_ham", "spam": "spam"}
    assert set(block["per_class"]) == {"ham", "hard_ham", "spam"}
    assert block["per_class"]["hard_ham"]["support"] == 10
    assert block["confusion"]["rows"] == ["easy_ham", "hard_ham", "spam"]
    assert doc["metrics"]["n_ham"] == 30 and doc["metrics"]["n_spam"] == 30
