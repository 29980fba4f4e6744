"""Any text, not only RFC 822: the Content-Type says how the body is read, and the reply says
what was assumed. JSON and form uploads are refused with 415, binary bytes with 400."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import Api
from tests.api.samples import HAMMY

SMS = b"WINNER!! You have won a 1000 pound prize. Call 09061701461 to claim now\n"
POSTS = ["/v1/classify", "/v1/feedback?label=spam", "/v1/forget"]


@pytest.mark.parametrize("content_type", [None, "application/octet-stream", "text/plain"])
def test_text_without_headers_is_read_as_text(client: TestClient, content_type: str | None) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    reply = client.post("/v1/classify", content=SMS, headers=headers)
    assert reply.status_code == 200, reply.text
    assert reply.json()["form"] == "text"


def test_curls_default_form_type_reads_a_message_as_a_message(client: TestClient) -> None:
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    reply = client.post("/v1/classify", content=HAMMY, headers=headers)
    assert reply.status_code == 200
    assert reply.json()["form"] == "rfc822"


def test_text_plain_reads_even_a_header_line_as_text(api: Api) -> None:
    api.train()
    raw = b"Subject: spam spam\n\nhello there\n"
    as_text = api.client.post("/v1/classify", content=raw, headers={"Content-Type": "text/plain"})
    as_mail = api.client.post("/v1/classify", content=raw)
    assert (as_text.json()["form"], as_mail.json()["form"]) == ("text", "rfc822")
    assert as_text.json()["digest"] == as_mail.json()["digest"]  # the same bytes
    tokens = {clue["token"] for clue in as_text.json()["clues"]}
    assert not any(token.startswith("subject:") for token in tokens)


def test_message_rfc822_is_strict(client: TestClient) -> None:
    reply = client.post("/v1/classify", content=SMS, headers={"Content-Type": "message/rfc822"})
    assert reply.status_code == 400
    assert reply.json()["error"] == "invalid_message"


@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/json; charset=utf-8", "application/problem+json",
     "multipart/form-data; boundary=x"],
)  # fmt: skip
def test_json_and_form_uploads_are_refused_with_415(
    client: TestClient, path: str, content_type: str
) -> None:
    reply = client.post(path, content=b'{"message": "hi"}', headers={"Content-Type": content_type})
    assert reply.status_code == 415
    body = reply.json()
    assert body["error"] == "unsupported_media_type"
    assert "message/rfc822" in body["detail"] and "text/plain" in body["detail"]


@pytest.mark.parametrize("content_type", [None, "text/plain"])
def test_binary_bytes_are_neither_a_message_nor_text(
    client: TestClient, content_type: str | None
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
    reply = client.post("/v1/classify", content=png, headers=headers)
    assert reply.status_code == 400
    assert reply.json()["error"] == "invalid_message"


def test_text_is_learned_and_forgotten_like_a_message(api: Api) -> None:
    api.train()
    before = api.client.get("/v1/stats").json()
    learned = api.client.post("/v1/feedback", params={"label": "spam"}, content=SMS).json()
    assert (learned["outcome"], learned["form"]) == ("learned", "text")
    again = api.client.post("/v1/feedback", params={"label": "spam"}, content=SMS).json()
    assert again["outcome"] == "unchanged"
    forgotten = api.client.post("/v1/forget", content=SMS).json()
    assert (forgotten["outcome"], forgotten["form"]) == ("forgotten", "text")
    assert api.client.get("/v1/stats").json() == before


def test_the_openapi_contract_names_both_forms_and_415(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/v1/classify", "/v1/feedback", "/v1/forget"):
        operation = paths[path]["post"]
        assert {"message/rfc822", "text/plain"} <= set(operation["requestBody"]["content"])
        assert "415" in operation["responses"]
