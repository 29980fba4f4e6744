"""Bulk learn, classify and forget keep going past a message that fails, whatever it raises,
and stop at once when the run itself cannot go on (the database is down)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import pytest

import app.cli.context
import app.cli.messages
from app.cli.bulk import FAILED, apply, load, summary
from app.cli.mailboxes import Found, Source, Unreadable
from app.cli.progress import Bar
from app.errors import StorageUnavailable
from app.service import Analysed, SpamFilter
from app.settings.schema import Settings
from benchmarks.hostile import shape
from tests.cli.conftest import Run
from tests.cli.mailfiles import messages, plain
from tests.environment import without_settings

Stats = Callable[[], dict[str, Any]]
POISON = b"poison"  # a message holding this word makes the patched service raise
ERROR_LINE = re.compile(r"error: \S+: \S+")


def _recurse(depth: int = 0) -> NoReturn:
    _recurse(depth + 1)


def poisoned(raw: bytes) -> None:
    """Raise as a deeply nested message once did (a real RecursionError), or MemoryError."""
    if POISON + b"-memory" in raw:
        raise MemoryError
    if POISON in raw:
        _recurse()


@pytest.fixture
def poison(monkeypatch: pytest.MonkeyPatch) -> None:
    """analyse, learn, classify and forget of the CLI's service raise for a poisoned
    message."""
    real_build = app.cli.context.build

    def build(settings: Settings) -> SpamFilter:
        service = real_build(settings)
        for method in ("analyse", "learn", "classify", "forget"):
            monkeypatch.setattr(service, method, _guarded(getattr(service, method)))
        return service

    monkeypatch.setattr(app.cli.messages, "build", build)


def _guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    def call(raw: bytes, *args: Any, **kwargs: Any) -> Any:
        poisoned(raw)
        return method(raw, *args, **kwargs)

    return call


def mixed_folder(root: Path) -> Path:
    """Two good ham messages, a file that is not a message, and two poisoned messages."""
    root.mkdir()
    good = messages("ham", 2)
    (root / "a-good.eml").write_bytes(good[0])
    (root / "b-not-mail").write_bytes(b"\x00\x01 not a message\n")
    (root / "c-recursion.eml").write_bytes(plain("poison pill", "deep"))
    (root / "d-memory.eml").write_bytes(plain("poison-memory pill", "big"))
    (root / "e-good.eml").write_bytes(good[1])
    return root


def _learned(stats: Stats) -> dict[str, int]:
    return {label: counts["messages"] for label, counts in stats()["labels"].items()}


def _error_lines(stderr: str) -> dict[str, str]:
    """``{file name: problem}`` of the ``error: PATH: problem`` lines; every line is one."""
    lines = stderr.splitlines()
    assert all(ERROR_LINE.match(line) for line in lines), stderr
    return {Path(line.split(": ")[1]).name: line.split(": ", 2)[2] for line in lines}


@pytest.mark.usefixtures("poison")
def test_learn_skips_what_fails_and_learns_the_rest(run: Run, stats: Stats, tmp_path: Path) -> None:
    folder = mixed_folder(tmp_path / "mixed")
    result = run("learn", "--label", "ham", str(folder))
    assert result.exit_code == 1
    assert result.stdout.startswith(
        "learned 2, relabelled 0, unchanged 0, skipped 0, failed 3: 5 messages in "
    )
    problems = _error_lines(result.stderr)
    assert set(problems) == {"b-not-mail", "c-recursion.eml", "d-memory.eml"}
    assert problems["b-not-mail"].startswith("invalid_message: ")
    assert problems["c-recursion.eml"].startswith("RecursionError: maximum recursion depth")
    assert problems["d-memory.eml"] == "MemoryError"
    assert _learned(stats) == {"ham": 2, "spam": 0}
    again = run("learn", "--label", "ham", str(folder))
    assert again.stdout.startswith("learned 0, relabelled 0, unchanged 2, skipped 0, failed 3")


@pytest.mark.usefixtures("poison")
def test_classify_prints_the_verdicts_and_then_the_counts(run: Run, tmp_path: Path) -> None:
    folder = mixed_folder(tmp_path / "mixed")
    result = run("classify", str(folder))
    assert result.exit_code == 1
    assert [line.split()[-1] for line in result.stdout.splitlines()] == [
        str(folder / "a-good.eml"),
        str(folder / "e-good.eml"),
    ]
    *errors, counts = result.stderr.splitlines()
    assert set(_error_lines("\n".join(errors))) == {"b-not-mail", "c-recursion.eml", "d-memory.eml"}
    assert counts.startswith("classified 2, failed 3: 5 messages in ")
    as_json = run("classify", "--json", str(folder / "c-recursion.eml"))
    assert as_json.exit_code == 1
    (doc,) = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert doc["error"].startswith("RecursionError: ")


def test_classify_says_nothing_on_stderr_when_all_went_well(run: Run, tmp_path: Path) -> None:
    (tmp_path / "m.eml").write_bytes(plain("hello", "there"))
    result = run("classify", str(tmp_path / "m.eml"), str(tmp_path / "m.eml"))
    assert (result.exit_code, result.stderr) == (0, "")


@pytest.mark.usefixtures("poison")
def test_forget_goes_on_too(run: Run, stats: Stats, tmp_path: Path) -> None:
    folder = mixed_folder(tmp_path / "mixed")
    assert run("learn", "--label", "ham", str(folder / "a-good.eml")).exit_code == 0
    result = run("forget", str(folder))
    assert result.exit_code == 1
    assert result.stdout.startswith("forgotten 1, unknown 1, failed 3: 5 messages in ")
    assert len(result.stderr.splitlines()) == 3
    assert _learned(stats) == {"ham": 0, "spam": 0}


@pytest.mark.usefixtures("poison")
@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (plain("poison pill", "deep"), "RecursionError: maximum recursion depth exceeded"),
        (plain("poison-memory pill", "big"), "MemoryError"),
        (b"no header here\n", "invalid_message: input does not start with an RFC 822 header"),
    ],
    ids=["recursion", "memory", "not-mail"],
)
def test_one_message_on_stdin_fails_in_one_line(run: Run, raw: bytes, problem: str) -> None:
    """Dovecot's learn-on-move pipes each moved message to ``learn --label LABEL -``."""
    result = run("learn", "--quiet", "--label", "spam", "-", input=raw)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: -: {problem}")
    assert len(result.stderr.splitlines()) == 1
    assert "failed 1: 1 messages" in result.stdout


