"""The same API over PostgreSQL (runs only with SPAMFILTER_TEST_POSTGRES_URL set)."""

from __future__ import annotations

import pytest

from tests.api.conftest import MakeApi
from tests.api.samples import HAM, HAMMY, SPAM, SPAMMY


@pytest.mark.postgres
def test_api_round_trip_on_postgresql(make_api: MakeApi, postgres_url: str) -> None:
    api = make_api(database_url=postgres_url)
    client = api.client
    assert client.get("/readyz").status_code == 200
    api.train()
    again = client.post("/v1/feedback", params={"label": "spam"}, content=SPAM[0]).json()
    assert again["outcome"] == "unchanged"
    moved = client.post("/v1/feedback", params={"label": "ham"}, content=SPAM[0]).json()
    assert moved["outcome"] == "relabelled"
    client.post("/v1/feedback", params={"label": "spam"}, content=SPAM[0])
    assert client.post("/v1/classify", content=SPAMMY).json()["verdict"] == "spam"
    assert client.post("/v1/classify", content=HAMMY).json()["verdict"] == "ham"
    stats = client.get("/v1/stats").json()
    assert stats["database"] == "postgresql"
    assert stats["labels"]["spam"]["messages"] == len(SPAM)
    for raw in [*HAM, *SPAM]:
        assert client.post("/v1/forget", content=raw).json()["outcome"] == "forgotten"
    assert client.post("/v1/forget", content=HAM[0]).json()["outcome"] == "unknown"
    assert client.get("/v1/stats").json() == {
        "labels": {"ham": {"messages": 0, "tokens": 0}, "spam": {"messages": 0, "tokens": 0}},
        "vocabulary": 0,
        "database": "postgresql",
        "scope": "global",
        "user": None,
        "ham_scored": 0,
        "spam_cutoff": 0.0,
    }
