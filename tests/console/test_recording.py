"""The recorder (bounded, batched) and the history it writes (retention, corrections)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from app.api.console.health import probe_milter, probe_spamd
from app.service import SpamFilter
from app.service.events import Event
from app.service.history import (
    CORRECTION,
    FALSE_POSITIVE,
    MISSED_SPAM,
    History,
    bucket_of,
    percentile,
)
from app.settings.schema import Settings
from app.storage.activity import EntryFilter
from app.storage.engine import make_engine
from app.storage.store import Store
from app.telemetry.recorder import Recorder

NOW = datetime(2026, 11, 25, 12, 0, 30, tzinfo=UTC)


def event(
    call: str,
    outcome: str,
    digest: str = "d1",
    label: str | None = None,
    at: datetime = NOW,
    seconds: float = 0.004,
    adapter: str = "spamd",
) -> Event:
    return Event(
        time=at, call=call, adapter=adapter, user=None, outcome=outcome, seconds=seconds,
        digest=digest, label=label, log_odds=3.0, form="rfc822", sender="s@example.org",
        subject="Hello", tokens={"hello": 1, "subject:hello": 1}, clues=(("hello", 1.5),),
    )  # fmt: skip


def test_the_recorder_buffers_flushes_in_batches_and_stays_bounded() -> None:
    batches: list[Sequence[Event]] = []
    recorder = Recorder(batches.append, interval=3600, batch=3, capacity=4)
    for _ in range(6):
        recorder.observe(event("classify", "ham"))
    assert batches == [] and recorder.pending() == 4 and recorder.dropped == 2
    assert recorder.flush() == 4 and len(batches[0]) == 4 and recorder.pending() == 0
    assert recorder.flush() == 0


def test_the_recorder_thread_flushes_once_a_batch_waits() -> None:
    done = threading.Event()
    recorder = Recorder(lambda events: done.set(), interval=3600, batch=2, capacity=10)
    recorder.start()
    try:
        recorder.observe(event("classify", "ham"))
        recorder.observe(event("classify", "ham"))
        assert done.wait(10)
    finally:
        recorder.close()


def test_a_failing_write_loses_the_batch_but_not_the_recorder() -> None:
    def broken(events: Sequence[Event]) -> None:
        raise RuntimeError("database down")

    recorder = Recorder(broken, interval=3600, batch=100, capacity=10)
    recorder.observe(event("classify", "ham"))
    assert recorder.flush() == 1 and recorder.pending() == 0


def history_of(service: SpamFilter) -> History:
    return service.history


def test_corrections_are_counted_once_per_message(service: SpamFilter) -> None:
    history = history_of(service)
    history.record([event("classify", "spam", "a"), event("classify", "unsure", "b")], NOW)
    history.record([event("learn", "learned", "a", "ham"), event("learn", "learned", "b", "spam"),
                    event("learn", "unchanged", "a", "ham"), event("learn", "learned", "c", "ham")],
                   NOW)  # fmt: skip
    rows = history.minutes(NOW - timedelta(hours=1))
    corrections = {r.outcome: r.count for r in rows if r.action == CORRECTION}
    assert corrections == {FALSE_POSITIVE: 1, MISSED_SPAM: 1}
    learned = {e.digest: e.learned for e in history.entries(EntryFilter())}
    assert learned == {"a": "ham", "b": "spam"}
    history.record([event("forget", "forgotten", "a")], NOW)
    assert {e.digest: e.learned for e in history.entries(EntryFilter())}["a"] is None


def test_per_minute_counts_sum_over_processes_and_buckets(
    service: SpamFilter, settings: Settings
) -> None:
    other = history_of(service)
    engine = make_engine(settings.database_url)  # a second process's writer
    one = History(Store(engine), settings)
    other.record([event("classify", "ham", seconds=0.004)], NOW)
    one.record([event("classify", "ham", seconds=0.2), event("classify", "ham", seconds=0.2)], NOW)
    other.record([event("classify", "ham", seconds=0.004)], NOW)
    engine.dispose()
    (row,) = other.minutes(NOW - timedelta(minutes=5))
    assert (row.count, round(row.ms_total, 6)) == (4, 408.0)
    assert row.latency[bucket_of(4)] == 2 and row.latency[bucket_of(200)] == 2
    assert percentile(row.latency, 0.5) == 5.0
    assert 100 < (percentile(row.latency, 0.99) or 0) <= 250


def test_history_is_bounded_by_count_and_age_and_drops_old_tokens(
    make_settings: object, make_service: object
) -> None:
    settings = make_settings(  # type: ignore[operator]
        console={"history_entries": 3, "history_days": 1, "keep_tokens_hours": 1.5}
    )
    service: SpamFilter = make_service(settings)  # type: ignore[operator]
    history = service.history
    old = NOW - timedelta(days=2)
    history.record([event("classify", "ham", "old", at=old)], old)
    history.record([event("classify", "ham", f"m{i}", at=NOW - timedelta(hours=3 - i))
                    for i in range(4)], NOW)  # fmt: skip
    kept = history.entries(EntryFilter())
    assert [e.digest for e in kept] == ["m3", "m2", "m1"]
    with_tokens = {e.digest: history.entry(e.id)[1] is not None for e in kept}  # type: ignore[index]
    assert with_tokens == {"m3": True, "m2": True, "m1": False}


def test_daemon_probes_tell_running_from_not_running(tmp_path: object) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(100)
            conn.sendall(b"SPAMD/1.5 0 PONG\r\n")

    thread = threading.Thread(target=answer)
    thread.start()
    assert probe_spamd("127.0.0.1", port).state == "running"
    thread.join()
    listener.close()
    assert probe_spamd("127.0.0.1", port).state == "not running"
    assert probe_milter(f"unix:{tmp_path}/missing.sock").state == "not running"
    assert probe_milter(f"inet:{port}@127.0.0.1").state == "not running"


def test_a_daemons_service_records_its_calls_under_its_name(
    make_settings: object, make_service: object
) -> None:
    from app.bootstrap import build_service
    from tests.api.samples import SPAMMY

    settings: Settings = make_settings()  # type: ignore[operator]
    for daemon in ("spamd", "milter"):
        service = build_service(settings, adapter=daemon)
        service.classify(SPAMMY)
        service.close()  # flushes what the recorder still holds
    reader: SpamFilter = make_service(settings)  # type: ignore[operator]
    assert sorted(e.adapter for e in reader.history.entries(EntryFilter())) == ["milter", "spamd"]
    evaluation = build_service(settings)  # a one-shot service records only when asked
    evaluation.classify(SPAMMY)
    evaluation.close()
    assert len(reader.history.entries(EntryFilter())) == 2


def test_feedback_through_the_cli_is_recorded_when_it_exits(
    make_settings: object, make_service: object
) -> None:
    import subprocess
    import sys

    from app.bootstrap import build_service
    from tests.api.samples import HAM, SPAM
    from tests.environment import without_settings

    settings: Settings = make_settings(  # type: ignore[operator]
        decision={"min_messages": 1, "ham_log_odds": 0.0, "spam_log_odds": 0.0}
    )
    trained: SpamFilter = make_service(settings)  # type: ignore[operator]
    for raw in HAM:
        trained.learn(raw, "ham")
    for raw in SPAM:
        trained.learn(raw, "spam")
    spamd = build_service(settings, adapter="spamd")
    judged = b"From: x@win.biz\nSubject: Prize\n\nClaim your free prize money now.\n"
    assert spamd.classify(judged).verdict.value == "spam"
    spamd.close()

    env = without_settings(
        {"SPAMFILTER_DATABASE_URL": settings.database_url, "SPAMFILTER_TRAINING_MODE": "everything"}
    )
    learned = subprocess.run(
        [sys.executable, "-c", "from app.cli import main; main()", "learn", "--label", "ham", "-"],
        input=judged, env=env, capture_output=True, timeout=60,
    )  # fmt: skip
    assert learned.returncode == 0, learned.stderr.decode()
    rows = trained.history.minutes(datetime.now(UTC) - timedelta(hours=1))
    assert {(r.adapter, r.action, r.outcome) for r in rows if r.action != "classify"} >= {
        ("cli", "learn", "learned"),
        ("cli", CORRECTION, FALSE_POSITIVE),
    }
    (entry,) = trained.history.entries(EntryFilter(adapter="spamd"))
    assert entry.learned == "ham"
