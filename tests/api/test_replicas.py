"""Two ``spamfilter serve`` processes on one database answer as one: what one learns, the
other scores with at once (scale-out behind a load balancer)."""

from __future__ import annotations

import json
import random
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.builders import ham_message, spam_message
from tests.serving import spamfilter_serve


def post(url: str, path: str, body: bytes) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{url}{path}", data=body, headers={"Content-Type": "message/rfc822"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        answer: dict[str, Any] = json.loads(reply.read())
        return answer


def get(url: str, path: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}{path}", timeout=10) as reply:
        answer: dict[str, Any] = json.loads(reply.read())
        return answer


def seen_within(url: str, probe: bytes, before: float, seconds: float) -> float:
    """Seconds until ``url`` scores ``probe`` other than ``before`` (fails past ``seconds``)."""
    started = time.monotonic()
    while True:
        now = post(url, "/v1/classify", probe)["log_odds"]
        waited = time.monotonic() - started
        if now != before:
            return waited
        assert waited < seconds, f"the other process still scores {now} after {waited:.2f} s"
        time.sleep(0.01)


def test_two_processes_on_one_database_see_each_others_learning(
    tmp_path: Path, database_url: str
) -> None:
    settings = {
        "SPAMFILTER_DATABASE_URL": database_url,
        "SPAMFILTER_DECISION__MIN_MESSAGES": "1",
        "SPAMFILTER_TRAINING_MODE": "everything",
        "SPAMFILTER_LOG__VERDICTS": "off",
    }
    rng = random.Random(3)
    # One starts (and migrates the database) before the other.
    with (
        spamfilter_serve(tmp_path, settings) as first,
        spamfilter_serve(tmp_path, settings) as second,
    ):
        for serial in range(10):
            post(first, "/v1/feedback?label=spam", spam_message(rng, 2 * serial))
            post(first, "/v1/feedback?label=ham", ham_message(rng, 2 * serial + 1))
        assert get(second, "/v1/stats") == get(first, "/v1/stats")

        probe = spam_message(rng, 1000)
        before = post(second, "/v1/classify", probe)
        assert before == post(first, "/v1/classify", probe)
        assert post(first, "/v1/feedback?label=spam", probe)["outcome"] == "learned"
        seen_within(second, probe, before["log_odds"], seconds=1.0)
        after = post(second, "/v1/classify", probe)
        assert after == post(first, "/v1/classify", probe)
        assert after["log_odds"] > before["log_odds"]

        # And the other way round: forgotten through the second, gone for the first.
        assert post(second, "/v1/forget", probe)["outcome"] == "forgotten"
        seen_within(first, probe, after["log_odds"], seconds=1.0)
        assert post(first, "/v1/classify", probe)["log_odds"] == before["log_odds"]
        assert get(second, "/v1/stats") == get(first, "/v1/stats")
