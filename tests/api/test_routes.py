"""The happy paths of /v1/classify, /v1/feedback, /v1/forget and /v1/stats, shapes exact."""

from __future__ import annotations

import math

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import Api
from tests.api.samples import HAM, HAMMY, SPAM, SPAMMY, message

CLASSIFY_KEYS = {
    "verdict",
    "spam_probability",
    "log_odds",
    "spam_cutoff",
    "class",
    "log_posteriors",
    "clues",
    "digest",
    "reason",
    "tokens",
    "truncated",
    "form",
    "mail",
}


def test_classify_untrained_is_unsure_with_a_reason(client: TestClient) -> None:
    reply = client.post("/v1/classify", content=HAMMY)
    assert reply.status_code == 200
    body = reply.json()
    assert set(body) == CLASSIFY_KEYS
    assert body["verdict"] == "unsure"
    assert body["reason"] == "not_enough_training"
    assert body["spam_probability"] == pytest.approx(0.5)
    assert body["log_odds"] == 0.0
    assert set(body["log_posteriors"]) == {"ham", "spam"}
    assert body["clues"] == []
    assert len(body["digest"]) == 64
    assert body["tokens"] > 0
    assert body["truncated"] is False
    assert body["mail"]["is_spam"] is False
    assert body["mail"]["required"] == 5.0
    assert [name for name, _ in body["mail"]["headers"]] == [
        "X-Spam-Status",
        "X-Spam-Level",
        "X-Spam-Verdict",
    ]


def test_classify_after_training_gives_verdicts_and_clues(api: Api) -> None:
    api.train()
    spam = api.client.post("/v1/classify", content=SPAMMY).json()
    ham = api.client.post("/v1/classify", content=HAMMY).json()
    assert (spam["verdict"], spam["reason"]) == ("spam", None)
    assert (ham["verdict"], ham["reason"]) == ("ham", None)
    assert spam["log_odds"] > 0 > ham["log_odds"]
    assert spam["mail"]["is_spam"] and spam["mail"]["score"] >= 5.0
    assert ["X-Spam-Flag", "YES"] in spam["mail"]["headers"]
    assert not ham["mail"]["is_spam"] and ham["mail"]["score"] < 0
    for body in (spam, ham):
        posteriors = body["log_posteriors"]
        assert math.exp(posteriors["ham"]) + math.exp(posteriors["spam"]) == pytest.approx(1.0)
        assert body["spam_probability"] == pytest.approx(math.exp(posteriors["spam"]))
        assert body["log_odds"] == pytest.approx(posteriors["spam"] - posteriors["ham"])
        assert body["clues"], "a trained verdict explains itself"
        for clue in body["clues"]:
            assert set(clue) == {"token", "weight"}
            assert isinstance(clue["token"], str)
            assert isinstance(clue["weight"], float)


@pytest.mark.parametrize(
    "content_type", ["message/rfc822", "text/plain", "application/octet-stream", None]
)
def test_classify_accepts_any_content_type(client: TestClient, content_type: str | None) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    reply = client.post("/v1/classify", content=HAMMY, headers=headers)
    assert reply.status_code == 200


def test_feedback_learned_unchanged_relabelled(client: TestClient) -> None:
    raw = SPAM[0]
    first = client.post("/v1/feedback", params={"label": "spam"}, content=raw)
    assert first.status_code == 200
    body = first.json()
    assert set(body) == {"digest", "label", "outcome", "form"}
    assert body["form"] == "rfc822"
    assert body["label"] == "spam"
    assert body["outcome"] == "learned"
    assert body["digest"] == client.post("/v1/classify", content=raw).json()["digest"]
    again = client.post("/v1/feedback", params={"label": "spam"}, content=raw).json()
    assert again == {**body, "outcome": "unchanged"}
    moved = client.post("/v1/feedback", params={"label": "ham"}, content=raw).json()
    assert moved == {**body, "label": "ham", "outcome": "relabelled"}


def test_feedback_label_is_case_insensitive(client: TestClient) -> None:
    reply = client.post("/v1/feedback", params={"label": "SPAM"}, content=SPAM[1])
    assert reply.status_code == 200
    assert reply.json()["label"] == "spam"


def test_forget_forgotten_then_unknown(client: TestClient) -> None:
    raw = HAM[0]
    learned = client.post("/v1/feedback", params={"label": "ham"}, content=raw).json()
    first = client.post("/v1/forget", content=raw)
    assert first.status_code == 200
    assert first.json() == {"digest": learned["digest"], "outcome": "forgotten", "form": "rfc822"}
    second = client.post("/v1/forget", content=raw).json()
    assert second == {"digest": learned["digest"], "outcome": "unknown", "form": "rfc822"}


def test_forget_a_message_never_learned_is_unknown(client: TestClient) -> None:
    reply = client.post("/v1/forget", content=message("never seen", "nothing to forget"))
    assert reply.status_code == 200
    assert reply.json()["outcome"] == "unknown"


def test_stats_empty(client: TestClient) -> None:
    reply = client.get("/v1/stats")
    assert reply.status_code == 200
    assert reply.json() == {
        "labels": {"ham": {"messages": 0, "tokens": 0}, "spam": {"messages": 0, "tokens": 0}},
        "vocabulary": 0,
        "database": "sqlite",
        "scope": "global",
        "user": None,
        "ham_scored": 0,
        "spam_cutoff": 0.0,
    }


def test_stats_count_learning_and_return_to_zero_after_forgetting(api: Api) -> None:
    api.train()
    body = api.client.get("/v1/stats").json()
    assert body["labels"]["ham"]["messages"] == len(HAM)
    assert body["labels"]["spam"]["messages"] == len(SPAM)
    assert body["labels"]["ham"]["tokens"] > 0
    assert body["labels"]["spam"]["tokens"] > 0
    assert body["vocabulary"] > 0
    for raw in [*HAM, *SPAM]:
        assert api.client.post("/v1/forget", content=raw).json()["outcome"] == "forgotten"
    assert api.client.get("/v1/stats").json() == {
        "labels": {"ham": {"messages": 0, "tokens": 0}, "spam": {"messages": 0, "tokens": 0}},
        "vocabulary": 0,
        "database": "sqlite",
        "scope": "global",
        "user": None,
        "ham_scored": 0,
        "spam_cutoff": 0.0,
    }


def test_relabelling_moves_counts_between_labels(client: TestClient) -> None:
    raw = SPAM[2]
    client.post("/v1/feedback", params={"label": "spam"}, content=raw)
    before = client.get("/v1/stats").json()
    client.post("/v1/feedback", params={"label": "ham"}, content=raw)
    after = client.get("/v1/stats").json()
    assert after["labels"]["ham"] == before["labels"]["spam"]
    assert after["labels"]["spam"] == {"messages": 0, "tokens": 0}
    assert after["vocabulary"] == before["vocabulary"]
