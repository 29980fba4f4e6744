"""eval --per-user: the interleaved stream, the three arms, and the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.evaluation.corpus import CorpusItem, load_corpus
from app.evaluation.per_user import ARMS, arm_settings, interleave, users_by_item
from app.settings.schema import Settings
from tests.cli.conftest import Run
from tests.cli.mailfiles import messages


def two_users(root: Path, sizes: tuple[int, int] = (12, 8)) -> Path:
    """An index corpus with a folder per user; the users' ham differs, their spam does not."""
    lines = []
    for user, size in zip(("ann", "ben"), sizes, strict=True):
        (root / user).mkdir(parents=True)
        ham = messages("ham", size // 2, seed=len(user) + ord(user[0]))
        spam = messages("spam", size - size // 2, seed=3)
        for number, raw in enumerate(ham + spam):
            label = "ham" if number < len(ham) else "spam"
            (root / user / f"{label}{number}").write_bytes(raw)
            lines.append(f"{label} {user}/{label}{number}")
    (root / "index").write_text("\n".join(lines) + "\n")
    return root


def test_streams_keep_their_order_and_are_spread_evenly(tmp_path: Path) -> None:
    root = two_users(tmp_path / "c", sizes=(9, 3))
    items = load_corpus(root, order="index")
    users = users_by_item(items, root)
    stream = interleave(items, users)
    assert sorted(stream, key=items.index) == items
    for user in ("ann", "ben"):
        own = [item for item in items if users[item.path] == user]
        assert [item for item in stream if users[item.path] == user] == own
    # ben's 3 messages fall in each third of the stream, not all at its end
    positions = [n for n, item in enumerate(stream) if users[item.path] == "ben"]
    assert [p * 3 // len(stream) for p in positions] == [0, 1, 2]


def test_a_corpus_without_a_folder_per_user_is_refused(tmp_path: Path) -> None:
    item = CorpusItem("ham", tmp_path / "m1")
    with pytest.raises(ValueError, match="folder per user"):
        users_by_item([item], tmp_path)
    (tmp_path / "one").mkdir()
    with pytest.raises(ValueError, match="two users"):
        users_by_item([CorpusItem("ham", tmp_path / "one" / "m1")], tmp_path)


def test_separate_models_share_nothing() -> None:
    settings = Settings(_env_file=None)
    separate = arm_settings(settings, "separate").users
    assert (separate.fallback_strength, separate.train_site) == (0.0, False)
    assert arm_settings(settings, "fallback") is settings


def test_the_command_compares_the_arms_per_user(run_sqlite: Run, tmp_path: Path) -> None:
    root = two_users(tmp_path / "corpus", sizes=(24, 16))
    result = run_sqlite("eval", "--corpus", str(root), "--per-user", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert list(doc["arms"]) == list(ARMS)
    for arm in doc["arms"].values():
        assert arm["metrics"]["n"] == 40
        assert {user: m["n"] for user, m in arm["per_user"].items()} == {"ann": 24, "ben": 16}
    assert doc["arms"]["separate"]["users_settings"]["fallback_strength"] == 0.0
    table = run_sqlite("eval", "--corpus", str(root), "--per-user", "--limit", "10")
    assert table.exit_code == 0, table.output
    assert "separate ben" in table.output and "fallback ann" in table.output


@pytest.mark.parametrize(
    "extra", [["--protocol", "cv"], ["--seeds", "1-2"], ["--database-url", "sqlite://"]]
)
def test_per_user_refuses_what_does_not_apply(
    run_sqlite: Run, tmp_path: Path, extra: list[str]
) -> None:
    root = two_users(tmp_path / "corpus")
    result = run_sqlite("eval", "--corpus", str(root), "--per-user", *extra)
    assert result.exit_code == 2, result.output
    assert "--per-user" in result.output


def test_per_user_prints_each_arms_classes(run_sqlite: Run, tmp_path: Path) -> None:
    """Ham named easy_ham_* and hard_ham_*, as the SpamAssassin corpus's: each arm gets the
    confusion matrix over every user, in the table and the JSON."""
    root = two_users(tmp_path / "corpus", sizes=(24, 16))
    lines = []
    for line in (root / "index").read_text().splitlines():
        label, name = line.split()
        if label == "ham":
            number = int(name.rsplit("ham", 1)[1])
            renamed = name.replace("/ham", "/easy_ham_" if number % 3 else "/hard_ham_")
            (root / name).rename(root / renamed)
            name = renamed
        lines.append(f"{label} {name}")
    (root / "index").write_text("\n".join(lines) + "\n")
    split = ("--classes-from-names", "easy_ham,hard_ham")
    result = run_sqlite("eval", "--corpus", str(root), "--per-user", *split, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    for arm in doc["arms"].values():
        block = arm["classes"]
        assert block["corpus"] == {"easy_ham": 13, "hard_ham": 7, "spam": 20}
        assert block["confusion"]["rows"] == ["easy_ham", "hard_ham", "spam"]
        assert sum(map(sum, block["confusion"]["counts"])) <= 40
    table = run_sqlite("eval", "--corpus", str(root), "--per-user", *split)
    assert table.exit_code == 0, table.output
    assert "fallback, every user:" in table.output and "macro-F1" in table.output
    plain = json.loads(
        run_sqlite(
            "eval", "--corpus", str(two_users(tmp_path / "p")), "--per-user", "--json"
        ).stdout
    )
    assert all("classes" not in arm for arm in plain["arms"].values())


def test_two_per_user_runs_compare_arm_by_arm(
    run_sqlite: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = two_users(tmp_path / "corpus", sizes=(24, 16))
    files = {name: tmp_path / f"{name}.json" for name in ("a", "b", "c", "plain")}
    changes = {
        "b": ("SPAMFILTER_USERS__FALLBACK_STRENGTH", "50"),  # only the users' fallback meets it
        "c": ("SPAMFILTER_DECISION__MIN_MESSAGES", "2"),  # every arm meets it
    }
    for name in ("a", "b", "c"):
        with monkeypatch.context() as env:
            if name in changes:
                env.setenv(*changes[name])
            out = str(files[name])
            done = run_sqlite("eval", "--corpus", str(root), "--per-user", "-q", "--out", out)
            assert done.exit_code == 0, done.output
    arms = {name: json.loads(files[name].read_text())["arms"] for name in ("a", "b", "c")}
    for arm in arms["a"].values():
        assert len(arm["messages"]["rows"]) == 40

    def compare(a: str, b: str) -> dict[str, Any]:
        result = run_sqlite(
            "eval", "--compare", str(files[a]), str(files[b]), "--bootstrap", "200", "--json"
        )
        assert result.exit_code == 0, result.output
        doc: dict[str, Any] = json.loads(result.stdout)
        assert doc["unit"] == "arm" and doc["mean_diff"] is None and "seeds" not in doc
        assert [entry["arm"] for entry in doc["arms"]] == list(ARMS)
        for entry in doc["arms"]:
            assert entry["n"] == 40
            for metric in ("roca_1_pct", "hm_pct", "sm_pct"):
                # each arm is paired with its own arm in both files
                for side, name in (("a", a), ("b", b)):
                    figure = arms[name][entry["arm"]]["metrics"][metric]
                    assert entry["metrics"][metric][side] == pytest.approx(figure)
        return doc

    doc = compare("a", "b")
    assert doc["differences"] == ["users.fallback_strength: 1000.0 -> 50.0"]
    for entry in doc["arms"][:2]:  # global and separate: the fallback strength cannot move
        for metric in entry["metrics"].values():
            assert (metric["diff"], metric["low"], metric["high"]) == (0, 0, 0)
    doc = compare("a", "c")
    assert doc["differences"] == ["decision.min_messages: 10 -> 2"]
    moved = [e["arm"] for e in doc["arms"] if e["metrics"]["sm_pct"]["diff"] != 0]
    assert moved  # the figures compared are each file's own, and they differ

    table = run_sqlite("eval", "--compare", str(files["a"]), str(files["b"]), "--bootstrap", "200")
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    assert any(line.startswith("arm      metric") for line in lines)
    assert sum(line.startswith(("global ", "separate ", "fallback ")) for line in lines) == 3
    assert not any(line.startswith("mean") for line in lines)
    decisive = run_sqlite("eval", "--compare", str(files["a"]), str(files["b"]), "--decisive", "2")
    assert decisive.exit_code == 0, decisive.output
    assert "A a.json, seed 1, arm fallback" in decisive.output

    done = run_sqlite("eval", "--corpus", str(root), "-q", "--out", str(files["plain"]))
    assert done.exit_code == 0, done.output
    mixed = run_sqlite("eval", "--compare", str(files["a"]), str(files["plain"]))
    assert mixed.exit_code != 0
    assert "holds the arms of 'eval --per-user'" in mixed.output
