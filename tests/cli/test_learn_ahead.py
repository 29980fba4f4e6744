"""``learn --jobs`` and ``classify --jobs``: messages read in other processes while this one
learns or classifies change nothing but the time: the same counts, outcomes, verdicts and
failures as reading them here."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from app.cli.ahead import processes_for
from app.service import read_ahead as read_ahead_module
from app.service.read_ahead import AHEAD_FROM, K
from app.service.results import Analysed, Form
from app.settings.schema import Settings
from app.storage.tables import learned_message, model_scope, token_count
from tests.cli.conftest import Run
from tests.cli.mailfiles import messages, write_folder
from tests.storage.snapshot import snapshot

MODEL_TABLES = (model_scope.name, token_count.name, learned_message.name, "ham_score")


def model_of(url: str) -> dict[str, object]:
    """The learned model's tables (the console's activity records timings: left out)."""
    whole = snapshot(url, timestamps=False)
    return {name: whole[name] for name in MODEL_TABLES}


def mixed(root: Path) -> Path:
    """Ham and spam interleaved, a file that is not a message, one over the size limit, and
    a message twice: thick training's decisions depend on what came before each."""
    ham, spam = messages("ham", 40, seed=3), messages("spam", 40, seed=3)
    raws = [m for pair in zip(ham, spam, strict=True) for m in pair]
    raws[10:10] = [b"\x00\x01 not a message\n"]
    raws[30:30] = [b"Subject: big\n\n" + b"word " * 40_000]
    raws.append(raws[5])
    return write_folder(root, "mixed", raws)


@pytest.mark.parametrize("label", ["spam", "ham"])
def test_reading_ahead_learns_exactly_what_reading_here_does(
    run: Run,
    cli_database: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    database_factory: object,
    label: str,
) -> None:
    monkeypatch.setenv("SPAMFILTER_TRAINING_MODE", "thick")
    monkeypatch.setenv("SPAMFILTER_DECISION__MIN_MESSAGES", "2")
    monkeypatch.setenv("SPAMFILTER_SERVER__MAX_MESSAGE_BYTES", "100000")
    folder = mixed(tmp_path)
    seed_spam = write_folder(tmp_path, "seed", messages("spam", 5, seed=9))
    results = []
    for jobs in ("0", "2"):
        url = database_factory()  # type: ignore[operator]
        monkeypatch.setenv("SPAMFILTER_DATABASE_URL", url)
        assert run("learn", "--label", "spam", "-q", str(seed_spam)).exit_code == 0
        result = run("learn", "--label", label, "--jobs", jobs, "-q", str(folder))
        counts = re.sub(r" in [0-9.]+ s \([0-9,]+ msg/min\)", "", result.stdout)
        results.append((result.exit_code, counts, _errors(result.stderr), model_of(url)))
    alone, ahead = results
    assert alone == ahead
    assert alone[0] == 1  # two messages failed, the others were learned
    assert [Path(line.split(": ")[1]).name for line in alone[2]] == ["010.eml", "030.eml"]
    assert "failed 2" in alone[1] and "unchanged 1" in alone[1]


def test_reading_ahead_classifies_exactly_what_reading_here_does(
    run: Run, cli_database: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SPAMFILTER_DECISION__MIN_MESSAGES", "2")
    monkeypatch.setenv("SPAMFILTER_SERVER__MAX_MESSAGE_BYTES", "100000")
    for label in ("ham", "spam"):
        seed = write_folder(tmp_path, f"seed-{label}", messages(label, 8, seed=9))
        assert run("learn", "--label", label, "-q", str(seed)).exit_code == 0
    folder = mixed(tmp_path)
    asked: list[tuple[int, bool]] = []
    read_there: list[object] = []
    real_read_ahead = read_ahead_module.read_ahead

    def spy(
        settings: Settings,
        entries: Iterable[tuple[K, bytes | None]],
        processes: int,
        legacy: bool = False,
        form: Form = "rfc822",
    ) -> Iterator[tuple[K, Analysed | None]]:
        asked.append((processes, legacy))
        for key, analysed in real_read_ahead(settings, entries, processes, legacy, form):
            if analysed is not None:
                read_there.append(key)
            yield key, analysed

    monkeypatch.setattr(read_ahead_module, "read_ahead", spy)
    results = []
    for jobs in ("0", "2"):
        for form in ([], ["--json"]):
            result = run("classify", "--jobs", jobs, *form, "-q", str(folder))
            counts = re.sub(r" in [0-9.]+ s \([0-9,]+ msg/min\)", "", result.stderr)
            results.append((result.exit_code, result.stdout, counts))
    alone, alone_json, read_ahead, read_ahead_json = results
    assert (alone, alone_json) == (read_ahead, read_ahead_json)
    verdicts = alone[1].splitlines()
    assert alone[0] == 1 and len(verdicts) == 81  # the two that fail get no verdict line
    # With --jobs 2 the other processes read every message but those two, as classify reads.
    assert asked == [(2, False), (2, False)] and len(read_there) == 2 * 81
    assert {line.split()[0] for line in verdicts} == {"ham", "spam"}
    assert [Path(line.split(": ")[1]).name for line in _errors(alone[2])] == ["010.eml", "030.eml"]


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if re.match(r"error: ", line)]


def test_a_run_reads_ahead_only_when_it_pays(monkeypatch: pytest.MonkeyPatch) -> None:
    assert processes_for(3, 1) == 3
    assert processes_for(0, 10**6) == 0
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0, 1})
    assert processes_for(None, AHEAD_FROM) == 1
    assert processes_for(None, AHEAD_FROM - 1) == 0  # a Dovecot learn-on-move: one
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0})
    assert processes_for(None, 10**6) == 0
