"""``spamfilter bench classes``: what declaring more classes costs a classification.

The corpus's ham and spam are spread over the not-junk and the junk classes of a site that
declares N classes (ham and spam, then ``c2 .. c{N-1}``, every other one junk), each message
by a stable hash of its file name, so every class learns a share of real mail. For each N the
first half is learned on a SQLite file of its own, then the second half, read once, is
classified again and again: one round per N in turn, so that N are compared under the same
load (a shared machine: compare the figures with each other, not with other runs). Reported:
the median over rounds of the mean ms a classification, the database's size, and the
messages each site learned: under thick training (the default) a site learns the messages
it gets wrong or nearly, so sites of different classes learn different numbers of them;
``SPAMFILTER_TRAINING_MODE=everything`` makes them learn the same.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from app.bootstrap import build_service
from app.evaluation.corpus import CorpusItem, load_corpus
from app.service import Analysed, SpamFilter
from app.settings.schema import Settings
from benchmarks.speed_bench import split_halves

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ClassCost:
    """One site's figures: its classes, ms a classification, its database's bytes, the
    messages it learned (thick training skips some) and classified each round."""

    classes: int
    ms_per_classify: float
    database_bytes: int
    learned: int
    classified: int


def declared(count: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The classes and junk classes of a site with ``count`` classes."""
    extra = tuple(f"c{i}" for i in range(2, count))
    return ("ham", "spam", *extra), ("spam", *extra[1::2])


def class_of(item: CorpusItem, classes: Sequence[str], junk: Sequence[str]) -> str:
    """The class ``item`` is learned as: one of the junk classes for spam, of the others for
    ham, by a stable hash of its file name."""
    side = [c for c in classes if (c in junk) == (item.label == "spam")]
    return side[zlib.crc32(item.path.name.encode()) % len(side)]


def run(
    corpus: Path,
    settings: Settings,
    counts: Sequence[int],
    rounds: int,
    limit: int | None,
    progress: Progress,
) -> list[ClassCost]:
    """The figures of a site with each of ``counts`` classes (see the module docstring)."""
    split = split_halves(load_corpus(corpus, order="auto", seed=1, limit=limit))
    with tempfile.TemporaryDirectory(prefix="spamfilter-classes-") as folder:
        services = {n: _trained(settings, Path(folder), n, split.train, progress) for n in counts}
        raws = [item.path.read_bytes() for item in split.test]
        tests = {n: [service.analyse(raw) for raw in raws] for n, service in services.items()}
        timings: dict[int, list[float]] = {n: [] for n in counts}
        for round_number in range(rounds):
            progress(f"round {round_number + 1} of {rounds}")
            for n, service in services.items():
                timings[n].append(_classify_all(service, tests[n]))
        learned = {
            n: sum(label.messages for label in service.stats().labels.values())
            for n, service in services.items()
        }
        for service in services.values():
            service.close()  # the last connection's close checkpoints the write-ahead log
        return [
            ClassCost(
                n,
                1000 * statistics.median(timings[n]) / max(len(split.test), 1),
                (Path(folder) / f"classes-{n}.db").stat().st_size,
                learned[n],
                len(split.test),
            )
            for n in counts
        ]


def _trained(
    settings: Settings, folder: Path, count: int, items: Sequence[CorpusItem], progress: Progress
) -> SpamFilter:
    classes, junk = declared(count)
    model = settings.model.model_copy(update={"classes": classes, "junk_classes": junk})
    url = f"sqlite:///{folder / f'classes-{count}.db'}"
    service = build_service(settings.model_copy(update={"database_url": url, "model": model}))
    progress(f"{count} classes: learning {len(items):,} messages")
    batch = [
        (service.learn_analysis(i.path.read_bytes()), class_of(i, classes, junk)) for i in items
    ]
    for _ in service.learn_many(batch):
        pass
    return service


def _classify_all(service: SpamFilter, messages: Sequence[Analysed]) -> float:
    """Seconds to classify every message once."""
    started = time.perf_counter()
    for analysed in messages:
        service.classify(analysed)
    return time.perf_counter() - started
