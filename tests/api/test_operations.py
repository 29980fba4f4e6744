"""Health, readiness, metrics, the OpenAPI document and the app's own lifespan."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.api.app import app_factory, create_app
from app.bootstrap import daemon_service
from tests.api.conftest import MakeApi, MakeSettings
from tests.api.samples import HAMMY, SPAM, SPAMMY

POST_ROUTES = ["/v1/classify", "/v1/feedback", "/v1/forget"]
GET_ROUTES = ["/v1/stats", "/healthz", "/readyz", "/metrics"]
USER_ROUTES = ["/v1/users", "/v1/users/{user}"]  # see test_users.py


def test_healthz(client: TestClient) -> None:
    reply = client.get("/healthz")
    assert reply.status_code == 200
    assert reply.json() == {"status": "ok"}


def test_readyz_on_a_migrated_database(client: TestClient) -> None:
    reply = client.get("/readyz")
    assert reply.status_code == 200
    assert reply.json() == {"status": "ready"}


def test_readyz_is_503_on_an_unmigrated_database_while_healthz_is_200(
    make_api: MakeApi, caplog: pytest.LogCaptureFixture
) -> None:
    api = make_api(migrate=False)
    reply = api.client.get("/readyz")
    assert reply.status_code == 503
    assert reply.json()["error"] == "storage_unavailable"
    assert "upgrade" in caplog.text  # the remedy is the operator's: it is in the log
    assert api.client.get("/healthz").status_code == 200


def test_readyz_is_503_when_the_database_cannot_be_opened(
    make_api: MakeApi, tmp_path: Path
) -> None:
    folder = tmp_path / "a-folder-not-a-file"
    folder.mkdir()
    api = make_api(migrate=False, database_url=f"sqlite:///{folder}")
    reply = api.client.get("/readyz")
    assert reply.status_code == 503
    assert reply.json()["error"] == "storage_unavailable"


def test_metrics_count_requests_verdicts_and_feedback(make_api: MakeApi) -> None:
    api = make_api(served=True)  # the service's calls are counted in the app's registry
    api.train()
    api.client.post("/v1/classify", content=SPAMMY)
    api.client.post("/v1/classify", content=b"")
    api.client.post("/v1/feedback", params={"label": "spam"}, content=SPAM[0])
    api.client.post("/v1/forget", content=HAMMY)
    api.client.get("/no/such/page")
    reply = api.client.get("/metrics")
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain")
    text = reply.text
    expected = [
        'spamfilter_http_requests_total{method="POST",route="/v1/classify",status="200"} 1.0',
        'spamfilter_http_requests_total{method="POST",route="/v1/classify",status="400"} 1.0',
        'spamfilter_http_requests_total{method="POST",route="/v1/feedback",status="200"} 7.0',
        'spamfilter_http_requests_total{method="GET",route="unmatched",status="404"} 1.0',
        'spamfilter_http_request_duration_seconds_count{method="POST",route="/v1/classify"} 2.0',
        'spamfilter_messages_total{adapter="http",call="classify",outcome="spam"} 1.0',
        'spamfilter_messages_total{adapter="http",call="learn",outcome="learned"} 6.0',
        'spamfilter_messages_total{adapter="http",call="learn",outcome="unchanged"} 1.0',
        'spamfilter_messages_total{adapter="http",call="forget",outcome="unknown"} 1.0',
    ]
    for line in expected:
        assert line in text
    # each call is counted once: no second counter of verdicts, feedback or forgets beside it
    for gone in ("spamfilter_verdicts", "spamfilter_feedback", "spamfilter_forget"):
        assert gone not in text


def test_each_app_has_its_own_registry(make_api: MakeApi) -> None:
    first, second = make_api(), make_api()
    first.client.post("/v1/classify", content=HAMMY)
    counted = 'spamfilter_http_requests_total{method="POST",route="/v1/classify",status="200"}'
    assert counted in first.client.get("/metrics").text
    assert counted not in second.client.get("/metrics").text


def test_openapi_documents_every_route(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    paths = document["paths"]
    assert set(paths) == set(POST_ROUTES + GET_ROUTES + USER_ROUTES)
    for path in POST_ROUTES:
        operation = paths[path]["post"]
        body = operation["requestBody"]
        assert body["required"] is True
        raw = body["content"]["message/rfc822"]
        assert raw["schema"] == {"type": "string", "format": "binary"}
        assert raw["example"].startswith("From: ")
        assert {"400", "413", "503"} <= set(operation["responses"])
        schema_ref = operation["responses"]["200"]["content"]["application/json"]["schema"]
        assert schema_ref["$ref"].endswith("Response")
    for path in ("/v1/feedback", "/v1/forget"):
        assert "401" in paths[path]["post"]["responses"]
        assert paths[path]["post"]["security"] == [{"HTTPBearer": []}]
    assert "422" in paths["/v1/feedback"]["post"]["responses"]
    for path in POST_ROUTES:  # a trickled body, an overloaded process
        assert {"408", "503"} <= set(paths[path]["post"]["responses"])
    assert "overloaded" in paths["/v1/classify"]["post"]["responses"]["503"]["description"]
    for path in ("/v1/stats", "/metrics"):
        assert "401" in paths[path]["get"]["responses"]
        assert paths[path]["get"]["security"] == [{"HTTPBearer": []}]
    # classify needs no token, but takes one: it shows the hidden clues to its holder
    assert paths["/v1/classify"]["post"]["security"] == [{"HTTPBearer": []}, {}]
    assert "from:addr:*" in paths["/v1/classify"]["post"]["description"]
    for path in ("/healthz", "/readyz"):
        assert "security" not in paths[path]["get"]
    error = paths["/v1/classify"]["post"]["responses"]["400"]["content"]["application/json"]
    assert error["schema"]["$ref"] == "#/components/schemas/ErrorResponse"
    schemas = document["components"]["schemas"]
    responses = ("ClassifyResponse", "FeedbackResponse", "ForgetResponse", "StatsResponse")
    for name in (*responses, "UsersResponse", "DeletedUserResponse"):
        assert schemas[name]["examples"], name


def test_create_app_without_a_service_builds_and_migrates_one(
    make_api_settings: MakeSettings, tmp_path: Path
) -> None:
    settings = make_api_settings(database_url=f"sqlite:///{tmp_path / 'fresh' / 'new.db'}")
    app = create_app(settings)
    with TestClient(app) as client:
        assert client.get("/readyz").status_code == 200
        assert client.post("/v1/classify", content=HAMMY).status_code == 200
    assert (tmp_path / "fresh" / "new.db").exists()


def test_app_factory_reads_settings_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPAMFILTER_DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    monkeypatch.setenv("SPAMFILTER_API_TOKENS", "from-the-environment")
    try:
        with TestClient(app_factory()) as client:
            assert client.post("/v1/forget", content=HAMMY).status_code == 401
            headers = {"Authorization": "Bearer from-the-environment"}
            assert client.post("/v1/forget", content=HAMMY, headers=headers).status_code == 200
    finally:
        gc.unfreeze()


def test_a_worker_freezes_what_it_made_at_start_out_of_full_collections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPAMFILTER_DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    gc.unfreeze()
    try:
        app = app_factory()
        assert gc.get_freeze_count() > 10_000  # the modules, classes and functions so far
        assert all(o is not app for o in gc.get_objects(generation=2))  # the app among them
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("adapter", ["spamd", "milter"])
def test_a_daemon_freezes_what_it_made_at_start_out_of_full_collections(
    make_settings: MakeSettings, adapter: str
) -> None:
    gc.unfreeze()
    try:
        with daemon_service(make_settings(), adapter, ("127.0.0.1", None)) as service:
            assert gc.get_freeze_count() > 10_000
            assert all(o is not service for o in gc.get_objects(generation=2))
    finally:
        gc.unfreeze()
