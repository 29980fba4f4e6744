"""``spamfilter bench users`` on a small synthetic corpus of two users: every message is
learned as its user's feedback and judged both ways, and the command prints both rows (on
SQLite, and on a scratch schema of PostgreSQL with ``--postgres-url``).
Nothing here is timed: the figures are the bench's to report."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from app.cli import cli
from tests.cli.mailfiles import write_corpus
from tests.conftest import POSTGRES_URL_ENV


def _corpus(root: Path) -> Path:
    """Two users' mail under ``root``, an index naming every message (as enron's)."""
    lines = []
    for number, user in enumerate(("u1", "u2")):
        write_corpus(root / user, n_ham=8, n_spam=8, seed=7 + number)
        for path in sorted((root / user).rglob("*.eml")):
            lines.append(f"{path.parent.name} {path.relative_to(root).as_posix()}")
    (root / "index").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_the_command_judges_every_message_both_ways(
    clean_environment: None, tmp_path: Path, database_backend: str
) -> None:
    corpus = _corpus(tmp_path / "corpus")
    where = (
        ["--postgres-url", os.environ[POSTGRES_URL_ENV]] if database_backend == "postgresql" else []
    )
    result = CliRunner().invoke(
        cli,
        ["bench", "users", "--corpus", str(corpus), "--rounds", "1", *where],
        env={
            "SPAMFILTER_DATABASE_URL": f"sqlite:///{tmp_path / 'unused.db'}",
            "SPAMFILTER_TRAINING_MODE": "everything",
        },
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:3]] == ["site-wide", "its"]
    assert "a user's classify costs" in lines[3]
    # half of each user's 16 messages learned, by both the user's model and the site's
    assert lines[4] == "2 users learned 16 messages; classified 16 each round each way"


def test_a_corpus_of_one_user_is_refused(clean_environment: None, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus / "u1", n_ham=4, n_spam=4)
    (corpus / "index").write_text(
        "".join(
            f"{p.parent.name} {p.relative_to(corpus).as_posix()}\n"
            for p in sorted(corpus.rglob("*.eml"))
        ),
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        cli,
        ["bench", "users", "--corpus", str(corpus), "--rounds", "1"],
        env={"SPAMFILTER_DATABASE_URL": f"sqlite:///{tmp_path / 'unused.db'}"},
    )
    assert result.exit_code != 0
    assert "per-user evaluation needs" in result.output
