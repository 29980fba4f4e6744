"""The counts ``learn`` ends with, and the words that explain a skipped message."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import Run
from tests.cli.mailfiles import messages, write_folder

SKIPPED_WHY = (
    "the model already judged them right by more than {margin} nats (thick training; "
    "set SPAMFILTER_TRAINING_MODE=everything to learn every message)"
)


def _thick(monkeypatch: pytest.MonkeyPatch, margin: str = "30") -> None:
    monkeypatch.setenv("SPAMFILTER_TRAINING_MODE", "thick")
    monkeypatch.setenv("SPAMFILTER_TRAINING_MARGIN", margin)


def _trained(run: Run, tmp_path: Path) -> None:
    """Enough ham and spam that thick training judges more of the same with confidence."""
    for label in ("ham", "spam"):
        folder = write_folder(tmp_path, f"train-{label}", messages(label, 30))
        assert run("learn", "-q", "--label", label, str(folder)).exit_code == 0


@pytest.mark.usefixtures("sqlite_database")
def test_thick_training_says_why_it_skipped(
    run_sqlite: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _thick(monkeypatch)
    _trained(run_sqlite, tmp_path)
    more = write_folder(tmp_path, "more", messages("spam", 20, start=100))
    (more / "zz-bad").write_bytes(b"\x00 not a message")

    result = run_sqlite("learn", "--label", "spam", str(more))
    assert result.exit_code == 1, result.output
    counts, why = result.stdout.splitlines()
    assert counts.startswith("learned ")
    skipped = int(counts.split("skipped ")[1].split(",")[0])
    assert skipped > 0
    assert ", failed 1: 21 messages in " in counts
    assert why == f"skipped {skipped}: " + SKIPPED_WHY.format(margin=30)
    # one line per failure on stderr, as before
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1
    assert errors[0].startswith(f"error: {more / 'zz-bad'}: invalid_message: ")


@pytest.mark.usefixtures("sqlite_database")
def test_the_margin_is_the_configured_one(
    run_sqlite: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _thick(monkeypatch, margin="2.5")
    _trained(run_sqlite, tmp_path)
    more = write_folder(tmp_path, "more", messages("ham", 10, start=100))
    result = run_sqlite("learn", "--label", "ham", str(more))
    assert result.exit_code == 0, result.output
    assert "by more than 2.5 nats (thick training;" in result.stdout


def test_nothing_skipped_needs_no_explanation(run: Run, tmp_path: Path) -> None:
    folder = write_folder(tmp_path, "ham", messages("ham", 3))
    result = run("learn", "--label", "ham", str(folder))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith(
        "learned 3, relabelled 0, unchanged 0, skipped 0, failed 0: 3 messages in "
    )
    assert len(result.stdout.splitlines()) == 1
