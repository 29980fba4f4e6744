"""The command line with more than two classes: ``learn --label`` with a declared class, an
undeclared one refused naming the classes, and ``classes list``, ``rename`` and ``remove``
changing every model exactly (SQLite and PostgreSQL)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.builders import word_message
from tests.cli.conftest import Run
from tests.cli.mailfiles import messages, write_folder
from tests.storage.snapshot import assert_consistent, snapshot

Stats = Callable[[], dict[str, Any]]
WIDER = ("ham", "spam", "newsletter")
COUNT_TABLES = ("token_count", "label_total", "learned_message", "ham_score")
NEWS_WORDS = ("edition", "weekly", "digest", "subscribe", "issue", "readers", "featured")


def newsletters(count: int, start: int = 0) -> list[bytes]:
    rng = random.Random(11)
    senders = ("The Weekly <news@weekly.example>",)
    return [
        word_message(rng, NEWS_WORDS, serial, senders=senders)
        for serial in range(start, start + count)
    ]


@pytest.fixture
def declared(monkeypatch: pytest.MonkeyPatch, cli_database: str) -> str:
    monkeypatch.setenv("SPAMFILTER_MODEL__CLASSES", ",".join(WIDER))
    return cli_database


def learn(run: Run, tmp_path: Path, label: str, raws: list[bytes], user: str | None = None) -> None:
    folder = write_folder(tmp_path, f"{label}-{user}-{len(list(tmp_path.iterdir()))}", raws)
    extra = () if user is None else ("--user", user)
    result = run("learn", "--label", label, *extra, str(folder))
    assert result.exit_code == 0, result.output


def test_learn_a_declared_class_and_list_the_classes(
    run: Run, declared: str, stats: Stats, tmp_path: Path
) -> None:
    learn(run, tmp_path, "Newsletter", newsletters(3))
    assert stats()["labels"]["newsletter"]["messages"] == 3
    listed = run("classes", "list")
    assert listed.exit_code == 0, listed.output
    rows = [line.split() for line in listed.stdout.splitlines()[1:]]
    assert rows == [["ham", "no", "0"], ["spam", "yes", "0"], ["newsletter", "no", "3"]]


def test_an_undeclared_class_exits_2_naming_the_classes(
    run: Run, declared: str, tmp_path: Path
) -> None:
    folder = write_folder(tmp_path, "x", newsletters(1))
    result = run("learn", "--label", "receipts", str(folder))
    assert result.exit_code == 2
    assert "'receipts' is not one of 'ham', 'spam', 'newsletter'" in result.stderr


def trained(run: Run, tmp_path: Path) -> None:
    learn(run, tmp_path, "ham", messages("ham", 4))
    learn(run, tmp_path, "spam", messages("spam", 4))
    learn(run, tmp_path, "newsletter", newsletters(4))
    learn(run, tmp_path, "newsletter", newsletters(2, start=10), user="alice@example.org")


def test_remove_forgets_every_message_of_the_class_exactly(
    run: Run, declared: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    learn(run, tmp_path, "ham", messages("ham", 4))
    learn(run, tmp_path, "spam", messages("spam", 4))
    before = snapshot(declared, timestamps=False)  # the newsletter columns all zero
    learn(run, tmp_path, "newsletter", newsletters(4))
    learn(run, tmp_path, "newsletter", newsletters(2, start=10), user="alice@example.org")
    result = run("classes", "remove", "newsletter")
    assert result.exit_code == 0, result.output
    assert (
        "removed class newsletter: 8 learned messages forgotten (over every model" in result.stdout
    )
    assert "now declare model.classes = ham,spam" in result.stderr
    monkeypatch.delenv("SPAMFILTER_MODEL__CLASSES")
    after = snapshot(declared, timestamps=False)
    for table in COUNT_TABLES:
        assert after[table] == before[table], table
    assert_consistent(declared)
    assert run("stats").exit_code == 0


def test_remove_into_another_class_moves_the_messages(
    run: Run, declared: str, tmp_path: Path, stats: Stats, monkeypatch: pytest.MonkeyPatch
) -> None:
    trained(run, tmp_path)
    result = run("classes", "remove", "newsletter", "--into", "ham")
    assert result.exit_code == 0, result.output
    assert "8 learned messages moved to ham" in result.stdout
    monkeypatch.delenv("SPAMFILTER_MODEL__CLASSES")
    assert_consistent(declared)
    assert stats()["labels"]["ham"]["messages"] == 4 + 4 + 2


def test_rename_keeps_every_count_under_the_new_name(
    run: Run, declared: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trained(run, tmp_path)
    before = assert_consistent(declared, WIDER)
    result = run("classes", "rename", "newsletter", "bulletin")
    assert result.exit_code == 0, result.output
    assert "renamed class newsletter to bulletin: 8 learned messages" in result.stdout
    assert "now declare model.classes = ham,spam,bulletin" in result.stderr
    monkeypatch.setenv("SPAMFILTER_MODEL__CLASSES", "ham,spam,bulletin")
    after = assert_consistent(declared, ("ham", "spam", "bulletin"))
    renamed = [
        tuple("bulletin" if value == "newsletter" else value for value in row)
        for row in before["label_total"]
    ]
    assert sorted(after["label_total"], key=repr) == sorted(renamed, key=repr)
    assert after["token_count"] == before["token_count"]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("rename", "spam", "junk"), "spam is a class of every site"),
        (("remove", "ham"), "ham is a class of every site"),
        (("rename", "newsletter", "Bad Name"), "cannot name a class"),
        (("remove", "newsletter", "--into", "receipts"), "--into names the class"),
        (("rename", "newsletter", "ham"), "ham is a class of every site"),
    ],
)
def test_class_changes_that_make_no_sense_exit_2(
    run: Run, declared: str, tmp_path: Path, args: tuple[str, ...], problem: str
) -> None:
    learn(run, tmp_path, "newsletter", newsletters(1))
    result = run("classes", *args)
    assert result.exit_code == 2, result.output
    assert problem in result.stderr


def test_renaming_onto_a_class_that_holds_messages_is_refused(
    run: Run, declared: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPAMFILTER_MODEL__CLASSES", "ham,spam,newsletter,bulletin")
    learn(run, tmp_path, "newsletter", newsletters(1))
    learn(run, tmp_path, "bulletin", newsletters(1, start=5))
    result = run("classes", "rename", "newsletter", "bulletin")
    assert result.exit_code == 2
    assert "classes remove newsletter --into bulletin" in result.stderr


def test_a_class_no_longer_declared_is_named_until_removed(
    run: Run, declared: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    learn(run, tmp_path, "newsletter", newsletters(2))
    monkeypatch.delenv("SPAMFILTER_MODEL__CLASSES")
    listed = run("classes", "list")
    assert listed.exit_code == 0, listed.output
    assert "2 learned messages of class newsletter, which is not declared" in listed.stderr
    removed = run("classes", "remove", "newsletter")
    assert removed.exit_code == 0, removed.output
    assert "2 learned messages forgotten" in removed.stdout
    assert "not declared" not in run("classes", "list").stderr
    assert_consistent(declared)
