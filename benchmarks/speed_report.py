"""The figures of ``spamfilter bench speed`` beside the speed issue's targets: the JSON
document, the text table, and the comparison of two documents (before / after).

Everything here reads the JSON document, never live objects, so a saved run (``--json``)
compares with a new one by the same code that printed it. A figure whose target needs a
reference that was not measured (bogofilter not installed) has ``met`` None: not judged.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmarks.loadgen import LoadResult
    from benchmarks.speed_bench import Batch, Bogofilter, Bulk, Spawns

FORMAT = 1
# The second round's targets (compile the hot path, start fast, serve 1,200 a second).
LEARN_PER_SECOND = {"sqlite": 1_000.0, "postgresql": 700.0}
CLASSIFY_RATIO = 3.0  # our bulk ms/message over bogofilter's, in process
FILES_RATIO = 4.0  # ``spamfilter classify -q FILES`` over bogofilter's bulk classify
HTTP_CLASSIFY_PER_SECOND = 1_200.0
HTTP_P99_MS = 25.0
FEEDBACK_PER_SECOND = 300.0
# One message through a new process, the median run, by command; None: no target.
PROCESS_MS: dict[str, float | None] = {
    "spamfilter --version": 150.0,
    "spamfilter filter": 250.0,
    "spamfilter-filter": 200.0,
    "spamfilter-filter via serve": 30.0,
}
# The interpreter importing the two libraries a direct judgement needs, nothing else: the
# floor under ``spamfilter filter`` and ``spamfilter-filter`` (no target of its own).
STACK_IMPORTS = "python -c 'import sqlalchemy, pydantic_settings'"


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured figure: a stable ``key`` for comparisons, its value and unit, how it is
    shown, the target in words and whether it is met (None: no target, or not judged)."""

    key: str
    label: str
    value: float | None
    unit: str
    shown: str
    target: str = ""
    met: bool | None = None


def batch_json(batch: Batch) -> dict[str, Any]:
    """A batch as JSON: count, seconds, ms per message, messages per second, outcomes."""
    return {
        "n": batch.n,
        "seconds": round(batch.seconds, 4),
        "ms_per_message": _round(batch.ms_per_message, 4),
        "per_second": _round(batch.per_second, 1),
        "outcomes": batch.outcomes,
        "failures": batch.failures,
    }


def bulk_json(bulk: Bulk) -> dict[str, Any]:
    """Bulk learn and classify on one database, and its size in bytes."""
    return {
        "learn": batch_json(bulk.learn),
        "classify": batch_json(bulk.classify),
        "db_bytes": bulk.db_bytes,
        "plain_check": {"checked": bulk.checked, "differing": bulk.differing},
        "read": None if bulk.read is None else batch_json(bulk.read),
    }


def bogofilter_json(result: Bogofilter) -> dict[str, Any]:
    """bogofilter's bulk figures on the same split."""
    return {
        "version": result.version,
        "learn": batch_json(result.learn),
        "classify": batch_json(result.classify),
        "db_bytes": result.db_bytes,
    }


def spawns_json(spawns: Spawns) -> dict[str, Any]:
    """A command's spawn-to-exit times: best and median in ms, every run in seconds."""
    return {
        "command": spawns.command,
        "runs": len(spawns.seconds),
        "best_ms": _round(spawns.best_ms, 2),
        "median_ms": _round(spawns.median_ms, 2),
        "failures": spawns.failures,
        "seconds": [round(s, 5) for s in spawns.seconds],
    }


def load_json(backend: str, workers: int, endpoint: str, load: LoadResult) -> dict[str, Any]:
    """One HTTP load run: rates, latency percentiles (ms), errors, the generator's CPU."""
    return {
        "backend": backend,
        "workers": workers,
        "endpoint": endpoint,
        "connections": load.connections,
        "seconds": round(load.seconds, 3),
        "answered": load.answered,
        "ok": load.ok,
        "per_second": round(load.ok_per_second, 1),
        "p50_ms": _round(load.percentile_ms(50), 2),
        "p95_ms": _round(load.percentile_ms(95), 2),
        "p99_ms": _round(load.percentile_ms(99), 2),
        "errors": load.errors,
        "outcomes": dict(sorted(load.tallies.items())),
        "generator_cpu_seconds": round(load.cpu_seconds, 3),
        "generator_cpu_share": round(load.cpu_share, 3),
    }


