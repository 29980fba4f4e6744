"""One side of a compiled-against-pure comparison, in a process of its own.

    python -m benchmarks.compiled_run results|time --source MODULES --corpus DIR --limit N

``--source`` names (comma-separated) the modules loaded from their ``.py`` files whatever the
build; the others load as built. ``results`` prints every stage's output (see
``compiled_work.results``; with ``--service``, also each classify's log-odds through the
service) as JSON; ``time`` prints, with ``--stages``, each compiled module's stage timed with
the module and with its pure source loaded beside it (``stage_seconds``) and, with
``--classify``, the best of ``--repeat`` passes of a whole in-process classify through the
service (a SQLite model learned from the first half, the second half classified). Messages
come from ``--corpus`` (ham/ and spam/ folders).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.compiled_work import Workload, load_source, prefer_source, read_messages, results

if TYPE_CHECKING:
    from app.service import SpamFilter


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compiled_run")
    parser.add_argument("what", choices=("results", "time"))
    parser.add_argument("--source", default="", help="modules to load from .py sources")
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--stages", action="store_true", help="time: each compiled stage")
    parser.add_argument("--classify", action="store_true", help="time: a whole classify")
    parser.add_argument("--service", action="store_true", help="results: classify's log-odds too")
    args = parser.parse_args(argv)
    prefer_source(name for name in args.source.split(",") if name)

    from app.compiled import compiled_modules

    work = Workload(read_messages(args.corpus, args.limit))
    doc: dict[str, Any] = {"compiled": compiled_modules(), "messages": len(work.raws)}
    if args.what == "results":
        doc.update(results(work))
        if args.service:
            doc["log_odds"] = [v.hex() for v in service_log_odds(work.raws, work.labels)]
    else:
        if args.stages:
            doc["stages"] = stage_seconds(work, args.repeat)
        if args.classify:
            doc["classify"] = classify_seconds(work.raws, work.labels, args.repeat)
    json.dump(doc, sys.stdout)


def stage_seconds(work: Workload, repeat: int) -> dict[str, dict[str, float]]:
    """Per module that loads compiled here: its stage's best pass over the messages with the
    pure source (loaded beside it) and with the compiled module, in seconds per message. The
    passes alternate, pure then compiled, ``repeat`` times, so that a busy spell of the
    machine falls on both alike."""
    from app.compiled import CANDIDATES, is_compiled

    n = len(work.raws)
    times: dict[str, dict[str, float]] = {}
    for name, stage in work.stages().items():
        if name not in CANDIDATES or not is_compiled(name):
            continue
        pure, compiled = load_source(name), importlib.import_module(name)
        stage(pure), stage(compiled)  # warm
        best_pure = best_compiled = float("inf")
        for _ in range(repeat):
            best_pure = min(best_pure, timed(stage, pure))
            best_compiled = min(best_compiled, timed(stage, compiled))
        times[name] = {"pure": best_pure / n, "compiled": best_compiled / n}
    return times


def timed(stage: Callable[[Any], object], module: Any) -> float:
    """Seconds one pass of ``stage`` with ``module`` takes."""
    start = time.perf_counter()
    stage(module)
    return time.perf_counter() - start


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
