"""How the service's cost grows with the size of a hostile message: the timing behind
``spamfilter bench hostile``.

Each shape of ``benchmarks.hostile`` is built at growing sizes and handed to the functions
being timed (the real ``SpamFilter.analyse`` and ``classify`` in the command; anything in the
tests). Per size: the best of a few wall-clock runs, microseconds per KiB, and the peak of
traced allocations during one more run. Per shape: the *flatness*, how much the cost per KiB
grew from the smallest size of at least 16 KiB to the worst larger size (1.0 is linear), and
the bounds it broke. A call that raises is reported by its error code, never hidden.

Nothing here knows about databases or settings: the caller passes the timed functions, the
sizes and the bounds, and may pass a clock.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from app.errors import describe
from benchmarks.hostile import Shape

KIB = 1024
MIB = 1024 * KIB
# Why from 16 KiB: below it a call is well under a millisecond, so fixed costs (headers,
# digest, the token-id hashing of a few dozen tokens) dominate and the per-KiB cost of a
# linear parser still falls several-fold between 1 and 16 KiB.
FLATNESS_FROM = 16 * KIB
GROWTH = 4
MEMORY_NOTE = (
    "peak KiB: tracemalloc peak during one analyse call, above what was live before it "
    "(lexbor's arenas included: selectolax allocates through Python; memory a C library "
    "takes straight from malloc is not seen)"
)

Timed = Callable[[bytes], object]
Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Bounds:
    """What a shape must stay within: cost per KiB that grows at most ``max_flatness`` times
    from the smallest size of at least 16 KiB, and no analyse call of ``max_seconds`` or more."""

    max_flatness: float = 3.0
    max_seconds: float = 1.0


@dataclass(frozen=True, slots=True)
class Target:
    """The functions timed: ``analyse`` (parse + tokenise) and optionally ``classify``; a
    message longer than ``max_bytes`` is built a little smaller (the service would refuse it)."""

    analyse: Timed
    classify: Timed | None = None
    max_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Measurement:
    """One shape at one size. Times are the best of the runs, in seconds; ``error`` is the
    error code of a call that raised (``analyse_seconds`` is then the time until it did);
    ``skipped`` when a smaller size already broke the time bound, so this one was not run."""

    size: int
    length: int
    analyse_seconds: float | None = None
    classify_seconds: float | None = None
    peak_bytes: int | None = None
    error: str | None = None
    skipped: bool = False

    @property
    def us_per_kib(self) -> float | None:
        """Microseconds of analyse per KiB of message (None for a call that raised)."""
        if self.analyse_seconds is None or self.error is not None or self.length == 0:
            return None
        return self.analyse_seconds * 1e6 / (self.length / KIB)


@dataclass(frozen=True, slots=True)
class ShapeResult:
    """Every size of one shape, its flatness (None when no size of 16 KiB or more was timed)
    and the bounds it broke, in words."""

    name: str
    what: str
    measurements: tuple[Measurement, ...]
    flatness: float | None
    failures: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when the shape broke no bound and no call raised."""
        return not self.failures


def parse_size(text: str) -> int:
    """Bytes from ``1024``, ``16K``, ``16KiB``, ``1M``, ``25MiB`` (powers of 1024); ValueError."""
    found = re.fullmatch(r"\s*(\d+)\s*([kKmM]?)(?:i?[bB])?\s*", text)
    if found is None:
        raise ValueError(f"not a size: {text!r} (use e.g. 4096, 16K, 1M)")
    number, unit = int(found.group(1)), found.group(2).upper()
    return number * {"": 1, "K": KIB, "M": MIB}[unit]


def format_size(size: int) -> str:
    """``16 KiB``, ``1 MiB``, ``25 MiB``; bytes when not a whole KiB."""
    if size % MIB == 0:
        return f"{size // MIB} MiB"
    if size % KIB == 0:
        return f"{size // KIB} KiB"
    return f"{size} B"


def sizes_up_to(max_size: int, smallest: int = KIB) -> list[int]:
    """1 KiB, 4 KiB, 16 KiB ... growing fourfold while below ``max_size``, then ``max_size``."""
    sizes: list[int] = []
    size = smallest
    while size < max_size:
        sizes.append(size)
        size *= GROWTH
    sizes.append(max_size)
    return sizes


