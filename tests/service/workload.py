"""A reproducible feedback workload for the concurrency tests, and the counts it must leave.

Each worker makes ``CALLS`` calls: mostly new messages (distinct digests) whose words come
from small shared pools, so every worker keeps hitting the same token rows; some relabels,
repeats and forgets of the worker's own earlier messages; and learns of ``SHARED`` messages
that every worker sends with the same label (a race on the learned-message record). Whatever
the interleaving, the final state is fixed: a worker's own messages end as its plan says and
each shared message is learned exactly once.
"""

from __future__ import annotations

import random
import threading
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from app.bootstrap import build_service
from app.domain.token_ids import token_id
from app.service import Analysed, SpamFilter
from app.settings.schema import Settings
from tests.builders import HAM_SENDERS, HAMMY_WORDS, SPAM_SENDERS, SPAMMY_WORDS, word_message

WORKERS = 8
CALLS = 300
SHARED = 12
SCOPE = "global"


@dataclass(frozen=True, slots=True)
class Call:
    """One service call: learn ``raw`` as ``label``, or forget it (label None)."""

    raw: bytes
    label: str | None


@dataclass(frozen=True, slots=True)
class Plan:
    """One worker's calls, the outcomes of its own-message calls, and where they end."""

    calls: list[Call]
    outcomes: Counter[str]
    final: dict[bytes, str]
    shared_calls: int


def generated(rng: random.Random, serial: int, label: str) -> bytes:
    if label == "spam":
        return word_message(rng, SPAMMY_WORDS, serial, length=20, senders=SPAM_SENDERS)
    return word_message(rng, HAMMY_WORDS, serial, length=20, senders=HAM_SENDERS)


def shared_messages(seed: int) -> list[tuple[bytes, str]]:
    """The messages every worker learns, each always with the same label."""
    rng = random.Random(f"{seed}-shared")
    labels = ["spam", "ham"] * (SHARED // 2)
    return [(generated(rng, 90_000 + i, label), label) for i, label in enumerate(labels)]


def plan(worker: int, seed: int, calls: int = CALLS) -> Plan:
    """The calls of ``worker``: deterministic for (worker, seed)."""
    rng = random.Random(f"{seed}-{worker}")
    shared = shared_messages(seed)
    learned: dict[bytes, str] = {}
    outcomes: Counter[str] = Counter()
    made: list[Call] = []
    shared_calls = 0
    for i in range(calls):
        roll = rng.random()
        own = list(learned)
        if own and roll < 0.08:
            raw = rng.choice(own)
            learned[raw] = "ham" if learned[raw] == "spam" else "spam"
            made.append(Call(raw, learned[raw]))
            outcomes["relabelled"] += 1
        elif own and roll < 0.15:
            raw = rng.choice(own)
            made.append(Call(raw, learned[raw]))
            outcomes["unchanged"] += 1
        elif own and roll < 0.22:
            raw = rng.choice(own)
            del learned[raw]
            made.append(Call(raw, None))
            outcomes["forgotten"] += 1
        elif roll < 0.30:
            raw, label = rng.choice(shared)
            made.append(Call(raw, label))
            shared_calls += 1
        else:
            label = rng.choice(("spam", "ham"))
            raw = generated(rng, worker * 10_000 + i, label)
            learned[raw] = label
            made.append(Call(raw, label))
            outcomes["learned"] += 1
    return Plan(made, outcomes, learned, shared_calls)


def expected_outcomes(plans: Iterable[Plan], seed: int) -> Counter[str]:
    """Outcome totals over all workers: each shared message is learned once, then unchanged."""
    plans = list(plans)
    shared = {raw for raw, _ in shared_messages(seed)}
    total: Counter[str] = Counter()
    for p in plans:
        total.update(p.outcomes)
    used = {c.raw for p in plans for c in p.calls if c.raw in shared}
    total["learned"] += len(used)
    total["unchanged"] += sum(p.shared_calls for p in plans) - len(used)
    return total


def final_state(plans: Iterable[Plan], seed: int) -> dict[bytes, str]:
    """Every message learned at the end, with its label."""
    plans = list(plans)
    final: dict[bytes, str] = {}
    for p in plans:
        final.update(p.final)
    used = {c.raw for p in plans for c in p.calls}
    final.update({raw: label for raw, label in shared_messages(seed) if raw in used})
    return final


def expected_counts(
    final: Mapping[bytes, str], tokens_of: Callable[[bytes], Mapping[str, int]]
) -> dict[str, Any]:
    """The count tables ``final`` implies, in the shape of tests.storage.snapshot.recount."""
    per_token: dict[tuple[str, int, str], list[int]] = {}
    overall: Counter[tuple[str, int]] = Counter()
    totals: dict[tuple[str, str], list[int]] = {}
    for raw, label in final.items():
        bag: Counter[int] = Counter()
        for text, n in tokens_of(raw).items():
            bag[token_id(text)] += n
        total = totals.setdefault((SCOPE, label), [0, 0, 0])
        total[0] += 1
        total[1] += sum(bag.values())
        total[2] += len(bag)
        for tid, n in bag.items():
            cell = per_token.setdefault((SCOPE, tid, label), [0, 0])
            cell[0] += n
            cell[1] += 1
            overall[SCOPE, tid] += n
    return {
        "token_count": {k: tuple(v) for k, v in per_token.items()},
        "token": dict(overall),
        "label_total": {k: tuple(v) for k, v in totals.items()},
        "vocabulary": {SCOPE: len(overall)} if overall else {},
    }


def run(service: SpamFilter, calls: Iterable[Call], batch: int = 1) -> Counter[str]:
    """Make the calls in order; the outcome of each, counted. With ``batch``, runs of learns
    go ``batch`` at a time to ``learn_many``, as a bulk learn sends them."""
    outcomes: Counter[str] = Counter()
    pending: list[tuple[Analysed, str]] = []

    def flush() -> None:
        for done in service.learn_many(pending):
            outcomes.update(result.outcome.value for result in done)
        pending.clear()

    for call in calls:
        if call.label is None:
            flush()
            outcomes[service.forget(call.raw).outcome.value] += 1
        elif batch > 1:
            pending.append((service.learn_analysis(call.raw), call.label))
            if len(pending) >= batch:
                flush()
        else:
            outcomes[service.learn(call.raw, call.label).outcome.value] += 1
    flush()
    return outcomes


def process_main(
    settings: dict[str, Any], worker: int, seed: int, barrier: Any, results: Any
) -> None:
    """Entry point of a worker process: its own service on the shared database."""
    try:
        service = build_service(Settings(_env_file=None, **settings), migrate=False)
        calls = plan(worker, seed).calls
        barrier.wait(timeout=120)
        outcomes = run(service, calls)
        service.close()
        results.put((worker, dict(outcomes), None))
    except BaseException:  # reported to the parent, which fails the test
        results.put((worker, {}, traceback.format_exc()))


def thread_main(
    service: SpamFilter,
    worker: int,
    seed: int,
    barrier: threading.Barrier,
    results: dict[int, Counter[str] | str],
    batch: int = 1,
) -> None:
    """Entry point of a worker thread: the service is shared, as in a threaded server."""
    try:
        calls = plan(worker, seed).calls
        barrier.wait(timeout=120)
        results[worker] = run(service, calls, batch)
    except BaseException:
        results[worker] = traceback.format_exc()
