"""serve's own service: every call in /metrics by adapter and outcome, and in the verdict log."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from fastapi.testclient import TestClient

from app.api.app import create_app
from app.telemetry.journal import LOGGER
from tests.api.conftest import MakeSettings
from tests.api.samples import HAM, SPAM


def test_the_app_built_service_reports_to_metrics_and_the_log(
    make_api_settings: MakeSettings, tmp_path: Path
) -> None:
    journal = tmp_path / "verdicts.log"
    # the lifespan builds the service, as serve does
    app = create_app(make_api_settings(log={"verdicts": str(journal)}))
    with TestClient(app) as client:
        for label, messages in (("ham", HAM), ("spam", SPAM)):
            reply = client.post("/v1/feedback", params={"label": label}, content=messages[0])
            assert reply.status_code == 200, reply.text
        verdict = client.post("/v1/classify", content=SPAM[1]).json()["verdict"]
        metrics = client.get("/metrics").text
    for handler in logging.getLogger(LOGGER).handlers:
        handler.flush()
    assert (
        f'spamfilter_messages_total{{adapter="http",call="classify",outcome="{verdict}"}} 1.0'
        in metrics
    )
    assert 'spamfilter_messages_total{adapter="http",call="learn",outcome="learned"} 2.0' in metrics
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [(doc["adapter"], doc["call"]) for doc in lines] == [
        ("http", "learn"),
        ("http", "learn"),
        ("http", "classify"),
    ]
