"""Concurrent writers lose no count: 8 writers x 300 feedback calls on the same token rows,
one call at a time or with runs of learns in batches (``learn_many``).

Processes (spawned, each with its own service and engine) are how several servers or CLI runs
share one database; threads sharing one service are how a threaded server does. Afterwards
every per-token count, every label total and the vocabulary must equal the sums computed
from the workload alone, and every call must have had the outcome its plan implies.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
from collections import Counter

import pytest

from app.service import SpamFilter
from app.settings.schema import Settings
from tests.service import workload
from tests.storage.snapshot import recount, snapshot, stored_counts

SEED = 20261121
TIMEOUT = 180


def run_in_processes(settings: Settings) -> dict[int, Counter[str]]:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(workload.WORKERS)
    results = context.Queue()
    data = settings.model_dump()
    processes = [
        context.Process(
            target=workload.process_main, args=(data, worker, SEED, barrier, results), daemon=True
        )
        for worker in range(workload.WORKERS)
    ]
    for process in processes:
        process.start()
    outcomes: dict[int, Counter[str]] = {}
    try:
        for _ in processes:
            worker, counted, error = results.get(timeout=TIMEOUT)
            assert error is None, f"worker {worker} failed:\n{error}"
            outcomes[worker] = Counter(counted)
    except queue.Empty:
        pytest.fail(f"a worker process did not finish within {TIMEOUT} s")
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
    return outcomes


def run_in_threads(service: SpamFilter, batch: int = 1) -> dict[int, Counter[str]]:
    barrier = threading.Barrier(workload.WORKERS)
    results: dict[int, Counter[str] | str] = {}
    threads = [
        threading.Thread(
            target=workload.thread_main, args=(service, worker, SEED, barrier, results, batch)
        )
        for worker in range(workload.WORKERS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=TIMEOUT)
    assert not any(t.is_alive() for t in threads), f"a thread did not finish in {TIMEOUT} s"
    outcomes: dict[int, Counter[str]] = {}
    for worker, result in sorted(results.items()):
        assert not isinstance(result, str), f"worker {worker} failed:\n{result}"
        outcomes[worker] = result
    assert len(outcomes) == workload.WORKERS
    return outcomes


@pytest.mark.parametrize("mode", ["processes", "threads", "threads in batches"])
def test_concurrent_feedback_loses_no_count(
    service: SpamFilter,
    settings: Settings,
    database_url: str,
    mode: str,
) -> None:
    plans = [workload.plan(worker, SEED) for worker in range(workload.WORKERS)]
    final = workload.final_state(plans, SEED)
    expected = workload.expected_counts(final, lambda raw: service.analyse(raw).tokens)
    assert sum(len(p.calls) for p in plans) == workload.WORKERS * workload.CALLS
    assert min(p.outcomes["relabelled"] for p in plans) > 0  # the mix is really there
    assert min(p.outcomes["forgotten"] for p in plans) > 0
    assert min(p.shared_calls for p in plans) > 0

    if mode == "processes":
        outcomes = run_in_processes(settings)
    else:
        # In batches: runs of a worker's learns go 7 at a time to learn_many, one transaction
        # each, while the other workers learn and forget the same token rows.
        outcomes = run_in_threads(service, batch=7 if mode.endswith("batches") else 1)

    total: Counter[str] = Counter()
    for counted in outcomes.values():
        total.update(counted)
    assert +total == +workload.expected_outcomes(plans, SEED)
    snap = snapshot(database_url)
    stored = stored_counts(snap)
    for name in ("label_total", "vocabulary", "token", "token_count"):
        assert stored[name] == expected[name], f"{name} differs from the expected sums"
    assert recount(snap) == expected
    learned = {(row[0], row[1], row[2]) for row in snap["learned_message"]}
    assert learned == {
        ("global", service.analyse(raw).digest, label) for raw, label in final.items()
    }
    stats = service.stats()
    assert stats.vocabulary == expected["vocabulary"]["global"]
    for label in ("ham", "spam"):
        messages, occurrences, _ = expected["label_total"]["global", label]
        assert (stats.labels[label].messages, stats.labels[label].tokens) == (
            messages,
            occurrences,
        )
