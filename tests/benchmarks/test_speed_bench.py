"""The speed benchmark's bookkeeping on a fake clock and small synthetic corpora: the split,
batches and their rates, spawn times, bogofilter driven through a fake runner, the figures
against the targets, the table and the comparison of two runs.

The timed functions cost what the test says (they move the fake clock), so every number is
exact; no test needs bogofilter installed, and none times the real service.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from app.errors import InvalidMessage
from app.evaluation.corpus import CorpusItem, load_corpus
from app.settings.loading import mask_url
from benchmarks import bench_servers, scratch_schema, speed_report, speed_run
from benchmarks.loadgen import LoadResult
from benchmarks.speed_bench import (
    Batch,
    Bulk,
    Spawns,
    Split,
    split_halves,
    time_bogofilter,
    time_classify,
    time_files,
    time_learn,
    time_spawns,
    typical,
)
from tests.builders import ham_message, spam_message


class FakeClock:
    """A clock that only moves when a fake timed function says it costs something."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def spend(self, seconds: float) -> None:
        self.now += seconds


def write_corpus(root: Path, spam: int, ham: int) -> Path:
    """``root/spam`` and ``root/ham`` with generated messages; ham files twice as long."""
    rng = random.Random(7)
    for label, count, build, length in (
        ("spam", spam, spam_message, 20),
        ("ham", ham, ham_message, 40),
    ):
        folder = root / label
        folder.mkdir(parents=True)
        for serial in range(count):
            (folder / f"{serial:04d}.eml").write_bytes(build(rng, serial, length))
    return root


@pytest.fixture
def corpus(tmp_path: Path) -> list[CorpusItem]:
    return load_corpus(write_corpus(tmp_path / "corpus", 5, 6), seed=1)


def test_the_first_half_of_the_seeded_order_is_learned_the_rest_classified(
    corpus: list[CorpusItem],
) -> None:
    split = split_halves(corpus)
    assert len(split.train) == 5 and len(split.test) == 6  # int(11 * 0.5), as the peers do
    assert [*split.train, *split.test] == corpus
    assert {item.label for item in corpus} == {"spam", "ham"}


def test_the_typical_message_is_the_one_of_median_size(tmp_path: Path) -> None:
    items = []
    for size in (50, 10, 40, 20, 30):
        path = tmp_path / f"m{size}"
        path.write_bytes(b"x" * size)
        items.append(CorpusItem("ham", path))
    assert typical(items).path.name == "m30"
    assert typical(items[:4]).path.name == "m20"  # the first of two middles


def test_learning_counts_outcomes_and_failures_over_the_whole_batch_time(
    corpus: list[CorpusItem],
) -> None:
    clock = FakeClock()
    prepared: list[Path] = []
    batches: list[list[tuple[Any, str]]] = []

    def prepare(path: Path) -> Any:
        clock.spend(0.001)
        prepared.append(path)
        if len(prepared) == 3:
            raise InvalidMessage("not a message")
        return path.read_bytes()

    def learn(batch: Sequence[tuple[Any, str]]) -> list[list[str]]:
        clock.spend(0.001 * len(batch))
        batches.append(list(batch))
        return [["learned" if label == "spam" else "skipped" for _, label in batch]]

    items = corpus[:5]
    batch = time_learn(items, learn, prepare, batch=2, clock=clock)
    assert prepared == [item.path for item in items]
    kept = [(item.path.read_bytes(), item.label) for i, item in enumerate(items) if i != 2]
    assert batches == [kept[:2], kept[2:]]
    spam = sum(1 for i, item in enumerate(items) if item.label == "spam" and i != 2)
    assert batch.outcomes == {k: v for k, v in {"learned": spam, "skipped": 4 - spam}.items() if v}
    assert batch.failures == 1
    assert batch.n == 5
    assert batch.seconds == pytest.approx(0.009)
    assert batch.ms_per_message == pytest.approx(1.8)


def test_an_unreadable_file_is_a_failure_not_the_end(tmp_path: Path) -> None:
    items = [CorpusItem("spam", tmp_path / "gone"), CorpusItem("ham", tmp_path / "gone2")]
    batch = time_classify(items, lambda raw: "ham", clock=FakeClock())
    assert batch.failures == 2 and batch.outcomes == {}


def test_classifying_counts_gold_and_verdict_pairs(corpus: list[CorpusItem]) -> None:
    clock = FakeClock()

    def classify(raw: bytes) -> str:
        clock.spend(0.001)
        return "unsure" if b"winner" in raw.lower() and len(raw) % 2 else "ham"

    batch = time_classify(corpus, classify, clock=clock)
    assert sum(batch.outcomes.values()) == len(corpus)
    assert all(key.split(":")[0] in ("spam", "ham") for key in batch.outcomes)
    assert batch.seconds == pytest.approx(0.001 * len(corpus))


