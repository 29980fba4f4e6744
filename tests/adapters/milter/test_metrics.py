"""The milter daemon's Prometheus port and verdict log, with the real miltertest."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from tests.adapters.milter.test_miltertest import MilterSettings, Miltertest, StartMilter
from tests.adapters.pipe.daemons import free_port


def test_the_milter_serves_its_metrics_and_logs_each_verdict(
    milter_settings: MilterSettings,
    start_milter: StartMilter,
    miltertest: Miltertest,
    messages: dict[str, Path],
    unix_socket: str,
) -> None:
    port = free_port()
    settings = milter_settings(milter={"metrics_port": port}, log={"verdicts": "stderr"})
    milter = start_milter(settings, unix_socket)
    miltertest("accept.lua", milter.socket, milter.output(), HAM=messages["HAM"])
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    assert 'spamfilter_messages_total{adapter="milter",call="classify",outcome="ham"} 1.0' in text
    assert 'spamfilter_call_duration_seconds_count{adapter="milter",call="classify"} 1.0' in text
    lines = [json.loads(line) for line in milter.output().splitlines() if line.startswith("{")]
    assert [(doc["adapter"], doc["call"], doc["outcome"]) for doc in lines] == [
        ("milter", "classify", "ham")
    ]
    assert "user@example.net" not in milter.server_log()  # no addresses, no content