def _round(value: float, digits: int) -> float | None:
    return None if math.isnan(value) else round(value, digits)


def figures(doc: Mapping[str, Any]) -> list[Figure]:
    """Every figure of a result document, with its target, in table order."""
    bogo = doc.get("bogofilter")
    found: list[Figure] = []
    for backend, bulk in doc.get("bulk", {}).items():
        found.extend(_bulk_figures(backend, bulk, bogo))
    if bogo:
        found.extend(_bogofilter_figures(bogo))
    for spawns in doc.get("process", []):
        found.append(_process_figure(spawns))
    if doc.get("files"):
        found.extend(_files_figures(doc["files"], bogo))
    for run in doc.get("http", []):
        found.extend(_http_figures(run))
    return found


def _bulk_figures(backend: str, bulk: Mapping[str, Any], bogo: Any) -> list[Figure]:
    learn, classify, size = bulk["learn"], bulk["classify"], bulk.get("db_bytes")
    rate, ms = learn["per_second"], classify["ms_per_message"]
    least = LEARN_PER_SECOND.get(backend, max(LEARN_PER_SECOND.values()))
    theirs = bogo["classify"]["ms_per_message"] if bogo else None
    ratio = ms / theirs if ms is not None and theirs else None
    their_size = bogo.get("db_bytes") if bogo else None
    return [
        Figure(
            f"learn.{backend}",
            f"bulk learn, {backend}",
            rate,
            "msg/s",
            f"{_num(rate, ',.0f')} msg/s ({_num(learn['ms_per_message'], '.2f')} ms/msg)",
            f">= {least:,.0f} msg/s",
            None if rate is None else rate >= least,
        ),
        Figure(
            f"classify.{backend}",
            f"bulk classify, {backend}",
            ms,
            "ms/msg",
            f"{_num(ms, '.3f')} ms/msg ({_num(classify['per_second'], ',.0f')} msg/s)",
        ),
        Figure(
            f"classify_ratio.{backend}",
            f"classify vs bogofilter, {backend}",
            ratio,
            "x",
            f"{_num(ratio, '.2f')}x" if ratio is not None else "(no bogofilter)",
            f"<= {CLASSIFY_RATIO:g}x bogofilter",
            None if ratio is None else ratio <= CLASSIFY_RATIO,
        ),
        *_read_figures(backend, bulk.get("read"), theirs),
        _plain_figure(backend, bulk.get("plain_check")),
        Figure(
            f"db.{backend}",
            f"database size, {backend}",
            size,
            "bytes",
            _mb(size),
            f"<= bogofilter ({_mb(their_size)})" if their_size else "<= bogofilter's wordlist",
            None if size is None or not their_size else size <= their_size,
        ),
    ]


def _read_figures(backend: str, read: Mapping[str, Any] | None, theirs: Any) -> list[Figure]:
    """The classified half read alone (no target): the part of the classify row that no
    model change moves, beside bogofilter's whole classify."""
    if not read:
        return []
    ms = read["ms_per_message"]
    ratio = ms / theirs if ms is not None and theirs else None
    return [
        Figure(
            f"read.{backend}",
            f"reading alone, {backend}",
            ms,
            "ms/msg",
            f"{_num(ms, '.3f')} ms/msg (parse, tokens, ids; nothing judged)",
        ),
        Figure(
            f"read_ratio.{backend}",
            f"reading alone vs bogofilter, {backend}",
            ratio,
            "x",
            f"{_num(ratio, '.2f')}x" if ratio is not None else "(no bogofilter)",
        ),
    ]


def _plain_figure(backend: str, check: Mapping[str, Any] | None) -> Figure:
    """Speed must not change a score: the classified half scored again with no cache."""
    checked = differing = None
    if check:
        checked, differing = check["checked"], check["differing"]
    return Figure(
        f"plain_check.{backend}",
        f"scores vs uncached path, {backend}",
        differing,
        "messages",
        "(not checked)" if checked is None else f"{checked - differing:,} of {checked:,} identical",
        "every log-odds identical",
        None if checked is None else differing == 0,
    )