def test_an_empty_batch_has_no_rate() -> None:
    batch = Batch(0, 0.0)
    assert batch.ms_per_message != batch.ms_per_message  # NaN
    assert batch.per_second != batch.per_second


def test_spawns_are_timed_one_by_one_and_bad_exits_counted() -> None:
    clock = FakeClock()
    costs = iter([(0.05, 0), (0.03, 1), (0.04, 3), (0.10, 2)])

    def spawn() -> int:
        seconds, code = next(costs)
        clock.spend(seconds)
        return code

    spawns = time_spawns("spamfilter-filter", spawn, 4, ok_codes=(0, 1, 2), clock=clock)
    assert spawns.seconds == pytest.approx([0.05, 0.03, 0.04, 0.10])
    assert spawns.failures == 1
    assert spawns.best_ms == pytest.approx(30.0)
    assert spawns.median_ms == pytest.approx(45.0)


class FakeBogofilter:
    """Records every command with its stdin; classifies a name by its label folder."""

    def __init__(self, clock: FakeClock, wordlists: Path, drop_last: bool = False) -> None:
        self.clock = clock
        self.wordlists = wordlists
        self.calls: list[tuple[list[str], list[str]]] = []
        self.drop_last = drop_last

    def __call__(self, argv: Sequence[str], stdin: bytes) -> tuple[int, bytes]:
        names = stdin.decode().splitlines()
        self.calls.append((list(argv), names))
        if argv[1:] == ["-V"]:
            return 0, b"bogofilter version 1.2.5\n    Database: Berkeley DB\n"
        self.clock.spend(0.0001 * len(names))
        if "-T" not in argv:
            (self.wordlists / "wordlist.db").write_bytes(b"w" * 4096)
            return 0, b""
        lines = [f"{n} {'S 0.999' if '/spam/' in n else 'U 0.5'}" for n in names]
        return 2, "".join(f"{line}\n" for line in lines[: -1 if self.drop_last else None]).encode()


def test_bogofilter_registers_each_label_in_bulk_then_classifies_the_rest(
    corpus: list[CorpusItem], tmp_path: Path
) -> None:
    clock = FakeClock()
    split = split_halves(corpus)
    fake = FakeBogofilter(clock, tmp_path)
    result = time_bogofilter(split, tmp_path, fake, binary="bogo", clock=clock)
    base = ["bogo", "-C", "-d", str(tmp_path)]
    spam = [str(i.path) for i in split.train if i.label == "spam"]
    ham = [str(i.path) for i in split.train if i.label == "ham"]
    assert fake.calls[1:] == [
        ([*base, "-s", "-b"], spam),
        ([*base, "-n", "-b"], ham),
        ([*base, "-b", "-T"], [str(i.path) for i in split.test]),
    ]
    assert result.version == "bogofilter version 1.2.5"
    assert result.learn.n == 5 and result.learn.seconds == pytest.approx(0.0005)
    assert result.classify.n == 6 and result.classify.seconds == pytest.approx(0.0006)
    expected = {f"{i.label}:{'spam' if i.label == 'spam' else 'unsure'}" for i in split.test}
    assert set(result.classify.outcomes) == expected
    assert result.classify.failures == 0
    assert result.db_bytes == 4096


def test_a_message_bogofilter_gives_no_line_for_is_a_failure(
    corpus: list[CorpusItem], tmp_path: Path
) -> None:
    split = split_halves(corpus)
    fake = FakeBogofilter(FakeClock(), tmp_path, drop_last=True)
    result = time_bogofilter(split, tmp_path, fake, clock=FakeClock())
    assert result.classify.failures == 1
    assert sum(result.classify.outcomes.values()) == len(split.test) - 1


