"""learn, classify, forget, stats and db upgrade through the real command line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Run
from tests.cli.mailfiles import messages, plain, write_maildir, write_mbox

Stats = Callable[[], dict[str, Any]]


def _learned(stats: Stats) -> dict[str, int]:
    return {label: counts["messages"] for label, counts in stats()["labels"].items()}


def _train(run: Run, tmp_path: Path, n: int = 12) -> tuple[Path, Path]:
    """Folders of ``n`` ham and ``n`` spam, learned (enough for verdicts)."""
    folders = []
    for label in ("ham", "spam"):
        folder = tmp_path / f"train-{label}"
        folder.mkdir()
        for number, raw in enumerate(messages(label, n)):
            (folder / f"{number}.eml").write_bytes(raw)
        result = run("learn", "--label", label, str(folder))
        assert result.exit_code == 0, result.output
        folders.append(folder)
    return folders[0], folders[1]


def test_learn_a_file_a_folder_and_stdin(run: Run, stats: Stats, tmp_path: Path) -> None:
    one = tmp_path / "one.eml"
    one.write_bytes(plain("lunch today", "shall we meet at noon"))
    folder = tmp_path / "folder" / "nested"
    folder.mkdir(parents=True)
    for number, raw in enumerate(messages("ham", 3)):
        (folder / str(number)).write_bytes(raw)

    result = run("learn", "--label", "ham", str(one), str(tmp_path / "folder"))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        "learned 4, relabelled 0, unchanged 0, skipped 0, failed 0: 4 messages"
    )

    spam = messages("spam", 1)[0]
    result = run("learn", "-l", "SPAM", "-", input=spam)
    assert result.exit_code == 0, result.output
    assert _learned(stats) == {"ham": 4, "spam": 1}


def test_learn_a_maildir_and_an_mbox(run: Run, stats: Stats, tmp_path: Path) -> None:
    box = write_maildir(
        tmp_path / "Maildir", cur=messages("spam", 2), new=messages("spam", 1, start=9)
    )
    mbox = write_mbox(tmp_path / "ham.mbox", messages("ham", 3))
    assert run("learn", "--label", "spam", str(box)).exit_code == 0
    result = run("learn", "--label", "ham", str(mbox))
    assert result.exit_code == 0, result.output
    assert "learned 3," in result.stdout
    assert _learned(stats) == {"ham": 3, "spam": 3}


def test_learning_a_maildir_as_ham_leaves_its_junk_and_trash_alone(
    run: Run, stats: Stats, tmp_path: Path
) -> None:
    box = write_maildir(tmp_path / "Maildir", cur=messages("ham", 2), new=[])
    write_maildir(box / ".Sent", cur=messages("ham", 1, start=10), new=[])
    write_maildir(box / ".Junk", cur=messages("spam", 2), new=[])
    write_maildir(box / ".Trash", cur=messages("spam", 1, start=5), new=[])

    result = run("learn", "--label", "ham", str(box))
    assert result.exit_code == 0, result.output
    assert "learned 2," in result.stdout
    assert "skipped folder" not in result.stderr

    result = run("learn", "--label", "ham", "--recursive", str(box))
    assert result.exit_code == 0, result.output
    assert "learned 1, relabelled 0, unchanged 2," in result.stdout
    assert result.stderr.splitlines() == [
        f"skipped folder {box / '.Junk'} (junk or trash; name it to include it)",
        f"skipped folder {box / '.Trash'} (junk or trash; name it to include it)",
    ]

    result = run("learn", "--label", "spam", "-q", "-r", str(box / ".Junk"))
    assert result.exit_code == 0, result.output
    assert "learned 2," in result.stdout
    assert _learned(stats) == {"ham": 3, "spam": 2}


def test_classify_and_forget_take_recursive_too(run: Run, tmp_path: Path) -> None:
    box = write_maildir(tmp_path / "Maildir", cur=messages("ham", 1), new=[])
    write_maildir(box / ".Sent", cur=messages("ham", 1, start=10), new=[])
    write_maildir(box / ".Spam", cur=messages("spam", 1), new=[])
    assert run("learn", "--label", "ham", "--recursive", str(box)).exit_code == 0

    result = run("classify", "--json", "--recursive", str(box))
    assert result.exit_code == 0, result.output
    paths = [json.loads(line)["path"] for line in result.stdout.splitlines()]
    assert paths == [
        str(box / ".Sent/cur/1700000000.0.host:2,S"),
        str(box / "cur/1700000000.0.host:2,S"),
    ]
    assert "skipped folder" in result.stderr and ".Spam" in result.stderr

    result = run("forget", "--recursive", str(box))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("forgotten 2, unknown 0, failed 0")


def test_learning_again_is_unchanged_and_the_other_label_relabels(
    run: Run, stats: Stats, tmp_path: Path
) -> None:
    mbox = write_mbox(tmp_path / "box", messages("ham", 2))
    assert "learned 2," in run("learn", "--label", "ham", str(mbox)).stdout
    assert "unchanged 2," in run("learn", "--label", "ham", str(mbox)).stdout
    assert "relabelled 2," in run("learn", "--label", "spam", str(mbox)).stdout
    assert _learned(stats) == {"ham": 0, "spam": 2}


def test_a_bad_file_is_reported_and_counted_without_stopping(
    run: Run, stats: Stats, tmp_path: Path
) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "a-good").write_bytes(messages("ham", 1)[0])
    (folder / "b-bad").write_bytes(b"\x00 this is not a message at all\n")
    (folder / "c-good").write_bytes(messages("ham", 1, start=5)[0])
    result = run("learn", "--label", "ham", str(folder))
    assert result.exit_code == 1
    assert "learned 2, relabelled 0, unchanged 0, skipped 0, failed 1" in result.stdout
    assert f"error: {folder / 'b-bad'}: invalid_message:" in result.stderr
    assert _learned(stats) == {"ham": 2, "spam": 0}


def test_a_bad_label_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    (tmp_path / "m").write_bytes(plain("hi", "there"))
    result = run("learn", "--label", "eggs", str(tmp_path / "m"))
    assert result.exit_code == 2
    assert "'eggs' is not one of 'ham', 'spam'" in result.stderr


def test_a_missing_path_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    result = run("learn", "--label", "ham", str(tmp_path / "nowhere"))
    assert result.exit_code == 2
    assert "does not exist" in result.stderr


def test_classify_prints_one_line_per_message(run: Run, tmp_path: Path) -> None:
    _train(run, tmp_path)
    spam = tmp_path / "new-spam.eml"
    spam.write_bytes(messages("spam", 1, seed=99, start=500)[0])
    ham = tmp_path / "new-ham.eml"
    ham.write_bytes(messages("ham", 1, seed=99, start=500)[0])
    result = run("classify", str(spam), str(ham))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    verdict, log_odds, probability, path = lines[0].split(maxsplit=3)
    assert verdict in ("spam", "unsure") and float(log_odds) > 0
    assert 0.5 < float(probability) <= 1.0 and path == str(spam)
    verdict, log_odds, _probability, path = lines[1].split(maxsplit=3)
    assert verdict == "ham" and float(log_odds) < 0 and path == str(ham)


def test_classify_json_lines_carry_clues(run: Run, tmp_path: Path) -> None:
    _train(run, tmp_path)
    raw = messages("spam", 1, seed=99, start=500)[0]
    result = run("classify", "--json", "-", input=raw)
    assert result.exit_code == 0, result.output
    (doc,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert doc["path"] == "-"
    assert set(doc) >= {"verdict", "reason", "log_odds", "spam_probability", "digest", "clues"}
    assert doc["clues"] and {"token", "weight", "counts"} == set(doc["clues"][0])
    assert all(set(clue["counts"]) == {"ham", "spam"} for clue in doc["clues"])
    assert sum(clue["counts"]["spam"] for clue in doc["clues"]) > 0
    assert doc["log_odds"] > 0
    # Fewer than 500 ham scored: the calibrated cut-off is still the highest.
    assert doc["thresholds"] == {
        "ham_below": 0.0,
        "spam_above": 15.0,
        "calibrated": True,
        "min_messages": 10,
    }
    assert doc["required"] == 5.0 and doc["score"] > 0


def test_classify_explains_one_message(run: Run, tmp_path: Path) -> None:
    _train(run, tmp_path)
    raw = messages("spam", 1, seed=99, start=500)[0]
    result = run("classify", "--explain", "-", input=raw)
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "-: SPAM" in text or "-: UNSURE" in text
    assert "ham below 0, spam above 15 (calibrated)" in text
    assert "on SpamAssassin's scale" in text
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert rows, text
    token, ham, spam, weight = (cell.strip() for cell in rows[0].strip("│").split("│"))
    assert token and int(ham) >= 0 and int(spam) > 0 and float(weight) > 0


def test_classify_reports_bad_input_in_json_and_on_stderr(run: Run) -> None:
    result = run("classify", "--json", "-", input=b"no header here\n")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "path": "-",
        "error": "invalid_message: input does not start with an RFC 822 header",
    }
    assert "error: -: invalid_message" in result.stderr


def test_classify_before_training_is_unsure(run: Run) -> None:
    result = run("classify", "-", input=plain("hello", "first message ever"))
    assert result.exit_code == 0
    assert result.stdout.split()[:3] == ["unsure", "+0.000", "0.500000"]


def test_forget_restores_the_counts(run: Run, stats: Stats, tmp_path: Path) -> None:
    mbox = write_mbox(tmp_path / "box", messages("spam", 2))
    before = stats()
    assert run("learn", "--label", "spam", str(mbox)).exit_code == 0
    folder = tmp_path / "same-messages"
    folder.mkdir()
    for number, raw in enumerate(messages("spam", 2)):
        (folder / str(number)).write_bytes(raw)  # the same messages, as files with CRLF
    result = run("forget", str(folder))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("forgotten 2, unknown 0, failed 0")
    assert "forgotten 0, unknown 2" in run("forget", str(mbox)).stdout
    assert stats() == before


def test_stats_text_and_json(run: Run, stats: Stats, tmp_path: Path) -> None:
    _train(run, tmp_path, n=3)
    doc = stats()
    assert doc["scope"] == "global"
    assert doc["labels"]["ham"]["messages"] == 3 and doc["labels"]["spam"]["messages"] == 3
    assert doc["vocabulary"] > 0
    text = run("stats").stdout
    assert "ham" in text and "spam" in text and f"vocabulary  {doc['vocabulary']:,}" in text


def test_db_upgrade_reports_the_revision(run: Run) -> None:
    result = run("db", "upgrade")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("database at revision ")


@pytest.mark.parametrize("command", [["stats"], ["learn", "--label", "ham", "-"]])
def test_the_database_url_option_wins_over_the_environment(
    run: Run, tmp_path: Path, command: list[str], cli_database: str
) -> None:
    other = f"sqlite:///{tmp_path / 'other.db'}"
    result = run("--database-url", other, *command, input=plain("x", "y"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "other.db").exists()


def test_a_commands_recorded_calls_are_written_when_it_ends(run: Run, cli_database: str) -> None:
    """The console's recorder is flushed as the command ends, not at interpreter exit (when
    the database may be gone): the calls are in the database as soon as it returns."""
    import sqlalchemy as sa

    from app.storage.tables import activity_minute
    from tests.storage.snapshot import reader

    result = run("learn", "--label", "ham", "-q", "-", input=messages("ham", 1)[0])
    assert result.exit_code == 0, result.output
    engine = reader(cli_database)
    try:
        with engine.connect() as conn:
            query = sa.select(activity_minute.c.adapter, activity_minute.c.action)
            recorded = {(adapter, action) for adapter, action in conn.execute(query)}
    finally:
        engine.dispose()
    assert ("cli", "learn") in recorded