def _bogofilter_figures(bogo: Mapping[str, Any]) -> list[Figure]:
    learn, classify = bogo["learn"], bogo["classify"]
    return [
        Figure(
            "bogofilter.learn",
            "bogofilter bulk register",
            learn["per_second"],
            "msg/s",
            f"{_num(learn['per_second'], ',.0f')} msg/s "
            f"({_num(learn['ms_per_message'], '.2f')} ms/msg)",
            "(reference)",
        ),
        Figure(
            "bogofilter.classify",
            "bogofilter bulk classify",
            classify["ms_per_message"],
            "ms/msg",
            f"{_num(classify['ms_per_message'], '.3f')} ms/msg "
            f"({_num(classify['per_second'], ',.0f')} msg/s)",
            "(reference)",
        ),
        Figure(
            "bogofilter.db",
            "bogofilter wordlist.db",
            bogo.get("db_bytes"),
            "bytes",
            _mb(bogo.get("db_bytes")),
            "(reference)",
        ),
    ]


def _process_figure(spawns: Mapping[str, Any]) -> Figure:
    median = spawns["median_ms"]
    failed = f", {spawns['failures']} failed" if spawns["failures"] else ""
    bound = PROCESS_MS.get(spawns["command"])
    return Figure(
        f"process.{spawns['command']}",
        f"new process: {spawns['command']}",
        median,
        "ms",
        f"median {_num(median, '.0f')} ms, best {_num(spawns['best_ms'], '.0f')} ms{failed}",
        "" if bound is None else f"<= {bound:g} ms",
        None if median is None or bound is None else median <= bound and not spawns["failures"],
    )


def _files_figures(files: Mapping[str, Any], bogo: Any) -> list[Figure]:
    """A folder classified from the command line: ms a message, and beside bogofilter's bulk
    classify of the same files (both a new process, start-up included)."""
    ms = files["ms_per_message"]
    theirs = bogo["classify"]["ms_per_message"] if bogo else None
    ratio = ms / theirs if ms is not None and theirs else None
    failed = f", {files['failures']} failed" if files["failures"] else ""
    return [
        Figure(
            "files.sqlite",
            f"{files['command']}, sqlite",
            ms,
            "ms/msg",
            f"{_num(ms, '.3f')} ms/msg ({files['n']:,} files{failed})",
        ),
        Figure(
            "files_ratio.sqlite",
            "classify -q FILES vs bogofilter",
            ratio,
            "x",
            f"{_num(ratio, '.2f')}x" if ratio is not None else "(no bogofilter)",
            f"<= {FILES_RATIO:g}x bogofilter",
            None if ratio is None else ratio <= FILES_RATIO and not files["failures"],
        ),
    ]


def _http_figures(run: Mapping[str, Any]) -> list[Figure]:
    endpoint, rate, p99 = run["endpoint"], run["per_second"], run["p99_ms"]
    where = f"{run['backend']}, {run['workers']} worker{'s' if run['workers'] > 1 else ''}"
    key = f"http.{run['backend']}.w{run['workers']}.{endpoint}"
    least = {"classify": HTTP_CLASSIFY_PER_SECOND, "feedback": FEEDBACK_PER_SECOND}.get(endpoint)
    errors = sum(run["errors"].values())
    rate_fig = Figure(
        key,
        f"HTTP {endpoint}, {where}, {run['connections']} conn",
        rate,
        "req/s",
        f"{rate:,.0f} req/s" + (f" ({errors} errors)" if errors else ""),
        "" if least is None else f">= {least:,.0f} req/s",
        None if least is None else rate >= least and not errors,
    )
    p99_fig = Figure(
        f"{key}.p99",
        f"HTTP {endpoint} p99, {where}",
        p99,
        "ms",
        f"{_num(p99, '.1f')} ms (p50 {_num(run['p50_ms'], '.1f')}, "
        f"p95 {_num(run['p95_ms'], '.1f')})",
        f"<= {HTTP_P99_MS:g} ms" if endpoint == "classify" else "",
        None if endpoint != "classify" or p99 is None else p99 <= HTTP_P99_MS,
    )
    return [rate_fig, p99_fig]


