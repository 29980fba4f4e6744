"""Per-user calls over HTTP: the ``user`` parameter, listing users, deleting one (admin).

Every test runs on SQLite and PostgreSQL (``database_url``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api, MakeApi
from tests.api.samples import HAM, HAMMY, SPAM

TOKEN = "admin-secret-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
ALICE = "Alice@Example.org"  # normalised to lowercase by the service


@pytest.fixture
def secured(make_api: MakeApi, database_url: str) -> Api:
    """An app with an API token, on the test's database (SQLite and PostgreSQL)."""
    return make_api(database_url=database_url, api_tokens=[TOKEN])


@pytest.fixture
def open_api(make_api: MakeApi, database_url: str) -> Api:
    """An app without API tokens, on the test's database."""
    return make_api(database_url=database_url)


def learn_for(api: Api, user: str, label: str, messages: list[bytes]) -> None:
    for raw in messages:
        reply = api.client.post(
            "/v1/feedback", params={"label": label, "user": user}, content=raw, headers=BEARER
        )
        assert reply.status_code == 200, reply.text


def messages_of(doc: dict[str, Any]) -> dict[str, int]:
    return {label: counts["messages"] for label, counts in doc["labels"].items()}


def test_feedback_classify_forget_and_stats_take_a_user(secured: Api) -> None:
    client = secured.client
    learn_for(secured, ALICE, "ham", HAM)
    learn_for(secured, ALICE, "spam", SPAM[:1])
    own = client.get("/v1/stats", params={"user": ALICE}, headers=BEARER).json()
    assert own["user"] == "alice@example.org"
    assert own["scope"] == "global/user:alice@example.org"
    assert messages_of(own) == {"ham": 3, "spam": 1}
    site = client.get("/v1/stats", headers=BEARER).json()
    assert site["user"] is None and site["scope"] == "global"
    assert messages_of(site) == {"ham": 3, "spam": 1}  # users.train_site (the default)
    verdict = client.post("/v1/classify", params={"user": ALICE}, content=HAMMY)
    assert verdict.status_code == 200 and verdict.json()["verdict"] == "ham"
    gone = client.post("/v1/forget", params={"user": ALICE}, content=SPAM[0], headers=BEARER)
    assert gone.json()["outcome"] == "forgotten"
    after = client.get("/v1/stats", params={"user": ALICE}, headers=BEARER).json()
    assert messages_of(after) == {"ham": 3, "spam": 0}
    bob = client.get("/v1/stats", params={"user": "bob"}, headers=BEARER).json()
    assert (messages_of(bob), bob["vocabulary"], bob["user"]) == ({"ham": 0, "spam": 0}, 0, "bob")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/v1/classify"),
        ("post", "/v1/feedback?label=spam"),
        ("post", "/v1/forget"),
        ("get", "/v1/stats"),
        ("delete", "/v1/users/a%20b"),
    ],
)
def test_a_name_that_cannot_be_a_user_is_422(secured: Api, method: str, path: str) -> None:
    path, _, label = path.partition("?label=")
    params = {} if method == "delete" else {"user": "a b"}
    if label:
        params["label"] = label
    kwargs: dict[str, Any] = {"params": params, "headers": BEARER}
    if method == "post":
        kwargs["content"] = HAMMY
    reply = getattr(secured.client, method)(path, **kwargs)
    assert reply.status_code == 422, reply.text
    assert reply.json()["error"] == "invalid_user"
    assert "not allowed" in reply.json()["detail"]


def test_users_are_listed_with_their_counts(secured: Api) -> None:
    assert secured.client.get("/v1/users", headers=BEARER).json() == {"users": []}
    learn_for(secured, ALICE, "spam", SPAM)
    learn_for(secured, "bob", "ham", HAM[:1])
    learn_for(secured, "100%_odd", "ham", HAM[:2])  # LIKE wildcards in a name
    secured.client.post("/v1/feedback", params={"label": "ham"}, content=HAM[2], headers=BEARER)
    reply = secured.client.get("/v1/users", headers=BEARER)
    assert reply.status_code == 200
    users = reply.json()["users"]
    assert [u["user"] for u in users] == ["100%_odd", "alice@example.org", "bob"]
    alice = users[1]
    assert alice["scope"] == "global/user:alice@example.org"
    assert alice["messages"] == {"ham": 0, "spam": 3}
    assert alice["vocabulary"] == secured.service.stats("alice@example.org").vocabulary > 0
    assert users[2]["messages"] == {"ham": 1, "spam": 0}
    assert secured.client.get("/v1/users").status_code == 401


