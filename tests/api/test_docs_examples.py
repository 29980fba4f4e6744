"""The OpenAPI examples against what the running app answers.

Every example in the contract — the request bodies, the successful answer of every route and
every documented error of every route — must have the shape (keys, error code, wording but
for numbers) of what the app answers when that case is provoked: an empty body (400), no token
(401), a JSON body (415), a bad label or user (422), a small size cap (413), a small byte budget
(503 overloaded), a database never migrated (503 storage_unavailable), a body that never comes
under a short read timeout (408).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from app.api.app import create_app
from app.api.errors import ERROR_DOCS, ERROR_HEADERS, STATUS
from app.errors import StorageConflict
from app.settings.schema import Settings
from tests.api.conftest import Api, MakeApi
from tests.api.samples import message

TOKEN = "docs-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
USER = "alice@example.org"


@dataclasses.dataclass(frozen=True)
class Call:
    """One request as a client would send it, with a bearer token."""

    method: str
    url: str
    params: dict[str, str] = dataclasses.field(default_factory=dict)
    content: bytes | None = None
    headers: dict[str, str] = dataclasses.field(default_factory=lambda: dict(AUTH))

    def send(self, api: Api) -> httpx.Response:
        return api.client.request(
            self.method, self.url, params=self.params, content=self.content, headers=self.headers
        )

    def but(self, **changes: Any) -> Call:
        return dataclasses.replace(self, **changes)


MESSAGE = message("Lunch on Friday?", "Shall we try the new place near the station?")
BIG = message("big", "x" * 2048)

# A successful call of every operation in the contract, by OpenAPI's (method, path).
CALLS = {
    ("post", "/v1/classify"): Call("POST", "/v1/classify", content=MESSAGE),
    ("post", "/v1/feedback"): Call("POST", "/v1/feedback", {"label": "spam"}, content=MESSAGE),
    ("post", "/v1/forget"): Call("POST", "/v1/forget", content=MESSAGE),
    ("get", "/v1/stats"): Call("GET", "/v1/stats"),
    ("get", "/v1/users"): Call("GET", "/v1/users"),
    ("delete", "/v1/users/{user}"): Call("DELETE", f"/v1/users/{USER}"),
    ("get", "/healthz"): Call("GET", "/healthz"),
    ("get", "/readyz"): Call("GET", "/readyz"),
    ("get", "/metrics"): Call("GET", "/metrics"),
}

# The service function behind each route that reads the database.
SERVICE_CALLS = {
    "/v1/classify": "classify",
    "/v1/feedback": "learn",
    "/v1/forget": "forget",
    "/v1/stats": "stats",
    "/v1/users": "users",
    "/v1/users/{user}": "delete_user",
}


@dataclasses.dataclass(frozen=True)
class Case:
    """One documented error of one operation, and how to provoke it."""

    method: str
    path: str
    status: int
    code: str
    example: dict[str, Any]
    make_api: MakeApi
    monkeypatch: pytest.MonkeyPatch

    @property
    def call(self) -> Call:
        key = (self.method, self.path)
        if key not in CALLS:
            pytest.fail(f"no call of {self.method.upper()} {self.path}: add one to CALLS")
        return CALLS[key]

    def secured(self, **settings: Any) -> Api:
        return self.make_api(api_tokens=[TOKEN], **settings)


def _with_user(case: Case, user: str) -> httpx.Response:
    call = case.call
    if "{user}" in case.path:
        return call.but(url=case.path.replace("{user}", user)).send(case.secured())
    return call.but(params={**call.params, "user": user}).send(case.secured())


def _storage_conflict(case: Case) -> httpx.Response:
    api = case.secured()

    def busy(*_args: object, **_kwargs: object) -> Any:
        raise StorageConflict("could not serialize access due to concurrent update")

    case.monkeypatch.setattr(api.service, SERVICE_CALLS[case.path], busy)
    return case.call.send(api)


def _late_body(case: Case) -> httpx.Response:
    """The call straight to the ASGI app, its body announced but never sent."""
    api = case.secured(server={"read_timeout_seconds": 0.01})
    call = case.call
    headers = {"content-length": "100", **call.headers}
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": call.method,
        "scheme": "http",
        "path": call.url,
        "raw_path": call.url.encode(),
        "root_path": "",
        "query_string": str(httpx.QueryParams(call.params)).encode(),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()  # the body never comes
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(api.app(scope, receive, send))
    head = [(k.decode(), v.decode()) for k, v in sent[0]["headers"]]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return httpx.Response(sent[0]["status"], headers=head, content=body)


# How to make the running app answer each error code, starting from a successful call.
PROVOKE: dict[str, Callable[[Case], httpx.Response]] = {
    "invalid_message": lambda case: case.call.but(content=b"").send(case.secured()),
    "not_authenticated": lambda case: case.call.but(headers={}).send(case.secured()),
    "admin_disabled": lambda case: case.call.send(case.make_api()),
    "unknown_user": lambda case: case.call.send(case.secured()),
    "request_timeout": _late_body,
    "message_too_large": lambda case: case.call.but(content=BIG).send(
        case.secured(server={"max_message_bytes": 1024})
    ),
    "unsupported_media_type": lambda case: case.call.but(
        content=b'{"message": "hello"}', headers={**AUTH, "Content-Type": "application/json"}
    ).send(case.secured()),
    "invalid_label": lambda case: case.call.but(params={"label": "eggs"}).send(case.secured()),
    "invalid_request": lambda case: case.call.but(params={}).send(case.secured()),
    "invalid_user": lambda case: _with_user(case, "alice smith"),
    "storage_unavailable": lambda case: case.call.send(case.secured(migrate=False)),
    "storage_conflict": _storage_conflict,
    "overloaded": lambda case: case.call.but(content=BIG).send(
        case.secured(server={"max_buffered_bytes": 1024})
    ),
}


def contract() -> dict[str, Any]:
    """The OpenAPI document of an app (built, never started)."""
    document: dict[str, Any] = create_app(Settings(database_url="sqlite://")).openapi()
    return document


def documented_errors() -> list[tuple[str, str, int, str, dict[str, Any]]]:
    """(method, path, status, code, example) of every error example in the contract."""
    found = []
    for path, operations in contract()["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if int(status) < 400:
                    continue
                examples = response["content"]["application/json"].get("examples", {})
                for code, example in examples.items():
                    found.append((method, path, int(status), code, example["value"]))
    return found


DOCUMENTED = documented_errors()


def same_words(left: str, right: str) -> bool:
    """Equal but for the numbers (sizes and seconds differ with the settings)."""
    return re.sub(r"\d+(\.\d+)?", "N", left) == re.sub(r"\d+(\.\d+)?", "N", right)


@pytest.mark.parametrize(
    ("method", "path", "status", "code", "example"),
    DOCUMENTED,
    ids=[f"{m.upper()} {p} {s} {c}" for m, p, s, c, _ in DOCUMENTED],
)
def test_a_documented_error_is_what_the_server_answers(
    make_api: MakeApi,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    path: str,
    status: int,
    code: str,
    example: dict[str, Any],
) -> None:
    case = Case(method, path, status, code, example, make_api, monkeypatch)
    assert code in PROVOKE, f"no way to provoke {code}: add one to PROVOKE"
    reply = PROVOKE[code](case)
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert set(body) == set(example) == {"error", "detail"}
    assert body["error"] == example["error"] == code
    assert same_words(body["detail"], example["detail"]), (body["detail"], example["detail"])
    for header in ERROR_HEADERS.get(code, {}):
        assert header in reply.headers, header


def test_every_error_status_of_every_route_has_an_example() -> None:
    document = contract()
    statuses = {
        (method, path, int(status))
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        for status in operation["responses"]
        if int(status) >= 400
    }
    assert statuses == {(m, p, s) for m, p, s, _, _ in DOCUMENTED}
    assert {(m, p) for m, p, _ in statuses} == set(CALLS) - {("get", "/healthz")}
    codes = {c for _, _, _, c, _ in DOCUMENTED}
    assert codes == set(PROVOKE), "every provocation is of a documented code"


BODY_FORMS = {"message/rfc822": "rfc822", "text/plain": "text"}


@pytest.mark.parametrize("path", ["/v1/classify", "/v1/feedback", "/v1/forget"])
def test_the_body_examples_are_read_as_their_type_says(make_api: MakeApi, path: str) -> None:
    api = make_api(api_tokens=[TOKEN])
    call = CALLS[("post", path)]
    content = contract()["paths"][path]["post"]["requestBody"]["content"]
    assert set(content) == set(BODY_FORMS)
    for media_type, form in BODY_FORMS.items():
        example = content[media_type]["example"]
        headers = {**AUTH, "Content-Type": media_type}
        reply = call.but(content=example.encode(), headers=headers).send(api)
        assert reply.status_code == 200, reply.text
        assert reply.json()["form"] == form


def keys_of(value: Any) -> Any:
    """The shape of a JSON value: its keys all the way down (a list by its first item)."""
    if isinstance(value, dict):
        return {key: keys_of(item) for key, item in value.items()}
    if isinstance(value, list) and value:
        return [keys_of(value[0])]
    return None


def success_examples(operation: dict[str, Any], schemas: dict[str, Any]) -> list[Any]:
    """The examples of an operation's 200 answer: its own, or its schema's."""
    content = operation["responses"]["200"]["content"]
    media_type, documented = next(iter(content.items()))
    if "example" in documented:
        return [documented["example"]]
    name = documented["schema"]["$ref"].rsplit("/", 1)[-1]
    examples: list[Any] = schemas[name].get("examples", [])
    assert examples, f"{name} ({media_type}) has no example"
    return examples


@pytest.fixture
def trained(make_api: MakeApi) -> Api:
    """A secured app, served as ``serve`` serves it, with a site-wide model and a model of
    ``USER``'s own."""
    api = make_api(api_tokens=[TOKEN], served=True)
    api.train(TOKEN)
    for label, raw in (("ham", MESSAGE), ("spam", BIG)):
        reply = api.client.post(
            "/v1/feedback", params={"label": label, "user": USER}, content=raw, headers=AUTH
        )
        assert reply.status_code == 200, reply.text
    return api


@pytest.mark.parametrize(("method", "path"), list(CALLS), ids=[f"{m} {p}" for m, p in CALLS])
def test_a_documented_answer_is_what_the_server_answers(
    trained: Api, method: str, path: str
) -> None:
    document = contract()
    operation = document["paths"][path][method]
    examples = success_examples(operation, document["components"]["schemas"])
    reply = CALLS[(method, path)].send(trained)
    assert reply.status_code == 200, reply.text
    for example in examples:
        if isinstance(example, str):  # the metrics text: the same series, described alike
            described = [line for line in example.splitlines() if line.startswith("#")]
            assert described and all(line in reply.text for line in described)
        else:
            assert keys_of(example) == keys_of(reply.json())


def test_every_answer_of_every_route_is_called() -> None:
    operations = {(method, path) for path, item in contract()["paths"].items() for method in item}
    assert operations == set(CALLS)


def test_every_error_code_is_documented_with_the_status_it_gets() -> None:
    client_errors = {cls.code: status for cls, status in STATUS.items() if status != 500}
    assert set(client_errors) | {"invalid_request"} == set(ERROR_DOCS)
    for code, status in client_errors.items():
        assert ERROR_DOCS[code].status == status, code