def test_a_folder_is_classified_by_one_process_given_every_file(
    corpus: list[CorpusItem],
) -> None:
    """Every file on one command line, the whole run timed; each verdict line (path last,
    spaces and all) is matched to its file, and a file without one is a failure."""
    clock = FakeClock()
    calls: list[list[str]] = []
    odd = corpus[0].path.with_name("a name with spaces\x0cand a form feed.eml")
    corpus[0].path.rename(odd)
    items = [dataclasses.replace(corpus[0], path=odd), *corpus[1:]]

    def fake(argv: Sequence[str], stdin: bytes) -> tuple[int, bytes]:
        calls.append(list(argv))
        clock.spend(0.5)
        lines = [f"spam      +12.500 0.999996  {path}" for path in argv[3:-1]]  # the last: none
        return 1, "\n".join(lines).encode()

    batch = time_files(items, fake, ["spamfilter", "classify", "-q"], clock=clock)
    assert calls == [["spamfilter", "classify", "-q", *(str(item.path) for item in items)]]
    assert batch.n == len(items) and batch.seconds == pytest.approx(0.5)
    assert batch.failures == 1
    expected = {f"{item.label}:spam" for item in items[:-1]}
    assert set(batch.outcomes) == expected and sum(batch.outcomes.values()) == len(items) - 1
    # A run that stopped (exit 75: the database is down) classified nothing it can vouch for.
    stopped = time_files(corpus, lambda argv, stdin: (75, b"error: database"), ["x"], clock)
    assert stopped.failures == len(corpus) and not stopped.outcomes


def test_a_folder_run_is_judged_beside_bogofilter() -> None:
    doc = _doc()
    doc["files"] = {"command": "spamfilter classify -q FILES", **_files_json(1000, 1.2, 0)}
    found = {fig.key: fig for fig in speed_report.figures(doc)}
    assert found["files.sqlite"].value == pytest.approx(1.2)
    assert found["files_ratio.sqlite"].value == pytest.approx(3.0)  # bogofilter: 0.4 ms
    assert found["files_ratio.sqlite"].met is True  # at most 4x
    doc["files"] = {"command": "spamfilter classify -q FILES", **_files_json(1000, 2.0, 0)}
    assert {f.key: f for f in speed_report.figures(doc)}["files_ratio.sqlite"].met is False
    doc["files"] = {"command": "spamfilter classify -q FILES", **_files_json(1000, 1.2, 3)}
    failing = {f.key: f for f in speed_report.figures(doc)}["files_ratio.sqlite"]
    assert failing.met is False  # fast, but three files got no verdict
    assert "spamfilter classify -q FILES: (gold:verdict)" in speed_report.table(doc)
    alone = {f.key: f for f in speed_report.figures({**doc, "bogofilter": None})}
    assert alone["files_ratio.sqlite"].met is None


def _files_json(n: int, seconds: float, failures: int) -> dict[str, Any]:
    return speed_report.batch_json(Batch(n, seconds, {"ham:ham": n - failures}, failures))


def _doc(
    *, bogo: bool = True, learn_s: float = 2.0, http_rate: float = 1200.0, differing: int = 0
) -> dict[str, Any]:
    bulk = Bulk(
        Batch(1000, learn_s, {"learned": 600, "skipped": 400}),
        Batch(1000, 1.0, {"spam:spam": 1000}),
        db_bytes=2_000_000,
        checked=1000,
        differing=differing,
        read=Batch(1000, 0.6, {"spam:read": 1000}),
    )
    load = LoadResult(16, seconds=10.0, latencies=[0.001] * 98 + [0.030, 0.040])
    load.statuses[200] = int(http_rate * 10)
    load.tallies["ham"] = 5
    doc: dict[str, Any] = {
        "bench": "speed",
        "measured": {"corpus": "x", "cores": 2},
        "bulk": {"sqlite": speed_report.bulk_json(bulk)},
        "bogofilter": None,
        "process": [speed_report.spawns_json(Spawns("spamfilter-filter", [0.04, 0.06, 0.05]))],
        "http": [speed_report.load_json("sqlite", 1, "classify", load)],
    }
    if bogo:
        doc["bogofilter"] = {
            "version": "1.2.5",
            "learn": speed_report.batch_json(Batch(1000, 0.5)),
            "classify": speed_report.batch_json(Batch(1000, 0.4)),
            "db_bytes": 1_000_000,
        }
    return doc


def test_figures_judge_each_target() -> None:
    found = {fig.key: fig for fig in speed_report.figures(_doc())}
    assert found["learn.sqlite"].value == 500.0 and found["learn.sqlite"].met is False
    assert found["classify.sqlite"].value == 1.0
    assert found["classify_ratio.sqlite"].value == pytest.approx(2.5)
    assert found["classify_ratio.sqlite"].met is True  # at most 3x bogofilter
    assert found["db.sqlite"].met is False  # 2 MB against bogofilter's 1 MB
    assert found["process.spamfilter-filter"].value == 50.0
    assert found["process.spamfilter-filter"].met is True  # the median, under 200 ms
    assert found["http.sqlite.w1.classify"].value == 1200.0
    assert found["http.sqlite.w1.classify"].met is True
    assert found["http.sqlite.w1.classify.p99"].value == 30.0  # nearest rank of 100
    assert found["http.sqlite.w1.classify.p99"].met is False


