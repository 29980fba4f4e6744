"""The console's graphs as numbers: per-period series from the per-minute counts.

Each chart is a JSON object ``{"title", "unit", "x": [epoch seconds], "series": [{"label",
"values"}]}`` that ``console.js`` draws with uPlot; every period in the window is present,
empty ones as zeros (latency: null), so gaps show as such.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from app.service.history import (
    CORRECTION,
    FALSE_POSITIVE,
    MISSED_SPAM,
    History,
    MinuteRow,
    minute_of,
    percentile,
)

Chart = dict[str, Any]
VERDICTS = ("ham", "unsure", "spam", "error")
QUANTILES = ((0.5, "p50"), (0.95, "p95"), (0.99, "p99"))


def window(
    history: History, now: datetime, minutes: int, width: int
) -> tuple[list[int], list[MinuteRow]]:
    """The period starts (minutes) of the last ``minutes`` in periods of ``width``, and the
    counts in them."""
    last = minute_of(now) // width * width
    count = max(minutes // width, 1)
    starts = [last - width * i for i in range(count - 1, -1, -1)]
    return starts, history.minutes(datetime.fromtimestamp(starts[0] * 60, now.tzinfo), width)


def traffic_charts(starts: Sequence[int], rows: Sequence[MinuteRow], width: int) -> list[Chart]:
    """Classify calls per minute by verdict and by adapter, feedback per minute, and latency
    percentiles of classify."""
    index = {start: i for i, start in enumerate(starts)}
    by_verdict: dict[str, list[float]] = {v: [0.0] * len(starts) for v in VERDICTS}
    by_adapter: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(starts))
    feedback: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(starts))
    buckets: dict[int, list[int]] = {}
    for row in rows:
        i = index.get(row.minute)
        if i is None:
            continue
        rate = row.count / width
        if row.action == "classify":
            by_verdict.setdefault(row.outcome, [0.0] * len(starts))[i] += rate
            by_adapter[row.adapter][i] += rate
            merged = buckets.setdefault(i, [0] * len(row.latency))
            for k, n in enumerate(row.latency):
                merged[k] += n
        elif row.action in ("learn", "forget"):
            feedback[f"{row.action} {row.outcome}"][i] += rate
    x = [start * 60 for start in starts]
    latency = {
        name: [
            _rounded(percentile(buckets[i], q)) if i in buckets else None
            for i in range(len(starts))
        ]
        for q, name in QUANTILES
    }
    return [
        _chart("Messages per minute by verdict", "msg/min", x, by_verdict),
        _chart("Messages per minute by adapter", "msg/min", x, dict(sorted(by_adapter.items()))),
        _chart("Feedback per minute", "calls/min", x, dict(sorted(feedback.items()))),
        _chart("Classify latency", "ms", x, latency),
    ]


def accuracy_rows(starts: Sequence[int], rows: Sequence[MinuteRow]) -> list[dict[str, int]]:
    """Per day: messages judged, feedback given, false positives and missed spam."""
    index = {start: i for i, start in enumerate(starts)}
    days = [
        {"day": start * 60, "judged": 0, "feedback": 0, FALSE_POSITIVE: 0, MISSED_SPAM: 0}
        for start in starts
    ]
    for row in rows:
        i = index.get(row.minute)
        if i is None:
            continue
        if row.action == "classify" and row.outcome != "error":
            days[i]["judged"] += row.count
        elif row.action == "learn" and row.outcome != "error":
            days[i]["feedback"] += row.count
        elif row.action == CORRECTION and row.outcome in (FALSE_POSITIVE, MISSED_SPAM):
            days[i][row.outcome] += row.count
    return days


def accuracy_chart(days: Sequence[dict[str, int]]) -> Chart:
    """Errors reported through feedback, per day."""
    x = [d["day"] for d in days]
    series = {
        "ham judged spam": [float(d[FALSE_POSITIVE]) for d in days],
        "spam that got through": [float(d[MISSED_SPAM]) for d in days],
    }
    return _chart("Errors corrected by feedback, per day", "messages", x, series)


def _chart(
    title: str,
    unit: str,
    x: list[int],
    series: dict[str, list[float | None]] | dict[str, list[float]],
) -> Chart:
    return {
        "title": title,
        "unit": unit,
        "x": x,
        "series": [{"label": k, "values": [_rounded(v) for v in vs]} for k, vs in series.items()],
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
