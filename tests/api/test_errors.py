"""Every error status in the JSON ``{"error", "detail"}`` shape, and never a 500 for input."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from app.errors import StorageConflict, StorageUnavailable
from tests.api.conftest import Api, MakeApi
from tests.api.samples import (
    BAD_BASE64,
    HAMMY,
    NUL_IN_CHARSET,
    NUL_IN_CHARSET_2231,
    TRUNCATED_MULTIPART,
    UNKNOWN_CHARSET,
    message,
)

POSTS = ["/v1/classify", "/v1/feedback?label=spam", "/v1/forget"]
CAP = 2048  # the smallest cap the settings allow is 1 KiB


def assert_error(reply: httpx.Response, status: int, code: str) -> None:
    """The reply has ``status`` and exactly the JSON error shape with ``code``."""
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert set(body) == {"error", "detail"}
    assert body["error"] == code
    assert isinstance(body["detail"], str)
    assert body["detail"]


def random_bytes() -> bytes:
    # 0xff first: such bytes can never start a header line, whatever follows.
    generator = random.Random(20240611)
    return b"\xff" + bytes(generator.randrange(256) for _ in range(2000))


NOT_MESSAGES = {
    "empty": b"",
    "random-binary": random_bytes(),
    "nul-bytes": b"\x00" * 100,
    "blank-lines": b"\n\n\n",
}

ODD_MESSAGES = {
    "truncated-multipart": TRUNCATED_MULTIPART,
    "bad-base64": BAD_BASE64,
    "unknown-charset": UNKNOWN_CHARSET,
    "nul-in-charset": NUL_IN_CHARSET,
    "nul-in-charset-rfc2231": NUL_IN_CHARSET_2231,
}


@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize("raw", NOT_MESSAGES.values(), ids=list(NOT_MESSAGES))
def test_input_that_is_not_a_message_is_400(client: TestClient, path: str, raw: bytes) -> None:
    assert_error(client.post(path, content=raw), 400, "invalid_message")


@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize("raw", ODD_MESSAGES.values(), ids=list(ODD_MESSAGES))
def test_malformed_but_real_messages_are_200(client: TestClient, path: str, raw: bytes) -> None:
    assert client.post(path, content=raw).status_code == 200


@pytest.mark.parametrize("path", POSTS)
def test_too_large_by_content_length_is_413(make_api: MakeApi, path: str) -> None:
    api = make_api(server={"max_message_bytes": CAP})
    big = message("big", "x" * CAP)
    assert_error(api.client.post(path, content=big), 413, "message_too_large")


@pytest.mark.parametrize("path", POSTS)
def test_too_large_chunked_body_is_413(make_api: MakeApi, path: str) -> None:
    api = make_api(server={"max_message_bytes": CAP})

    def chunks() -> Iterator[bytes]:
        yield b"From: a@example.org\nSubject: stream\n\n"
        for _ in range(10):
            yield b"y" * 512

    reply = api.client.post(path, content=chunks())
    assert "content-length" not in reply.request.headers
    assert_error(reply, 413, "message_too_large")


def test_chunked_body_under_the_cap_is_read(make_api: MakeApi) -> None:
    api = make_api(server={"max_message_bytes": CAP})
    lines = HAMMY.splitlines(keepends=True)
    reply = api.client.post("/v1/classify", content=iter(lines))
    assert reply.status_code == 200
    expected = api.client.post("/v1/classify", content=HAMMY).json()["digest"]
    assert reply.json()["digest"] == expected


def test_message_at_exactly_the_cap_is_accepted(make_api: MakeApi) -> None:
    api = make_api(server={"max_message_bytes": CAP})
    head = message("edge", "")
    raw = head + b"z" * (CAP - len(head))
    assert len(raw) == CAP
    assert api.client.post("/v1/classify", content=raw).status_code == 200


@pytest.mark.parametrize("label", ["eggs", "", "spam,ham", "unsure"])
def test_bad_label_is_422(client: TestClient, label: str) -> None:
    reply = client.post("/v1/feedback", params={"label": label}, content=HAMMY)
    assert_error(reply, 422, "invalid_label")


def test_missing_label_is_422_in_our_shape(client: TestClient) -> None:
    reply = client.post("/v1/feedback", content=HAMMY)
    assert_error(reply, 422, "invalid_request")
    assert "label" in reply.json()["detail"]


def _raise(error: Exception) -> Any:
    def fail(*_args: object, **_kwargs: object) -> Any:
        raise error

    return fail


@pytest.mark.parametrize(
    ("method", "path", "call"),
    [
        ("POST", "/v1/classify", "classify"),
        ("POST", "/v1/feedback?label=ham", "learn"),
        ("POST", "/v1/forget", "forget"),
        ("GET", "/v1/stats", "stats"),
    ],
)
@pytest.mark.parametrize(
    ("error", "code"),
    [
        (StorageUnavailable("database is locked"), "storage_unavailable"),
        (StorageConflict("deadlock detected"), "storage_conflict"),
    ],
)
def test_storage_errors_are_503(
    api: Api,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    path: str,
    call: str,
    error: Exception,
    code: str,
) -> None:
    monkeypatch.setattr(api.service, call, _raise(error))
    reply = api.client.request(method, path, content=HAMMY if method == "POST" else None)
    assert_error(reply, 503, code)
    assert reply.json()["detail"].endswith("retry shortly")
    assert str(error) not in reply.text


def test_unmigrated_database_is_503_not_500(make_api: MakeApi) -> None:
    api = make_api(migrate=False)
    assert_error(api.client.post("/v1/classify", content=HAMMY), 503, "storage_unavailable")
    assert_error(api.client.get("/v1/stats"), 503, "storage_unavailable")


def test_unexpected_error_is_500_in_our_shape(make_api: MakeApi) -> None:
    api = make_api(raise_errors=False)
    api.service.stats = _raise(RuntimeError("boom"))  # type: ignore[method-assign]
    reply = api.client.get("/v1/stats")
    assert_error(reply, 500, "internal_error")
    assert "boom" not in reply.text


def test_unknown_route_and_wrong_method_in_our_shape(client: TestClient) -> None:
    assert_error(client.get("/v2/nothing"), 404, "not_found")
    assert_error(client.get("/v1/classify"), 405, "method_not_allowed")


def test_an_overload_says_when_to_retry(make_api: MakeApi) -> None:
    api = make_api(server={"max_buffered_bytes": 1024})
    reply = api.client.post("/v1/classify", content=HAMMY + b"x" * 2000)
    assert reply.status_code == 503
    assert reply.json()["error"] == "overloaded"
    assert reply.headers["Retry-After"] == "1"
    assert api.app.state.budget.held == 0
