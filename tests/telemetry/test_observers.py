"""The service's events: one per call, what they carry, and the verdict log and metrics."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from app.bootstrap import observers, verdict_log_target
from app.errors import InvalidLabel, InvalidMessage
from app.service import SpamFilter
from app.service.events import Event
from app.settings.schema import Settings
from app.storage.engine import make_engine
from app.storage.store import Store
from app.telemetry.collectors import ServiceMetrics
from app.telemetry.journal import LOGGER, line, open_journal
from tests.builders import make_message

MakeSettings = Callable[..., Settings]
SECRET = "a-word-that-must-never-be-logged"


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def observe(self, event: Event) -> None:
        self.events.append(event)


class Broken:
    def observe(self, event: Event) -> None:
        raise RuntimeError("observer bug")


@pytest.fixture
def watched(settings: Settings) -> Iterator[tuple[SpamFilter, Recorder]]:
    recorder = Recorder()
    engine = make_engine(settings.database_url)
    from app.storage.migrate import upgrade

    upgrade(engine)
    service = SpamFilter(Store(engine), settings, [Broken(), recorder], adapter="spamd")
    yield service, recorder
    service.close()


def message(serial: int) -> bytes:
    return make_message(
        f"hello {serial}", f"{SECRET} body\n", message_id=f"<m{serial}@example.org>"
    )


def test_one_event_per_call_with_what_identifies_the_message(
    watched: tuple[SpamFilter, Recorder],
) -> None:
    service, recorder = watched
    learned = service.learn(message(1), "spam", user="Ann@Example.org")
    judged = service.classify(message(1), user="ann@example.org")
    service.forget(message(1))
    assert [(e.call, e.outcome) for e in recorder.events] == [
        ("learn", "learned"),
        ("classify", judged.verdict.value),
        ("forget", "forgotten"),  # ann's feedback trained the site-wide model too
    ]
    first, second = recorder.events[:2]
    assert (first.adapter, first.user, first.label) == ("spamd", "ann@example.org", "spam")
    assert first.message_id == "<m1@example.org>" and first.digest == learned.digest
    assert second.log_odds == judged.log_odds and second.seconds >= 0
    assert all(e.error is None for e in recorder.events)


def test_a_failed_call_is_reported_with_its_error_code_and_raised(
    watched: tuple[SpamFilter, Recorder],
) -> None:
    service, recorder = watched
    with pytest.raises(InvalidLabel):
        service.learn(message(2), "eggs")
    with pytest.raises(InvalidMessage):
        service.classify(b"\x00\x01 not mail")
    assert [(e.call, e.outcome, e.error) for e in recorder.events] == [
        ("learn", "error", "invalid_label"),
        ("classify", "error", "invalid_message"),
    ]


def test_the_log_line_is_json_without_the_content(
    watched: tuple[SpamFilter, Recorder], tmp_path: Path
) -> None:
    service, recorder = watched
    service.classify(message(3))
    path = tmp_path / "verdicts.log"
    journal = open_journal(str(path))
    journal.observe(recorder.events[0])
    logging.getLogger(LOGGER).handlers[0].flush()
    text = path.read_text()
    assert SECRET not in text and text.endswith("\n")
    doc = json.loads(text)
    assert list(doc) == [
        "time", "adapter", "call", "message_id", "digest", "outcome", "log_odds", "ms", "form"
    ]  # fmt: skip
    assert doc["time"].endswith("Z") and doc["message_id"] == "<m3@example.org>"
    assert json.loads(line(recorder.events[0])) == doc


def test_metrics_count_by_call_adapter_and_outcome(
    watched: tuple[SpamFilter, Recorder],
) -> None:
    service, recorder = watched
    service.learn(message(4), "ham")
    with pytest.raises(InvalidMessage):
        service.classify(b"\x00")
    registry = CollectorRegistry()
    metrics = ServiceMetrics(registry)
    for event in recorder.events:
        metrics.observe(event)
    sample = registry.get_sample_value
    assert (
        sample(
            "spamfilter_messages_total", {"call": "learn", "adapter": "spamd", "outcome": "learned"}
        )
        == 1
    )
    assert (
        sample(
            "spamfilter_errors_total",
            {"call": "classify", "adapter": "spamd", "error": "invalid_message"},
        )
        == 1
    )
    assert (
        sample("spamfilter_call_duration_seconds_count", {"call": "learn", "adapter": "spamd"}) == 1
    )


@pytest.mark.parametrize(
    ("setting", "adapter", "target"),
    [
        ("auto", "http", "stderr"),
        ("auto", "spamd", "stderr"),
        ("auto", "milter", "stderr"),
        ("auto", "pipe", None),
        ("auto", "cli", None),
        ("off", "http", None),
        ("stderr", "cli", "stderr"),
        ("/var/log/spamfilter/verdicts.log", "pipe", "/var/log/spamfilter/verdicts.log"),
    ],
)
def test_where_the_verdict_log_goes(setting: str, adapter: str, target: str | None) -> None:
    assert verdict_log_target(setting, adapter) == target


def test_observers_follow_the_settings(make_settings: MakeSettings) -> None:
    assert observers(make_settings(log={"verdicts": "off"}), "http") == []
    chosen = observers(make_settings(), "http", CollectorRegistry())
    assert [type(o).__name__ for o in chosen] == ["Journal", "ServiceMetrics"]