def test_reading_alone_is_set_beside_bogofilter_with_no_target() -> None:
    found = {fig.key: fig for fig in speed_report.figures(_doc())}
    assert found["read.sqlite"].value == pytest.approx(0.6)
    assert found["read_ratio.sqlite"].value == pytest.approx(1.5)  # 0.6 against 0.4 ms
    assert found["read_ratio.sqlite"].shown == "1.50x"
    assert (found["read_ratio.sqlite"].target, found["read_ratio.sqlite"].met) == ("", None)
    alone = {fig.key: fig for fig in speed_report.figures(_doc(bogo=False))}
    assert alone["read_ratio.sqlite"].shown == "(no bogofilter)"
    older = _doc()
    older["bulk"]["sqlite"]["read"] = None  # not measured (or saved before it was)
    keys = [fig.key for fig in speed_report.figures(older)]
    assert "read.sqlite" not in keys and "read_ratio.sqlite" not in keys


def test_the_empty_get_is_shown_with_no_target() -> None:
    load = LoadResult(16, seconds=10.0, latencies=[0.001] * 100)
    load.statuses[200] = 50_000
    load.tallies["ok"] = 50_000
    doc = {"http": [speed_report.load_json("sqlite", 2, "healthz", load)]}
    found = {fig.key: fig for fig in speed_report.figures(doc)}
    rate = found["http.sqlite.w2.healthz"]
    assert (rate.value, rate.shown, rate.target, rate.met) == (5000.0, "5,000 req/s", "", None)
    assert found["http.sqlite.w2.healthz.p99"].met is None
    assert speed_run._tally("healthz")(200, b'{"status":"ok"}') == "ok"
    assert speed_run._tally("classify")(200, b'{"verdict":"spam"}') == "spam"


def test_any_score_that_differs_from_the_uncached_path_fails_the_check() -> None:
    same = {fig.key: fig for fig in speed_report.figures(_doc())}["plain_check.sqlite"]
    assert (same.met, same.shown) == (True, "1,000 of 1,000 identical")
    one_off = {fig.key: fig for fig in speed_report.figures(_doc(differing=1))}
    assert one_off["plain_check.sqlite"].met is False
    older = _doc()
    del older["bulk"]["sqlite"]["plain_check"]  # a result saved before the check existed
    found = {fig.key: fig for fig in speed_report.figures(older)}["plain_check.sqlite"]
    assert (found.met, found.shown) == (None, "(not checked)")


def test_without_bogofilter_its_targets_are_not_judged() -> None:
    found = {fig.key: fig for fig in speed_report.figures(_doc(bogo=False))}
    assert found["classify_ratio.sqlite"].met is None
    assert found["db.sqlite"].met is None
    assert "bogofilter.classify" not in found


def test_the_table_shows_settings_targets_and_details() -> None:
    text = speed_report.table(_doc())
    assert "corpus          x" in text
    row = next(line for line in text.splitlines() if line.startswith("classify vs bogofilter"))
    assert row.split()[-3:] == ["3x", "bogofilter", "yes"] and "2.50x" in row
    assert "bulk sqlite: learn learned=600, skipped=400" in text
    assert "http sqlite w1 classify: 12,000 answered" in text


def test_compare_sets_each_figure_of_b_beside_a() -> None:
    before, after = _doc(learn_s=2.0), _doc(learn_s=0.5, http_rate=600.0)
    text = speed_report.compare(before, after)
    learn = next(line for line in text.splitlines() if line.startswith("bulk learn, sqlite"))
    assert "500 msg/s" in learn and "2,000 msg/s" in learn and "4.00" in learn
    assert "NO -> yes" in learn
    size = next(line for line in text.splitlines() if line.startswith("database size, sqlite"))
    assert size.split()[3:8] == ["2.0", "MB", "2.0", "MB", "1.00"]
    doc = speed_report.compare_json(before, after)
    assert doc["http.sqlite.w1.classify"]["b_over_a"] == 0.5
    assert doc["http.sqlite.w1.classify"]["met"] == [True, False]
    json.dumps(doc)


def test_a_plan_loads_the_corpus_and_refuses_one_message(tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "c", 3, 3)
    plan = speed_run.Plan(corpus=root, settings=_settings(), limit=4)
    split = speed_run.load_split(plan)
    assert isinstance(split, Split) and len(split.train) == 2 and len(split.test) == 2
    with pytest.raises(bench_servers.BenchError, match="at least 2"):
        speed_run.load_split(speed_run.Plan(corpus=root, settings=_settings(), limit=1))


