"""One side of a compiled-against-pure comparison, in a process of its own.

    python -m benchmarks.compiled_run results|time --source MODULES --corpus DIR --limit N

``--source`` names (comma-separated) the modules loaded from their ``.py`` files whatever the
build; the others load as built. ``results`` prints every stage's output (see
``compiled_work.results``; with ``--service``, also each classify's log-odds through the
service) as JSON; ``time`` prints, per stage, the best of ``--repeat``
passes over the messages in seconds per message and, with ``--classify``, the best pass of a
whole in-process classify through the service (a SQLite model learned from the first half,
the second half classified). Messages come from ``--corpus`` (ham/ and spam/ folders).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.compiled_work import prefer_source

if TYPE_CHECKING:
    from app.service import SpamFilter


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compiled_run")
    parser.add_argument("what", choices=("results", "time"))
    parser.add_argument("--source", default="", help="modules to load from .py sources")
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--classify", action="store_true")
    parser.add_argument("--service", action="store_true", help="results: classify's log-odds too")
    args = parser.parse_args(argv)
    prefer_source(name for name in args.source.split(",") if name)

    from app.compiled import compiled_modules
    from benchmarks.compiled_work import Workload, read_messages, results

    work = Workload(read_messages(args.corpus, args.limit))
    doc: dict[str, Any] = {"compiled": compiled_modules(), "messages": len(work.raws)}
    if args.what == "results":
        doc.update(results(work))
        if args.service:
            doc["log_odds"] = [v.hex() for v in service_log_odds(work.raws, work.labels)]
    else:
        n = len(work.raws)
        doc["stages"] = {
            name: best(stage, args.repeat) / n for name, stage in work.stages().items()
        }
        if args.classify:
            doc["classify"] = classify_seconds(work.raws, work.labels, args.repeat)
    json.dump(doc, sys.stdout)


def best(call: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` timed calls, in seconds (after one untimed call)."""
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def classify_seconds(raws: Sequence[bytes], labels: Sequence[str], repeat: int) -> float:
    """Seconds per message of ``SpamFilter.classify`` over the second half, the first half
    learned on a fresh SQLite database (no recording: the bench measures the judgement)."""
    with learned_service(raws, labels) as service:
        test = raws[len(raws) // 2 :]

        def run() -> None:
            for raw in test:
                service.classify(raw)

        return best(run, repeat) / len(test)


def service_log_odds(raws: Sequence[bytes], labels: Sequence[str]) -> list[float]:
    """``SpamFilter.classify``'s log-odds of each message of the second half, the first half
    learned on a fresh SQLite database."""
    with learned_service(raws, labels) as service:
        return [service.classify(raw).log_odds for raw in raws[len(raws) // 2 :]]


@contextmanager
def learned_service(raws: Sequence[bytes], labels: Sequence[str]) -> Iterator[SpamFilter]:
    """The service on a fresh SQLite file in a temporary folder, the first half learned."""
    from app.bootstrap import build_service
    from app.settings.loading import load_settings

    middle = len(raws) // 2
    with tempfile.TemporaryDirectory(prefix="spamfilter-bench-") as workdir:
        settings = load_settings(environ={}).model_copy(
            update={
                "database_url": f"sqlite:///{Path(workdir) / 'bench.db'}",
                "training_mode": "everything",
            }
        )
        service = build_service(settings, migrate=True, record=False)
        try:
            for raw, label in zip(raws[:middle], labels[:middle], strict=True):
                service.learn(raw, label)
            yield service
        finally:
            service.close()


if __name__ == "__main__":
    main()
