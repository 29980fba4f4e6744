"""The spamd daemon (``spamfilter spamd``, a real process) serves its metrics and logs each
verdict, driven by the real spamc."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.adapters.pipe.daemons import free_port
from tests.adapters.spamd.conftest import Spamc, train
from tests.builders import spam_message
from tests.conftest import ServiceFactory, SettingsFactory
from tests.environment import without_settings


def test_spamd_serves_its_metrics_and_logs_each_verdict(
    make_settings: SettingsFactory,
    make_service: ServiceFactory,
    spamc: Spamc,
    database_url: str,
    tmp_path: Path,
) -> None:
    train(make_service(make_settings()))
    port, metrics = free_port(), free_port()
    env = without_settings(
        {
            "SPAMFILTER_DATABASE_URL": database_url,
            "SPAMFILTER_SPAMD__METRICS_PORT": str(metrics),
            "SPAMFILTER_DECISION__MIN_MESSAGES": "5",
        }
    )
    log = tmp_path / "spamd.log"
    command = [sys.executable, "-c", "from app.cli import main; main()", "spamd"]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*command, "--port", str(port)], env=env, stderr=sink, cwd=tmp_path
        )
    try:
        deadline = time.monotonic() + 30
        while b"spamd listening" not in log.read_bytes():
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        result = spamc(port, "-c", message=spam_message(random.Random(3), 4242))
        assert result.returncode == 1, result  # spam
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=5) as reply:
            text = reply.read().decode()
    finally:
        process.terminate()
        process.wait(10)
    assert 'spamfilter_messages_total{adapter="spamd",call="classify",outcome="spam"} 1.0' in text
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert [(doc["adapter"], doc["call"], doc["outcome"]) for doc in lines] == [
        ("spamd", "classify", "spam")
    ]
    assert lines[0]["log_odds"] > 0 and lines[0]["ms"] >= 0