def _settings() -> Any:
    from app.settings.schema import Settings

    return Settings(_env_file=None, database_url="sqlite:///unused.db")


def test_processes_never_ask_a_server_and_use_the_bench_database(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPAMFILTER_FILTER_URL", "http://127.0.0.1:8000")
    monkeypatch.setenv("SPAMFILTER_DATABASE_URL", "sqlite:///configured.db")
    env = bench_servers.environment("sqlite:///tmp/bench.db")
    assert "SPAMFILTER_FILTER_URL" not in env
    assert env["SPAMFILTER_DATABASE_URL"] == "sqlite:///tmp/bench.db"


def test_postgres_urls_get_a_schema_of_their_own_and_never_print_a_password() -> None:
    url = "postgresql://bench:s3cret@127.0.0.1:5432/db?sslmode=disable"
    assert scratch_schema.is_postgres(url)
    assert scratch_schema.is_postgres("postgresql+psycopg://h/db")
    assert not scratch_schema.is_postgres("sqlite:///x.db")
    assert mask_url(url) == "postgresql://bench:***@127.0.0.1:5432/db?sslmode=disable"
    scoped = scratch_schema.in_schema(url, "spamfilter_bench_1_ab")
    assert scoped.startswith("postgresql://bench:s3cret@127.0.0.1:5432/db?")
    assert "sslmode=disable" in scoped
    assert "options=-csearch_path%3Dspamfilter_bench_1_ab" in scoped
    assert "application_name=spamfilter_bench_1_ab" in scoped
    assert scratch_schema.conninfo("postgresql+psycopg://h/db") == "postgresql://h/db"


def test_a_server_is_ready_once_every_worker_has_started(tmp_path: Path) -> None:
    """/readyz answers as soon as one worker listens; the wait also needs every worker's
    start-up line, or the load's keep-alive connections would all go to the first."""
    import http.server
    import threading

    class Ready(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer((bench_servers.HOST, 0), Ready)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    log = tmp_path / "serve.log"
    log.write_bytes(b"INFO: Application startup complete.\n")
    second = threading.Timer(
        0.5, lambda: log.write_bytes(log.read_bytes() + b"INFO: Application startup complete.\n")
    )

    class Running:
        returncode = None

        def poll(self) -> None:
            return None

    try:
        second.start()
        start = time.monotonic()
        bench_servers.wait_ready(server.server_address[1], Running(), log, workers=2)  # type: ignore[arg-type]
        assert time.monotonic() - start >= 0.45
        assert log.read_bytes().count(bench_servers.STARTED) == 2
    finally:
        second.cancel()
        server.shutdown()


def test_every_command_the_bench_spawns_gets_its_settings_file(
    corpus: list[CorpusItem], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new processes (``_processes``, ``_files``) and the servers (``_processes``'s
    filter via serve, ``_http``) are all given the plan's settings file: a spawn site that
    left it out would time a command judging with other settings than the bulk rows."""
    import subprocess
    from collections.abc import Iterator
    from contextlib import contextmanager

    config = tmp_path / "bench.toml"
    config.write_text("[model]\ntop_tokens = 17\n", encoding="utf-8")
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "trained.db").write_bytes(b"")
    plan = speed_run.Plan(corpus=tmp_path, settings=_settings(), config=config, runs=1)
    work = speed_run._Work(plan, split_halves(corpus), folder, lambda _line: None, {})
    spawned: list[str | None] = []
    served: list[Path | None] = []

    def run(argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        spawned.append(kwargs["env"].get("SPAMFILTER_CONFIG"))
        return subprocess.CompletedProcess(list(argv), 0, b"", b"")

    @contextmanager
    def serve(_folder: Path, _url: str, _workers: int, config: Path | None = None) -> Iterator[int]:
        served.append(config)
        yield 1

    monkeypatch.setattr(speed_run.subprocess, "run", run)
    monkeypatch.setattr(speed_run, "serve", serve)
    monkeypatch.setattr(speed_run, "_load", lambda *_args: None)
    monkeypatch.setattr(speed_report, "load_json", lambda *_args: {})
    speed_run._processes(work)
    speed_run._files(work)
    speed_run._http(work)
    # Four commands, the libraries' imports alone and the filter via serve, a run each
    # (``runs=1``); then the folder row.
    assert len(spawned) == 6 + 1
    assert set(spawned) == {str(config.resolve())}
    assert len(served) == 1 + len(plan.workers) and set(served) == {config}