def build_message(shape: Shape, size: int, max_bytes: int | None) -> bytes:
    """``shape`` built at ``size`` bytes; rebuilt smaller when that overshoots ``max_bytes``
    (builders add their headers on top of the size), cut as a last resort."""
    raw = shape.build(size)
    for _ in range(3):
        if max_bytes is None or len(raw) <= max_bytes:
            return raw
        size -= len(raw) - max_bytes
        raw = shape.build(max(1, size))
    return raw if max_bytes is None else raw[:max_bytes]


def best_time(function: Timed, raw: bytes, repeats: int, bound: float, clock: Clock) -> float:
    """The shortest of ``repeats`` calls, in seconds; one call only when it takes ``bound`` or
    more (it already fails, and a quadratic call repeated costs minutes). Errors propagate."""
    best = float("inf")
    for _ in range(max(1, repeats)):
        start = clock()
        function(raw)
        best = min(best, clock() - start)
        if best >= bound:
            break
    return best


def peak_bytes(function: Timed, raw: bytes) -> int:
    """The peak of traced allocations during one call, above what was live before, in bytes."""
    import tracemalloc  # only when measuring: it pulls in pickle and friends (~10 ms)

    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        function(raw)
        _, peak = tracemalloc.get_traced_memory()
        return max(0, peak - before)
    finally:
        if not was_tracing:
            tracemalloc.stop()


def measure(
    raw: bytes,
    size: int,
    target: Target,
    *,
    repeats: int = 3,
    bounds: Bounds = Bounds(),
    memory: bool = True,
    clock: Clock = time.perf_counter,
) -> Measurement:
    """One message: analyse timed (then classify, then memory, while under the time bound)."""
    start = clock()
    try:
        analyse = best_time(target.analyse, raw, repeats, bounds.max_seconds, clock)
    except Exception as error:  # RecursionError, MemoryError, anything: it is the finding
        return Measurement(size, len(raw), clock() - start, error=describe(error))
    if analyse >= bounds.max_seconds:
        return Measurement(size, len(raw), analyse)
    classify = None
    try:
        if target.classify is not None:
            classify = best_time(target.classify, raw, repeats, bounds.max_seconds, clock)
    except Exception as error:
        return Measurement(size, len(raw), analyse, error=describe(error))
    peak = peak_bytes(target.analyse, raw) if memory else None
    return Measurement(size, len(raw), analyse, classify, peak)


def run_shape(
    shape: Shape,
    sizes: Sequence[int],
    target: Target,
    *,
    repeats: int = 3,
    bounds: Bounds = Bounds(),
    memory: bool = True,
    clock: Clock = time.perf_counter,
    report: Callable[[Measurement], None] | None = None,
) -> ShapeResult:
    """Every size of ``shape`` in increasing order; once one call takes ``max_seconds`` or
    more the larger sizes are skipped (fourfold more bytes of a quadratic shape cost 16x)."""
    done: list[Measurement] = []
    over = False
    for size in sorted(sizes):
        if over:
            result = Measurement(size, 0, skipped=True)
        else:
            raw = build_message(shape, size, target.max_bytes)
            result = measure(
                raw, size, target, repeats=repeats, bounds=bounds, memory=memory, clock=clock
            )
            over = (result.analyse_seconds or 0.0) >= bounds.max_seconds
        done.append(result)
        if report is not None:
            report(result)
    score = flatness(done)
    return ShapeResult(shape.name, shape.what, tuple(done), score, failures(done, score, bounds))


def flatness(measurements: Iterable[Measurement]) -> float | None:
    """The largest cost per KiB at a size above the smallest size of at least 16 KiB, over the
    cost per KiB at that size; None without such a size. The worst size, not the largest:
    past the scan limit (512 KiB) only the digest reads the bytes, which would dilute a
    tokenizer that is quadratic below it."""
    timed = [
        (m.size, m.us_per_kib)
        for m in measurements
        if m.error is None and m.us_per_kib is not None and m.size >= FLATNESS_FROM
    ]
    if not timed:
        return None
    base = timed[0][1]
    worst = max(cost for _, cost in timed)
    return worst / base if base > 0 else None


def failures(
    measurements: Sequence[Measurement], score: float | None, bounds: Bounds
) -> tuple[str, ...]:
    """The bounds a shape broke, in words (empty when it passed)."""
    found: list[str] = []
    errors = [m for m in measurements if m.error is not None]
    if errors:
        found.append(f"{errors[0].error} at {format_size(errors[0].size)}")
    slow = [
        m
        for m in measurements
        if m.error is None and (m.analyse_seconds or 0.0) >= bounds.max_seconds
    ]
    if slow:
        seconds = slow[0].analyse_seconds or 0.0
        found.append(
            f"{format_size(slow[0].size)} took {seconds:.2f} s (bound {bounds.max_seconds:g} s)"
        )
    if score is not None and score > bounds.max_flatness:
        found.append(f"flatness {score:.1f}x (bound {bounds.max_flatness:g}x)")
    return tuple(found)