Batch = Sequence[tuple[Analysed, str]]
LearnMany = Callable[[Batch, "str | None"], Any]


def wrap_learn_many(
    monkeypatch: pytest.MonkeyPatch, wrapper: Callable[[Batch, str | None, LearnMany], Any]
) -> None:
    """The CLI's service calls ``wrapper(batch, user, real learn_many)`` for learn_many."""
    real_build = app.cli.context.build

    def build(settings: Settings) -> SpamFilter:
        service = real_build(settings)
        learn_many = service.learn_many
        monkeypatch.setattr(
            service, "learn_many", lambda batch, user: wrapper(batch, user, learn_many)
        )
        return service

    monkeypatch.setattr(app.cli.messages, "build", build)


def test_the_database_going_down_stops_the_run_at_once(
    run: Run, stats: Stats, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Learn works in batches (two here): the batch under way when the database fails is
    neither learned nor counted, and no batch after it is tried."""
    folder = tmp_path / "five"
    folder.mkdir()
    for number, raw in enumerate(messages("spam", 5)):
        (folder / f"{number}.eml").write_bytes(raw)
    calls: list[int] = []

    def failing(batch: Batch, user: str | None, learn_many: LearnMany) -> Any:
        calls.append(len(batch))
        if len(calls) == 2:
            raise StorageUnavailable("database is down")
        return learn_many(batch, user)

    wrap_learn_many(monkeypatch, failing)
    monkeypatch.setattr(SpamFilter, "learn_batch", 2)
    result = run("learn", "--label", "spam", str(folder))
    assert result.exit_code == 75
    assert calls == [2, 2]
    assert result.stderr == "spamfilter: storage_unavailable: database is down\n"
    assert re.fullmatch(
        r"learned 2, relabelled 0, unchanged 0, skipped 0, failed 0: "
        r"2 of 5 messages in [\d.]+ s \([\d,]+ msg/min\), stopped\n",
        result.stdout,
    )
    assert _learned(stats) == {"ham": 0, "spam": 2}


def batch_folder(folder: Path) -> Path:
    """Three good ham messages with one whose subject says poison second in file order
    (``1a-poison.eml``): one batch, for a patched ``learn_many`` to fail on."""
    folder.mkdir()
    for number, raw in enumerate(messages("ham", 3)):
        (folder / f"{number}-good.eml").write_bytes(raw)
    (folder / "1a-poison.eml").write_bytes(plain("poison pill", "deep"))
    return folder


def holds_poison(batch: Batch) -> bool:
    return any("poison" in (analysed.subject or "") for analysed, _ in batch)


def test_a_batch_that_fails_is_learned_one_at_a_time_so_only_the_culprit_fails(
    run: Run, stats: Stats, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message that makes learning itself raise (not its reading) fails alone: the batch
    it was in is rolled back and its messages learned again one by one."""
    folder = batch_folder(tmp_path / "batch")
    calls: list[int] = []

    def poisoned_batch(batch: Batch, user: str | None, learn_many: LearnMany) -> Any:
        calls.append(len(batch))
        if holds_poison(batch):
            raise RuntimeError("a bug met in the batch")  # as its rolled-back transaction
        return learn_many(batch, user)

    wrap_learn_many(monkeypatch, poisoned_batch)
    result = run("learn", "--label", "ham", str(folder))
    assert result.exit_code == 1
    assert calls == [4, 1, 1, 1, 1]
    assert _error_lines(result.stderr) == {"1a-poison.eml": "RuntimeError: a bug met in the batch"}
    assert result.stdout.startswith("learned 3, relabelled 0, unchanged 0, skipped 0, failed 1")
    assert _learned(stats) == {"ham": 3, "spam": 0}


def test_hostile_shapes_in_a_folder_never_stop_it(run: Run, tmp_path: Path) -> None:
    folder = tmp_path / "hostile"
    folder.mkdir()
    names = ("nested-multipart", "nested-rfc822", "nested-comments", "many-parts")
    for name in names:
        (folder / name).write_bytes(shape(name).build(64 * 1024))
    (folder / "zz-good.eml").write_bytes(messages("spam", 1)[0])
    result = run("learn", "--label", "spam", str(folder))
    assert result.exit_code in (0, 1)
    counts = re.match(r"learned (\d+), .* failed (\d+): 5 messages", result.stdout)
    assert counts is not None, result.stdout
    assert int(counts[1]) >= 1
    assert len(_error_lines(result.stderr)) == int(counts[2])


def _source(name: str, read: Callable[[], bytes]) -> Source:
    return Source(name, read)


def test_apply_counts_read_failures_and_lets_run_errors_through() -> None:
    def out_of_memory() -> bytes:
        raise MemoryError

    def work(_name: str, raw: bytes) -> str:
        if raw == b"down":
            raise StorageUnavailable("gone")
        if raw == b"pipe":
            raise BrokenPipeError(32, "Broken pipe")
        return "learned"

    counts: Counter[str] = Counter()
    found: list[Found] = [
        _source("ok", lambda: b"ok"),
        _source("huge", out_of_memory),
        Unreadable("locked", "Permission denied"),
        _source("down", lambda: b"down"),
        _source("never", lambda: b"ok"),
    ]
    with pytest.raises(StorageUnavailable):
        apply(load(found), Bar(None, len(found), "x"), work, counts)
    assert counts == Counter({"learned": 1, FAILED: 2})
    with pytest.raises(BrokenPipeError):
        apply(load([_source("pipe", lambda: b"pipe")]), Bar(None, 1, "x"), work, Counter())


def test_the_learn_program_fails_in_one_line_as_a_process(tmp_path: Path) -> None:
    """The real ``spamfilter learn --label spam -`` process, a RecursionError in the service."""
    script = textwrap.dedent(
        """
        import sys
        import app.service

        def recurse(depth=0):
            return recurse(depth + 1)

        app.service.SpamFilter.learn_many = lambda self, messages, user=None: recurse()
        from app.cli import main
        sys.argv[0] = "spamfilter"
        main()
        """
    )
    env = without_settings({"SPAMFILTER_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"})
    result = subprocess.run(
        [sys.executable, "-c", script, "learn", "--quiet", "--label", "spam", "-"],
        input=plain("moved to Junk", "hello"),
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 1
    assert b"Traceback" not in result.stderr
    (line,) = result.stderr.decode().splitlines()
    assert line.startswith("error: -: RecursionError: maximum recursion depth exceeded")


def test_what_a_batch_learned_before_it_failed_is_counted_once(
    run: Run, stats: Stats, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """learn_many may commit the first messages of a batch in a transaction of their own
    (expiry fell due); those are counted, and when the next transaction fails only what was
    not yet learned is tried one at a time."""
    folder = batch_folder(tmp_path / "partly")
    calls: list[int] = []

    def first_only(batch: Batch, user: str | None, learn_many: LearnMany) -> Any:
        calls.append(len(batch))
        if holds_poison(batch):
            if len(calls) > 1:
                raise RuntimeError("a bug met in the batch")
            return partly(batch, user, learn_many)
        return learn_many(batch, user)

    def partly(batch: Batch, user: str | None, learn_many: LearnMany) -> Iterator[Any]:
        yield from learn_many(batch[:1], user)  # as when expiry falls due after the first
        raise RuntimeError("a bug met in the batch")  # in the next transaction

    wrap_learn_many(monkeypatch, first_only)
    result = run("learn", "--label", "ham", str(folder))
    assert calls == [4, 1, 1, 1]  # "0-good" learned; "1-good", poison, "2-good" alone
    assert _error_lines(result.stderr) == {"1a-poison.eml": "RuntimeError: a bug met in the batch"}
    assert result.stdout.startswith("learned 3, relabelled 0, unchanged 0, skipped 0, failed 1")
    assert _learned(stats) == {"ham": 3, "spam": 0}


def test_failures_are_reported_in_the_order_found(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One message fails in learning (its batch, then itself alone), the next cannot be
    read: the lines come in file order, the batch being done before the next is reported."""
    folder = tmp_path / "order"
    folder.mkdir()
    (folder / "a-poison.eml").write_bytes(plain("poison pill", "deep"))
    (folder / "b-not-mail").write_bytes(b"\x00\x01 not a message\n")
    (folder / "c-good.eml").write_bytes(messages("ham", 1)[0])

    def poisoned_batch(batch: Batch, user: str | None, learn_many: LearnMany) -> Any:
        if any("poison" in (analysed.subject or "") for analysed, _ in batch):
            raise RuntimeError("a bug met in the batch")
        return learn_many(batch, user)

    wrap_learn_many(monkeypatch, poisoned_batch)
    result = run("learn", "--label", "ham", str(folder))
    names = [Path(line.split(": ")[1]).name for line in result.stderr.splitlines()]
    assert names == ["a-poison.eml", "b-not-mail"]
    assert result.stdout.startswith("learned 1, relabelled 0, unchanged 0, skipped 0, failed 2")


def test_the_counts_line() -> None:
    counts = Counter({"learned": 3, FAILED: 1})
    assert summary(counts, ("learned", "skipped"), 2.0) == (
        "learned 3, skipped 0, failed 1: 4 messages in 2.0 s (120 msg/min)"
    )
    assert summary(counts, ("learned",), 2.0, total=10).endswith(
        ": 4 of 10 messages in 2.0 s (120 msg/min), stopped"
    )
