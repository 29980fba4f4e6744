"""--user on learn, classify and forget; stats --user; user list and user delete.

Every test runs on SQLite and PostgreSQL (the ``run`` fixture's ``database_url``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.api.app import create_app
from app.settings.schema import Settings
from tests.cli.conftest import Run
from tests.cli.mailfiles import messages, write_folder

ALICE = "Alice@Example.org"


def learn(run: Run, tmp_path: Path, user: str, n: int = 6) -> None:
    """``n`` ham and ``n`` spam learned for ``user``."""
    for label in ("ham", "spam"):
        folder = write_folder(tmp_path, f"{user}-{label}", messages(label, n))
        result = run("learn", "--label", label, "--user", user, "--quiet", str(folder))
        assert result.exit_code == 0, result.output


def stats_json(run: Run, *args: str) -> dict[str, Any]:
    result = run("stats", "--json", *args)
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def learned(doc: dict[str, Any]) -> dict[str, int]:
    return {label: counts["messages"] for label, counts in doc["labels"].items()}


def test_learn_classify_and_forget_use_the_users_model(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Alice's model alone: the site-wide one learns nothing and is not blended in.
    monkeypatch.setenv("SPAMFILTER_USERS__TRAIN_SITE", "false")
    monkeypatch.setenv("SPAMFILTER_USERS__FALLBACK_STRENGTH", "0")
    monkeypatch.setenv("SPAMFILTER_DECISION__MIN_MESSAGES", "5")
    learn(run, tmp_path, ALICE)
    assert learned(stats_json(run, "--user", ALICE)) == {"ham": 6, "spam": 6}
    assert learned(stats_json(run)) == {"ham": 0, "spam": 0}

    probe = tmp_path / "probe.eml"
    probe.write_bytes(messages("spam", 1, start=40)[0])
    mine = json.loads(run("classify", "--json", "--user", ALICE, str(probe)).stdout)
    site = json.loads(run("classify", "--json", str(probe)).stdout)
    assert mine["reason"] != "not_enough_training" and mine["log_odds"] > 0
    assert (site["verdict"], site["reason"]) == ("unsure", "not_enough_training")

    spam = tmp_path / f"{ALICE}-spam"
    result = run("forget", "--user", ALICE, "--quiet", str(spam))
    assert result.stdout.startswith("forgotten 6, unknown 0, failed 0"), result.output
    assert learned(stats_json(run, "--user", ALICE)) == {"ham": 6, "spam": 0}


def test_stats_json_is_the_http_reply(run: Run, tmp_path: Path, cli_database: str) -> None:
    learn(run, tmp_path, ALICE, n=2)
    settings = Settings(_env_file=None, database_url=cli_database)
    with TestClient(create_app(settings)) as client:
        for params in ({"user": ALICE}, {}):
            args = ("--user", params["user"]) if params else ()
            assert stats_json(run, *args) == client.get("/v1/stats", params=params).json()
    text = run("stats", "--user", ALICE).stdout
    assert "user        alice@example.org\n" in text
    assert "scope       global/user:alice@example.org\n" in text
    assert "user " not in run("stats").stdout


@pytest.mark.parametrize(
    "command",
    [
        ("learn", "--label", "spam", "--user", "a/b", "-"),
        ("classify", "--user", "a/b", "-"),
        ("forget", "--user", "a/b", "-"),
        ("stats", "--user", "a/b"),
        ("user", "delete", "--yes", "a/b"),
    ],
)
def test_a_name_that_cannot_be_a_user_exits_64(run: Run, command: tuple[str, ...]) -> None:
    result = run(*command, input=messages("spam", 1)[0])
    assert result.exit_code == 64, result.output
    assert result.stderr.startswith("spamfilter: invalid_user: user name 'a/b' holds '/'")
    assert result.stdout == ""


def test_user_list(run: Run, tmp_path: Path) -> None:
    assert json.loads(run("user", "list", "--json").stdout) == {"users": []}
    empty = run("user", "list")
    assert (empty.exit_code, empty.stdout) == (0, "")
    assert "no user has a model of their own" in empty.stderr
    learn(run, tmp_path, ALICE, n=3)
    learn(run, tmp_path, "bob", n=1)
    doc = json.loads(run("user", "list", "--json").stdout)
    vocabulary = stats_json(run, "--user", "bob")["vocabulary"]
    assert [u["user"] for u in doc["users"]] == ["alice@example.org", "bob"]
    assert doc["users"][1] == {
        "user": "bob",
        "scope": "global/user:bob",
        "messages": {"ham": 1, "spam": 1},
        "vocabulary": vocabulary,
    }
    lines = run("user", "list").stdout.splitlines()
    assert lines[0].split() == ["user", "ham", "spam", "tokens"]
    assert lines[2].split() == ["bob", "1", "1", f"{vocabulary:,}"]


def test_user_delete(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    learn(run, tmp_path, ALICE, n=3)
    learn(run, tmp_path, "bob", n=1)
    site = stats_json(run)
    vocabulary = stats_json(run, "--user", ALICE)["vocabulary"]

    refused = run("user", "delete", ALICE)  # no terminal to ask on, no --yes
    assert refused.exit_code == 2
    assert "--yes" in refused.stderr
    monkeypatch.setattr("app.cli.users._on_terminal", lambda: True)
    declined = run("user", "delete", ALICE, input=b"n\n")
    assert declined.exit_code == 1
    assert "Delete the model of alice@example.org (6 learned messages" in declined.stderr
    assert learned(stats_json(run, "--user", ALICE)) == {"ham": 3, "spam": 3}

    done = run("user", "delete", ALICE, input=b"y\n")
    assert done.exit_code == 0, done.output
    assert done.stdout == (
        f"deleted the model of alice@example.org: 6 learned messages, {vocabulary:,} tokens\n"
    )
    assert stats_json(run) == site  # the site-wide model is untouched
    gone = stats_json(run, "--user", ALICE)
    assert (learned(gone), gone["vocabulary"]) == ({"ham": 0, "spam": 0}, 0)
    users = json.loads(run("user", "list", "--json").stdout)["users"]
    assert [u["user"] for u in users] == ["bob"]

    bob = stats_json(run, "--user", "bob")["vocabulary"]
    as_json = run("user", "delete", "--yes", "--json", "BOB")
    assert json.loads(as_json.stdout) == {
        "user": "bob",
        "scope": "global/user:bob",
        "messages": 2,
        "tokens": bob,
    }

    again = run("user", "delete", "--yes", ALICE)
    assert again.exit_code == 1
    assert again.stderr == "spamfilter: unknown_user: user 'alice@example.org' has no model\n"


def test_with_train_site_off_learn_for_a_user_leaves_the_site_model_alone(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPAMFILTER_USERS__TRAIN_SITE", "false")
    learn(run, tmp_path, ALICE, 3)
    assert learned(stats_json(run, "--user", ALICE)) == {"ham": 3, "spam": 3}
    assert learned(stats_json(run)) == {"ham": 0, "spam": 0}