def test_deleting_a_user_removes_their_model_only(secured: Api) -> None:
    learn_for(secured, ALICE, "spam", SPAM)
    learn_for(secured, ALICE, "ham", HAM[:1])
    learn_for(secured, "bob", "ham", HAM[1:])
    site_before = secured.client.get("/v1/stats", headers=BEARER).json()
    vocabulary = secured.service.stats(ALICE).vocabulary
    assert secured.client.delete(f"/v1/users/{ALICE}").status_code == 401
    reply = secured.client.delete(f"/v1/users/{ALICE}", headers=BEARER)
    assert reply.status_code == 200, reply.text
    assert reply.json() == {
        "user": "alice@example.org",
        "scope": "global/user:alice@example.org",
        "messages": 4,
        "tokens": vocabulary,
    }
    assert [u["user"] for u in secured.client.get("/v1/users", headers=BEARER).json()["users"]] == [
        "bob"
    ]
    assert secured.client.get("/v1/stats", headers=BEARER).json() == site_before
    gone = secured.client.get("/v1/stats", params={"user": ALICE}, headers=BEARER).json()
    assert (messages_of(gone), gone["vocabulary"]) == ({"ham": 0, "spam": 0}, 0)
    # Learning for her again starts a new model from nothing.
    learn_for(secured, ALICE, "spam", SPAM[:1])
    again = secured.client.get("/v1/stats", params={"user": ALICE}, headers=BEARER).json()
    assert messages_of(again) == {"ham": 0, "spam": 1}
    unknown = secured.client.delete("/v1/users/carol", headers=BEARER)
    assert unknown.status_code == 404
    assert unknown.json() == {"error": "unknown_user", "detail": "user 'carol' has no model"}


def test_deleting_is_refused_while_no_tokens_are_configured(open_api: Api) -> None:
    learn_for(open_api, ALICE, "spam", SPAM[:1])
    reply = open_api.client.delete(f"/v1/users/{ALICE}")
    assert reply.status_code == 403
    assert reply.json()["error"] == "admin_disabled"
    assert "api_tokens" in reply.json()["detail"]
    assert open_api.service.stats(ALICE).labels["spam"].messages == 1


def test_the_contract_documents_users(secured: Api) -> None:
    schema = secured.client.get("/openapi.json").json()
    paths = schema["paths"]
    for path, method in [
        ("/v1/classify", "post"),
        ("/v1/feedback", "post"),
        ("/v1/forget", "post"),
        ("/v1/stats", "get"),
    ]:
        operation = paths[path][method]
        (user,) = [p for p in operation["parameters"] if p["name"] == "user"]
        assert user["in"] == "query" and not user["required"]
        assert user["schema"]["examples"] == ["alice@example.org"]
        assert "422" in operation["responses"]
    delete = paths["/v1/users/{user}"]["delete"]
    assert {"200", "401", "403", "404", "422"} <= set(delete["responses"])
    assert "api_tokens" in delete["responses"]["403"]["description"]
    listing = paths["/v1/users"]["get"]["responses"]["200"]["content"]["application/json"]
    assert listing["schema"]["$ref"].endswith("/UsersResponse")
    examples = schema["components"]["schemas"]["StatsResponse"]["examples"]
    assert [e.get("user") for e in examples] == [None, "alice@example.org"]


def test_with_train_site_off_feedback_for_a_user_leaves_the_site_model_alone(
    make_api: MakeApi, database_url: str
) -> None:
    api = make_api(database_url=database_url, api_tokens=[TOKEN], users={"train_site": False})
    learn_for(api, ALICE, "ham", HAM)
    learn_for(api, ALICE, "spam", SPAM[:1])
    own = api.client.get("/v1/stats", params={"user": ALICE}, headers=BEARER).json()
    assert messages_of(own) == {"ham": 3, "spam": 1}
    site = api.client.get("/v1/stats", headers=BEARER).json()
    assert messages_of(site) == {"ham": 0, "spam": 0}