# ---- output ----------------------------------------------------------------------------------

HEADER = f"{'shape':<18} {'size':>8} {'ms':>10} {'µs/KiB':>9} {'classify ms':>12} {'peak KiB':>9}"
FAIL_MARK = "!!"


def format_row(name: str, measurement: Measurement, bounds: Bounds) -> str:
    """One table row; an error code instead of the times, ``!!`` on a row that breaks a bound."""
    head = f"{name:<18} {format_size(measurement.size):>8}"
    if measurement.skipped:
        return f"{head} {'-':>10}  skipped: a smaller size took {bounds.max_seconds:g} s or more"
    if measurement.error is not None:
        return f"{head} {'-':>10}  {FAIL_MARK} {measurement.error}"
    seconds = measurement.analyse_seconds or 0.0
    row = (
        f"{head} {seconds * 1e3:>10.1f} {measurement.us_per_kib or 0.0:>9.1f}"
        f" {_number(measurement.classify_seconds, 1e3, '.1f'):>12}"
        f" {_number(measurement.peak_bytes, 1 / KIB, ',.0f'):>9}"
    )
    return f"{row}  {FAIL_MARK}" if seconds >= bounds.max_seconds else row


def format_summary(result: ShapeResult) -> str:
    """The verdict line under a shape's rows: flatness, then ``ok`` or what it broke."""
    score = "-" if result.flatness is None else f"{result.flatness:.1f}x"
    verdict = "ok" if result.ok else f"{FAIL_MARK} FAIL: " + "; ".join(result.failures)
    return f"{result.name:<18} flatness {score:<7} {verdict}"


def to_json(results: Sequence[ShapeResult], bounds: Bounds) -> dict[str, Any]:
    """The whole run as a JSON-ready document (times in ms, memory in bytes)."""
    return {
        "ok": all(result.ok for result in results),
        "bounds": {"max_flatness": bounds.max_flatness, "max_seconds": bounds.max_seconds},
        "flatness_from_bytes": FLATNESS_FROM,
        "memory": MEMORY_NOTE,
        "shapes": [
            {
                "name": result.name,
                "what": result.what,
                "ok": result.ok,
                "flatness": result.flatness,
                "failures": list(result.failures),
                "sizes": [_measurement_json(m) for m in result.measurements],
            }
            for result in results
        ],
    }


def _measurement_json(m: Measurement) -> dict[str, Any]:
    return {
        "size": m.size,
        "bytes": m.length,
        "analyse_ms": None if m.analyse_seconds is None else m.analyse_seconds * 1e3,
        "us_per_kib": m.us_per_kib,
        "classify_ms": None if m.classify_seconds is None else m.classify_seconds * 1e3,
        "peak_bytes": m.peak_bytes,
        "error": m.error,
        "skipped": m.skipped,
    }


def _number(value: float | None, scale: float, spec: str) -> str:
    return "-" if value is None else format(value * scale, spec)


# ---- a model to classify against -------------------------------------------------------------

_SPAMMY = (
    "winner", "prize", "cash", "lottery", "claim", "urgent", "offer", "discount", "casino",
    "bonus", "loan", "pills",
)  # fmt: skip
_HAMMY = (
    "meeting", "agenda", "minutes", "project", "review", "deadline", "lunch", "report", "draft",
    "budget", "team",
)  # fmt: skip
_COMMON = ("the", "and", "you", "your", "this", "for", "with", "today", "please", "time", "new")


def training_messages(per_label: int = 20, seed: int = 1) -> list[tuple[bytes, str]]:
    """``per_label`` small synthetic ham and spam messages, as (raw, label) pairs: enough for
    the model to give real verdicts (10 per label are needed), distinct digests each."""
    rng = random.Random(seed)
    messages = []
    for serial in range(per_label):
        for label, words, sender in (
            ("ham", _HAMMY, "carol@example.org"),
            ("spam", _SPAMMY, "desk@winners.example"),
        ):
            body = " ".join(rng.choice((*words, *_COMMON)) for _ in range(30))
            raw = (
                f"From: {sender}\r\nTo: bob@example.net\r\n"
                f"Subject: {rng.choice(words)} {serial:04d}\r\n\r\n{body}\r\n"
            ).encode("ascii")
            messages.append((raw, label))
    return messages
