"""The timing behind ``spamfilter bench speed``: bulk learn and classify, bogofilter side by
side, and processes timed from spawn to exit.

Nothing here knows about databases, settings or the service: the caller passes the functions
being timed (the real ``SpamFilter.learn`` and ``classify``, a subprocess runner, ...) and
may pass a clock, so the tests time fakes. Times are wall-clock seconds over a whole batch;
per-message figures divide the batch's time by its size, as bogofilter's bulk modes can only
be timed that way.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from app.errors import InvalidMessage, MessageTooLarge
from app.evaluation.corpus import CorpusItem

if TYPE_CHECKING:
    from app.service import Analysed

Clock = Callable[[], float]
LearnMany = Callable[[Sequence[tuple["Analysed", str]]], Iterable[list[str]]]
"""Learns messages, each with a label ("spam" | "ham"), in one batch; yields their
outcomes' names, in order, a few or all at a time."""
Classify = Callable[[bytes], str]
"""Classifies a raw message; returns the verdict ("spam" | "ham" | "unsure")."""
Read = Callable[[Path], bytes]
Prepare = Callable[[Path], "Analysed"]
"""Reads a message to learn and gives its analysis (read ahead, or read there and then)."""
Runner = Callable[[Sequence[str], bytes], tuple[int, bytes]]
"""Runs a program with bytes on its stdin; returns (exit status, stdout)."""
Spawn = Callable[[], int]
"""Starts one process, waits for it to exit; returns its exit status."""

# What one message may make the service raise without stopping the run (as bulk learn does).
MESSAGE_ERRORS = (OSError, InvalidMessage, MessageTooLarge)
BOGOFILTER_VERDICTS = {"S": "spam", "H": "ham", "U": "unsure"}


@dataclass(frozen=True, slots=True)
class Split:
    """The first half of the order is learned, the second half classified."""

    train: list[CorpusItem]
    test: list[CorpusItem]


def split_halves(items: Sequence[CorpusItem]) -> Split:
    """The first ``int(n * 0.5)`` items to learn and the rest to classify, in their order
    (the peers harness's ``split`` protocol)."""
    middle = int(len(items) * 0.5)
    return Split(list(items[:middle]), list(items[middle:]))


