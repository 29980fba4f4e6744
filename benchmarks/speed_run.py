"""One ``spamfilter bench speed`` run, end to end: the corpus split, the databases, the
processes and servers it times (started through ``bench_servers``), and the result document.

Every database is new and thrown away: a SQLite file in a temporary folder (always) and,
when a PostgreSQL URL is given, a schema of its own there (``benchmarks.scratch_schema``).
The first half of the corpus is learned through the service with the configured training
mode, then the second half classified (``speed_bench``). Processes and servers are the installed
``spamfilter-filter`` and ``spamfilter`` programs, started with the temporary database in
``SPAMFILTER_DATABASE_URL``; servers listen on 127.0.0.1 only, on a free port, and each gets
its own copy of the trained model, so feedback in one run does not change the next.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.compiled import build_kind
from app.evaluation.corpus import CorpusItem, effective_order, load_corpus
from app.service.read_ahead import read_ahead, reading_processes
from app.settings.loading import mask_url
from app.settings.schema import Settings
from benchmarks import scratch_schema, speed_report
from benchmarks.bench_servers import HOST, BenchError, environment, program, serve
from benchmarks.loadgen import LoadResult, Request, Tally, run_load
from benchmarks.speed_bench import (
    Batch,
    Bulk,
    Split,
    split_halves,
    time_bogofilter,
    time_classify,
    time_files,
    time_learn,
    time_spawns,
    typical,
    warm,
)

if TYPE_CHECKING:
    from app.service import Analysed, SpamFilter

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Plan:
    """What to measure and how hard."""

    corpus: Path
    settings: Settings
    seed: int = 1
    # The settings file ``settings`` were read from: the commands spawned read it too.
    config: Path | None = None
    limit: int | None = None
    postgres_url: str | None = None
    skip: frozenset[str] = frozenset()
    runs: int = 20
    connections: int = 16
    duration: float = 10.0
    max_requests: int = 100_000
    warmup: int = 200
    workers: tuple[int, ...] = (1, 2)

    @property
    def backends(self) -> list[str]:
        """``sqlite``, and ``postgresql`` when a URL was given."""
        return ["sqlite", *(["postgresql"] if self.postgres_url else [])]


@dataclass(slots=True)
class _Work:
    plan: Plan
    split: Split
    folder: Path
    progress: Progress
    doc: dict[str, Any] = field(default_factory=dict)


def load_split(plan: Plan) -> Split:
    """The corpus in the seeded order, halved (raises CorpusError, OSError, BenchError)."""
    items = load_corpus(plan.corpus, order="auto", seed=plan.seed, limit=plan.limit)
    split = split_halves(items)
    if not split.train or not split.test:
        raise BenchError(f"{plan.corpus}: {len(items)} messages; at least 2 are needed")
    return split


def run(plan: Plan, progress: Progress) -> dict[str, Any]:
    """Measure everything the plan asks for; the result document (``speed_report``)."""
    split = load_split(plan)
    warm([*split.train, *split.test])
    with tempfile.TemporaryDirectory(prefix="spamfilter-speed-") as folder:
        work = _Work(plan, split, Path(folder), progress)
        work.doc = {"bench": "speed", "format": speed_report.FORMAT}
        work.doc["measured"] = measured(plan, split)
        work.doc["bulk"], work.doc["notes"] = {}, []
        for backend in plan.backends:
            work.doc["bulk"][backend] = speed_report.bulk_json(_bulk(work, backend))
        work.doc["bogofilter"] = _bogofilter(work)
        work.doc["process"] = [] if "process" in plan.skip else _processes(work)
        work.doc["files"] = None if "process" in plan.skip else _files(work)
        work.doc["http"] = [] if "http" in plan.skip else _http(work)
        load = os.getloadavg()[0]
        work.doc["notes"].append(f"load average over the last minute at the end: {load:.2f}")
    work.doc["figures"] = [speed_report.figure_json(f) for f in speed_report.figures(work.doc)]
    return work.doc


def measured(plan: Plan, split: Split) -> dict[str, Any]:
    """What exactly was measured: corpus, order, sizes, settings, machine."""
    order = effective_order(plan.corpus, "auto")
    settings = plan.settings
    return {
        "corpus": str(plan.corpus.resolve()),
        "order": order + (f" (seed {plan.seed})" if order == "shuffle" else ""),
        "messages": len(split.train) + len(split.test),
        "learned": f"first {len(split.train)} (spam {_count(split.train, 'spam')}, "
        f"ham {_count(split.train, 'ham')})",
        "classified": f"last {len(split.test)}",
        "limit": "none" if plan.limit is None else plan.limit,
        "training": f"{settings.training_mode} (margin {settings.training_margin:g} nats), "
        f"read ahead in {reading_processes(len(split.train))} other process(es) as learn does",
        "model": f"{settings.model.kind}, top {settings.model.top_tokens} tokens",
        "databases": ", ".join(plan.backends)
        + (f" ({mask_url(plan.postgres_url)})" if plan.postgres_url else ""),
        "http": "skipped"
        if "http" in plan.skip
        else f"{plan.connections} connections, {plan.duration:g} s or {plan.max_requests} "
        f"requests per endpoint, {plan.warmup} warm-up, workers "
        f"{'/'.join(map(str, plan.workers))}, serve's defaults otherwise",
        "process": "skipped"
        if "process" in plan.skip
        else f"{plan.runs} runs each, the median-size message of the classified half",
        "bogofilter": "skipped" if "bogofilter" in plan.skip else "when installed",
        "cores": f"{os.cpu_count()} (usable {len(os.sched_getaffinity(0))})",
        "machine": f"{platform.machine()}, Python {platform.python_version()}, "
        f"spamfilter {_version()} ({build_kind()})",
        # Why: the figures are wall times on a machine that may be shared; a load average
        # above the core count at the start means other work competed for the cores.
        "load average": " / ".join(f"{load:.2f}" for load in os.getloadavg()) + " (1/5/15 min)",
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _count(items: Sequence[CorpusItem], label: str) -> int:
    return sum(1 for item in items if item.label == label)


def _version() -> str:
    try:
        return metadata.version("spamfilter")
    except metadata.PackageNotFoundError:
        return "unknown"


def _bulk(work: _Work, backend: str) -> Bulk:
    with _database(work, backend, trained=False) as url:
        scores: list[float] = []
        service = _service(work.plan.settings, url)
        try:
            work.progress(f"{backend}: learning {len(work.split.train)} messages")
            learned = _time_learn(work, service, _reading_ahead(work))
            work.progress(f"{backend}: classifying {len(work.split.test)} messages")
            classified = time_classify(work.split.test, lambda raw: _verdict(service, raw, scores))
            read = None
            if backend == "sqlite":
                work.progress(f"{backend}: reading the same messages alone")
                read = time_classify(work.split.test, lambda raw: _read(service, raw))
        finally:
            service.close()  # SQLite folds its write-ahead log into the file on the last close
        size = _sqlite_bytes(url) if backend == "sqlite" else scratch_schema.schema_bytes(url)
        if backend == "sqlite":
            shutil.copy(_sqlite_path(url), work.folder / "trained.db")
        work.progress(f"{backend}: scoring the same messages again with no cache")
        differing = _plain_differences(work, url, scores)
        return Bulk(learned, classified, size, len(scores), differing, read)


def _plain_differences(work: _Work, url: str, scores: list[float]) -> int:
    """How many of ``scores`` (the classified half's log-odds, in order, messages that
    failed left out) differ from the same messages scored by a service with no cache."""
    plain_settings = work.plan.settings.model_copy(update={"cache_tokens": 0})
    again: list[float] = []
    service = _service(plain_settings, url)
    try:
        time_classify(work.split.test, lambda raw: _verdict(service, raw, again))
    finally:
        service.close()
    return sum(1 for a, b in zip(scores, again, strict=True) if a != b)


def _service(settings: Settings, url: str) -> SpamFilter:
    from app.bootstrap import build_service

    return build_service(settings.model_copy(update={"database_url": url}), migrate=True)


def _time_learn(
    work: _Work, service: SpamFilter, read: Callable[[Path], bytes | Analysed] = Path.read_bytes
) -> Batch:
    """Learn the training half as ``spamfilter learn`` does: each message ``read`` (ahead,
    or here) and analysed, then learned as many at a time as learn does on the database."""

    def prepare(path: Path) -> Analysed:
        return service.learn_analysis(read(path))

    def learn(batch: Sequence[tuple[Analysed, str]]) -> Iterator[list[str]]:
        return ([str(r.outcome.value) for r in done] for done in service.learn_many(batch))

    return time_learn(work.split.train, learn, prepare, service.learn_batch)


def _reading_ahead(work: _Work) -> Callable[[Path], bytes | Analysed]:
    """How ``spamfilter learn`` of a folder reads the training half: the messages read in
    another process while this one learns (``read_ahead``), when that pays; then the reader
    hands each over in turn (a message that process could not read comes as its bytes, for
    the service to fail on as usual)."""
    items = work.split.train
    processes = reading_processes(len(items))
    if not processes:
        return Path.read_bytes
    entries = ((item.path, item.path.read_bytes()) for item in items)
    reading = read_ahead(work.plan.settings, entries, processes, legacy=True)

    def read(path: Path) -> bytes | Analysed:
        key, analysed = next(reading)
        assert key == path, "read in the order of the training half"
        return path.read_bytes() if analysed is None else analysed

    return read


def _read(service: SpamFilter, raw: bytes) -> str:
    """Read a message as a classify does, and judge nothing: the outcome is ``read``."""
    service.analyse(raw)
    return "read"


def _verdict(service: SpamFilter, raw: bytes, scores: list[float] | None = None) -> str:
    result = service.classify(raw)
    if scores is not None:
        scores.append(result.log_odds)
    return str(result.verdict.value)


@contextmanager
def _database(work: _Work, backend: str, trained: bool) -> Iterator[str]:
    """A new database of ``backend``: empty, or holding the model of the first half."""
    if backend == "sqlite":
        path = work.folder / f"sqlite-{time.monotonic_ns()}" / "bench.db"
        path.parent.mkdir()
        if trained:
            shutil.copy(work.folder / "trained.db", path)
        yield f"sqlite:///{path}"
        return
    assert work.plan.postgres_url is not None
    with scratch_schema.scratch_schema(work.plan.postgres_url) as url:
        if trained:
            service = _service(work.plan.settings, url)
            try:
                _time_learn(work, service)
            finally:
                service.close()
        yield url


def _sqlite_path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


def _sqlite_bytes(url: str) -> int:
    path = _sqlite_path(url)
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def _bogofilter(work: _Work) -> dict[str, Any] | None:
    binary = shutil.which("bogofilter")
    if "bogofilter" in work.plan.skip or binary is None:
        work.doc["notes"].append(
            "bogofilter skipped" if binary else "bogofilter not installed: no side-by-side"
        )
        return None
    work.progress("bogofilter: registering and classifying the same halves")
    wordlists = work.folder / "bogofilter"
    wordlists.mkdir()
    result = time_bogofilter(work.split, wordlists, _run_program, binary=binary)
    return speed_report.bogofilter_json(result)


def _run_program(
    argv: Sequence[str], stdin: bytes, env: Mapping[str, str] | None = None
) -> tuple[int, bytes]:
    done = subprocess.run(list(argv), input=stdin, env=env, capture_output=True, check=False)
    return done.returncode, done.stdout or done.stderr


def _processes(work: _Work) -> list[dict[str, Any]]:
    """One message through a new process, spawn to exit: ``--version`` (start-up alone), the
    pipe filter's direct path (``spamfilter filter`` and ``spamfilter-filter``), ``classify
    -``, and the pipe filter asking a running ``serve`` (``SPAMFILTER_FILTER_URL``,
    the way a mail server's filter step is meant to run per message). Beside them, the
    interpreter importing SQLAlchemy and pydantic-settings and nothing of the project: what
    a process that judges a message on its own spends before any of its own work."""
    raw = typical(work.split.test).path.read_bytes()
    found = []
    with _database(work, "sqlite", trained=True) as url:
        env = environment(url, work.plan.config)
        for command, argv, ok in (
            ("spamfilter --version", [*program("spamfilter"), "--version"], (0,)),
            (
                speed_report.STACK_IMPORTS,
                [sys.executable, "-c", "import sqlalchemy, pydantic_settings"],
                (0,),
            ),
            ("spamfilter filter", [*program("spamfilter"), "filter"], (0, 1, 2)),
            ("spamfilter-filter", program("spamfilter-filter"), (0, 1, 2)),
            ("spamfilter classify -", [*program("spamfilter"), "classify", "-"], (0,)),
        ):
            work.progress(f"process: {command}, {work.plan.runs} runs")
            found.append(_spawns(work, command, argv, env, raw, ok))
        with serve(work.folder, url, 1, work.plan.config) as port:
            command = "spamfilter-filter via serve"
            work.progress(f"process: {command}, {work.plan.runs} runs")
            daemon = {**env, "SPAMFILTER_FILTER_URL": f"http://{HOST}:{port}"}
            found.append(_spawns(work, command, program("spamfilter-filter"), daemon, raw))
    return found


def _files(work: _Work) -> dict[str, Any]:
    """``spamfilter classify -q`` given the classified half's files, one new process on the
    model of the first half: how a folder is classified from the command line, beside
    bogofilter's bulk classify of the same files."""
    command = [*program("spamfilter"), "classify", "-q"]
    with _database(work, "sqlite", trained=True) as url:
        run = functools.partial(_run_program, env=environment(url, work.plan.config))
        work.progress(f"process: spamfilter classify -q, {len(work.split.test)} files")
        batch = time_files(work.split.test, run, command)
    return {"command": "spamfilter classify -q FILES", **speed_report.batch_json(batch)}


def _spawns(
    work: _Work,
    command: str,
    argv: list[str],
    env: dict[str, str],
    raw: bytes,
    ok: tuple[int, ...] = (0, 1, 2),
) -> dict[str, Any]:
    """``argv`` spawned ``work.plan.runs`` times with ``raw`` on its stdin. A pipe filter that
    says it classified directly, the service not answering, counts as a failed run."""

    def spawn() -> int:
        done = subprocess.run(argv, input=raw, env=env, capture_output=True, check=False)
        return -1 if b"classifying directly" in done.stderr else done.returncode

    return speed_report.spawns_json(time_spawns(command, spawn, work.plan.runs, ok))


def _http(work: _Work) -> list[dict[str, Any]]:
    """Each server under load: classify and feedback, and ``GET /healthz``, which judges
    nothing (the rate of uvicorn and FastAPI alone, the ceiling over any endpoint)."""
    classify = [Request("POST", "/v1/classify", p.read_bytes()) for p in _paths(work.split.test)]
    feedback = [
        Request("POST", f"/v1/feedback?label={item.label}", item.path.read_bytes())
        for item in work.split.test
    ]
    found = []
    for backend in work.plan.backends:
        for workers in work.plan.workers:
            with (
                _database(work, backend, trained=True) as url,
                serve(work.folder, url, workers, work.plan.config) as port,
            ):
                for endpoint, requests, warmup in (
                    ("classify", classify, work.plan.warmup),
                    ("feedback", feedback, 0),
                    ("healthz", [Request("GET", "/healthz")], 0),
                ):
                    work.progress(f"http: {backend}, workers {workers}, {endpoint}")
                    if warmup:
                        _load(work, port, requests, warmup, None)
                    load = _load(work, port, requests, work.plan.max_requests, _tally(endpoint))
                    found.append(speed_report.load_json(backend, workers, endpoint, load))
    return found


def _paths(items: Sequence[CorpusItem]) -> list[Path]:
    return [item.path for item in items]


def _load(
    work: _Work, port: int, requests: list[Request], count: int, tally: Tally | None
) -> LoadResult:
    plan = work.plan
    return run_load(HOST, port, requests, plan.connections, count, plan.duration, tally=tally)


def _tally(endpoint: str) -> Tally:
    import json

    key = {"classify": "verdict", "healthz": "status"}.get(endpoint, "outcome")

    def tally(status: int, body: bytes) -> str | None:
        if status != 200:
            return None
        try:
            return str(json.loads(body).get(key))
        except ValueError:
            return "unreadable"

    return tally