def _num(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _mb(size: int | None) -> str:
    return "n/a" if size is None else f"{size / 1e6:.1f} MB"


def table(doc: Mapping[str, Any]) -> str:
    """The measured settings, then one line per figure with its target and verdict."""
    lines = [*_measured_lines(doc.get("measured", {})), ""]
    rows = [(f.label, f.shown, f.target, _verdict(f.met)) for f in figures(doc)]
    lines.extend(_columns([("figure", "measured", "target", "met"), *rows]))
    for backend, bulk in doc.get("bulk", {}).items():
        lines.append(_bulk_detail(backend, bulk))
    if doc.get("bogofilter"):
        lines.append(_bulk_detail("bogofilter", doc["bogofilter"]))
    if doc.get("files"):
        files = doc["files"]
        lines.append(
            f"{files['command']}: (gold:verdict) {_plain(files['outcomes'])}, "
            f"{files['failures']} failed ({files['seconds']:.2f} s)"
        )
    for run in doc.get("http", []):
        lines.append(_http_detail(run))
    lines.extend(f"note: {note}" for note in doc.get("notes", []))
    return "\n".join(lines)


def _measured_lines(measured: Mapping[str, Any]) -> list[str]:
    return [f"{key:<16}{_plain(value)}" for key, value in measured.items()]


def _plain(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def _bulk_detail(name: str, bulk: Mapping[str, Any]) -> str:
    learn, classify = bulk["learn"], bulk["classify"]
    learned = _plain(learn["outcomes"]) or f"{learn['n']} registered"
    return (
        f"bulk {name}: learn {learned}, {learn['failures']} failed "
        f"({learn['seconds']:.2f} s); classify (gold:verdict) {_plain(classify['outcomes'])}, "
        f"{classify['failures']} failed ({classify['seconds']:.2f} s)"
    )


def _http_detail(run: Mapping[str, Any]) -> str:
    outcomes = _plain(run["outcomes"]) or "-"
    errors = _plain(run["errors"]) or "none"
    return (
        f"http {run['backend']} w{run['workers']} {run['endpoint']}: {run['answered']:,} "
        f"answered in {run['seconds']:.1f} s, errors: {errors}; outcomes: {outcomes}; "
        f"load generator CPU {100 * run['generator_cpu_share']:.0f}% of one core"
    )


def _verdict(met: bool | None) -> str:
    return "-" if met is None else ("yes" if met else "NO")


def _columns(rows: Iterable[tuple[str, ...]]) -> list[str]:
    rows = list(rows)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def compare(doc_a: Mapping[str, Any], doc_b: Mapping[str, Any]) -> str:
    """Every figure of A beside B's and B / A, then the figures only one of them has."""
    a = {f.key: f for f in figures(doc_a)}
    b = {f.key: f for f in figures(doc_b)}
    rows = [("figure", "A", "B", "B / A", "met A -> B")]
    for key in [*a, *(k for k in b if k not in a)]:
        fa, fb = a.get(key), b.get(key)
        label = (fa or fb).label  # type: ignore[union-attr]
        rows.append(
            (
                label,
                _value(fa),
                _value(fb),
                _change(fa, fb),
                f"{_verdict(fa.met if fa else None)} -> {_verdict(fb.met if fb else None)}",
            )
        )
    return "\n".join(_columns(rows))


def compare_json(doc_a: Mapping[str, Any], doc_b: Mapping[str, Any]) -> dict[str, Any]:
    """``compare`` as JSON: per figure key, A's and B's values, B / A and the verdicts."""
    a = {f.key: f for f in figures(doc_a)}
    b = {f.key: f for f in figures(doc_b)}
    found: dict[str, Any] = {}
    for key in [*a, *(k for k in b if k not in a)]:
        fa, fb = a.get(key), b.get(key)
        ratio = _change(fa, fb)
        found[key] = {
            "unit": (fa or fb).unit,  # type: ignore[union-attr]
            "a": fa.value if fa else None,
            "b": fb.value if fb else None,
            "b_over_a": None if ratio == "-" else float(ratio),
            "met": [fa.met if fa else None, fb.met if fb else None],
        }
    return found


def _value(fig: Figure | None) -> str:
    if fig is None or fig.value is None:
        return "-"
    if fig.unit == "bytes":
        return _mb(int(fig.value))
    return f"{fig.value:,.4g} {fig.unit}"


def _change(a: Figure | None, b: Figure | None) -> str:
    if a is None or b is None or a.value is None or b.value is None or a.value == 0:
        return "-"
    return f"{b.value / a.value:.2f}"


def figure_json(fig: Figure) -> dict[str, Any]:
    """A figure as JSON (the document carries them too, for other tools)."""
    return asdict(fig)