def typical(items: Sequence[CorpusItem]) -> CorpusItem:
    """The item of median file size (the first of two middles): the message timed alone."""
    if not items:
        raise ValueError("no messages")
    ordered = sorted(items, key=lambda item: (item.path.stat().st_size, str(item.path)))
    return ordered[(len(ordered) - 1) // 2]


@dataclass(frozen=True, slots=True)
class Batch:
    """One timed batch: ``n`` messages in ``seconds``, the outcomes (or verdicts per gold
    label, ``"spam:unsure"``) and how many messages failed."""

    n: int
    seconds: float
    outcomes: dict[str, int] = field(default_factory=dict)
    failures: int = 0

    @property
    def ms_per_message(self) -> float:
        """Wall milliseconds of the batch per message (NaN for an empty batch)."""
        return 1000 * self.seconds / self.n if self.n else float("nan")

    @property
    def per_second(self) -> float:
        """Messages per second of wall time (NaN for an empty or untimed batch)."""
        return self.n / self.seconds if self.n and self.seconds > 0 else float("nan")


@dataclass(frozen=True, slots=True)
class Bulk:
    """Learning the first half, then classifying the second, and the model's size (bytes)."""

    learn: Batch
    classify: Batch
    db_bytes: int | None = None
    # The classified messages scored again with no cache of counts (the plain path): how
    # many, and how many of their log-odds differed at all from the timed run's.
    checked: int = 0
    differing: int = 0
    # The classified messages read again (parsed, tokenized, their ids) and not judged: the
    # part of a classify that is the same whatever the model (None: not measured).
    read: Batch | None = None


def time_learn(
    items: Sequence[CorpusItem],
    learn: LearnMany,
    prepare: Prepare,
    batch: int,
    clock: Clock = time.perf_counter,
) -> Batch:
    """Read and learn every item with its gold label, ``batch`` messages at a time, as
    ``spamfilter learn`` does; a message that cannot be read or parsed is counted in
    ``failures`` and skipped."""
    outcomes: Counter[str] = Counter()
    failures = 0
    pending: list[tuple[Analysed, str]] = []
    start = clock()
    for item in items:
        try:
            pending.append((prepare(item.path), item.label))
        except MESSAGE_ERRORS:
            failures += 1
            continue
        if len(pending) >= batch:
            outcomes.update(chain.from_iterable(learn(pending)))
            pending = []
    if pending:
        outcomes.update(chain.from_iterable(learn(pending)))
    return Batch(len(items), clock() - start, dict(sorted(outcomes.items())), failures)


def time_classify(
    items: Sequence[CorpusItem],
    classify: Classify,
    read: Read = Path.read_bytes,
    clock: Clock = time.perf_counter,
) -> Batch:
    """Read and classify every item; outcomes count ``gold:verdict`` pairs."""
    outcomes: Counter[str] = Counter()
    failures = 0
    start = clock()
    for item in items:
        try:
            outcomes[f"{item.label}:{classify(read(item.path))}"] += 1
        except MESSAGE_ERRORS:
            failures += 1
    return Batch(len(items), clock() - start, dict(sorted(outcomes.items())), failures)


def warm(items: Sequence[CorpusItem], read: Read = Path.read_bytes) -> int:
    """Read every file once, so the first timed reader does not pay for a cold page cache
    that the next one (bogofilter) would not; returns the bytes read."""
    total = 0
    for item in items:
        with contextlib.suppress(OSError):
            total += len(read(item.path))
    return total


@dataclass(frozen=True, slots=True)
class Spawns:
    """``runs`` wall times (seconds) of one command, spawn to exit, and how many exited with
    a status other than the ones it may give."""

    command: str
    seconds: list[float]
    failures: int = 0

    @property
    def best_ms(self) -> float:
        """The fastest run, in milliseconds."""
        return 1000 * min(self.seconds) if self.seconds else float("nan")

    @property
    def median_ms(self) -> float:
        """The median run, in milliseconds."""
        return 1000 * statistics.median(self.seconds) if self.seconds else float("nan")


def time_spawns(
    command: str,
    spawn: Spawn,
    runs: int,
    ok_codes: Sequence[int] = (0,),
    clock: Clock = time.perf_counter,
) -> Spawns:
    """Run ``spawn`` ``runs`` times, each timed from start to exit."""
    seconds: list[float] = []
    failures = 0
    for _ in range(runs):
        start = clock()
        code = spawn()
        seconds.append(clock() - start)
        failures += code not in ok_codes
    return Spawns(command, seconds, failures)


@dataclass(frozen=True, slots=True)
class Bogofilter:
    """bogofilter's bulk figures on the same split: register, then classify, and the size of
    its wordlist (bytes)."""

    version: str
    learn: Batch
    classify: Batch
    db_bytes: int | None


def bogofilter_command(binary: str, wordlists: Path, *flags: str) -> list[str]:
    """``bogofilter -C -d DIR FLAGS``: ``-C`` reads no configuration file, so compiled-in
    defaults apply whatever /etc/bogofilter.cf says."""
    return [binary, "-C", "-d", str(wordlists), *flags]


def time_bogofilter(
    split: Split,
    wordlists: Path,
    run: Runner,
    binary: str = "bogofilter",
    clock: Clock = time.perf_counter,
) -> Bogofilter:
    """Register the first half in bulk (``-s -b`` for spam, ``-n -b`` for ham, file names
    on stdin), then classify the second half (``-b -T``), each batch timed as a whole."""
    code, out = run([binary, "-V"], b"")
    version = out.decode("utf-8", "replace").strip().splitlines()[0] if out else "unknown"
    start = clock()
    failures = 0
    for label, flag in (("spam", "-s"), ("ham", "-n")):
        paths = [item.path for item in split.train if item.label == label]
        if paths:
            code, _ = run(bogofilter_command(binary, wordlists, flag, "-b"), _names(paths))
            failures += len(paths) if code != 0 else 0
    learned = Batch(len(split.train), clock() - start, failures=failures)
    start = clock()
    command = bogofilter_command(binary, wordlists, "-b", "-T")
    code, out = run(command, _names(item.path for item in split.test))
    seconds = clock() - start
    outcomes, failures = _bogofilter_verdicts(split.test, out if code in (0, 1, 2) else b"")
    classified = Batch(len(split.test), seconds, outcomes, failures)
    return Bogofilter(version, learned, classified, _size(wordlists / "wordlist.db"))


def time_files(
    items: Sequence[CorpusItem],
    run: Runner,
    command: Sequence[str],
    clock: Clock = time.perf_counter,
) -> Batch:
    """``command`` (``spamfilter classify -q``) given every item's file in one new process,
    timed from spawn to exit as bogofilter's bulk classify is (start-up, reading, judging and
    printing); a file with no verdict line of its own is a failure."""
    start = clock()
    code, out = run([*command, *(str(item.path) for item in items)], b"")
    seconds = clock() - start
    verdicts: dict[str, str] = {}
    # ``verdict log-odds P(spam) path``, the path last and whole (it may hold spaces, and
    # characters ``splitlines`` would break a line at). A file read as an mbox of several
    # messages prints ``path#1``, ``path#2``...: not its own line, so a failure here.
    text = out.decode("utf-8", "surrogateescape") if code in (0, 1) else ""
    for line in text.split("\n"):
        fields = line.split(None, 3)
        if len(fields) == 4:
            verdicts[fields[3]] = fields[0]
    return Batch(len(items), seconds, *_outcomes(items, verdicts))


def _names(paths: Iterable[Path]) -> bytes:
    """File names one a line, as ``bogofilter -b`` reads them on stdin."""
    return "".join(f"{path}\n" for path in paths).encode("utf-8", "surrogateescape")


def _bogofilter_verdicts(items: Sequence[CorpusItem], out: bytes) -> tuple[dict[str, int], int]:
    """``gold:verdict`` counts from ``bogofilter -b -T`` lines (``PATH S 0.99``); a message
    with no line of its own is a failure."""
    verdicts: dict[str, str] = {}
    for line in out.decode("utf-8", "surrogateescape").splitlines():
        name, letter, _score = ([*line.rsplit(" ", 2), "", ""])[:3]
        verdicts[name] = BOGOFILTER_VERDICTS.get(letter, "unknown")
    return _outcomes(items, verdicts)


def _outcomes(
    items: Sequence[CorpusItem], verdicts: Mapping[str, str]
) -> tuple[dict[str, int], int]:
    """``gold:verdict`` counts of ``items`` by ``verdicts`` (file name -> verdict), and the
    failures: items without a verdict."""
    outcomes: Counter[str] = Counter()
    failures = 0
    for item in items:
        verdict = verdicts.get(str(item.path))
        if verdict is None:
            failures += 1
        else:
            outcomes[f"{item.label}:{verdict}"] += 1
    return dict(sorted(outcomes.items())), failures


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None
