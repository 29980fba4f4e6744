"""``spamfilter bench classes`` on a small synthetic corpus: every class of each site learns a
share of the corpus (junk classes the spam, the others the ham), and the command prints one
row per site. Nothing here is timed: the figures are the bench's to report."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from app.cli import cli
from app.evaluation.corpus import load_corpus
from benchmarks.classes_bench import class_of, declared
from tests.cli.mailfiles import write_corpus


def test_every_class_learns_its_side_of_the_corpus(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", n_ham=40, n_spam=40)
    classes, junk = declared(10)
    assert classes[:2] == ("ham", "spam") and len(classes) == 10
    assert set(junk) == {"spam", "c3", "c5", "c7", "c9"}
    given: Counter[str] = Counter()
    for item in load_corpus(corpus, order="auto", seed=1):
        name = class_of(item, classes, junk)
        assert (name in junk) == (item.label == "spam")
        given[name] += 1
    assert len(given) >= 8  # a stable hash spreads 80 messages over the 10 classes


def test_the_command_prints_a_row_per_site(clean_environment: None, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", n_ham=12, n_spam=12)
    result = CliRunner().invoke(
        cli,
        ["bench", "classes", "--corpus", str(corpus), "--classes", "2", "--classes", "4",
         "--rounds", "1"],
        env={
            "SPAMFILTER_DATABASE_URL": f"sqlite:///{tmp_path / 'unused.db'}",
            "SPAMFILTER_TRAINING_MODE": "everything",
        },
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.stdout.splitlines()[1:3]]
    assert [row[0] for row in rows] == ["2", "4"]
    assert rows[0][2] == "1.00x"
    assert [row[-1] for row in rows] == ["12", "12"]  # every message (training_mode: everything)
    assert "classified 12 messages each round" in result.stdout
