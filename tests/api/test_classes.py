"""HTTP with more than two classes: feedback with any declared class, an undeclared one
refused naming the classes, and classify's ``class``."""

from __future__ import annotations

import math

import pytest

from tests.api.conftest import MakeApi
from tests.api.samples import HAM, HAMMY, SPAM, SPAMMY, message

NEWS = [
    message("Weekly digest, issue 12", "This edition: featured stories and the podcast roundup."),
    message("Weekly digest, issue 13", "Readers' column, highlights and featured stories."),
]
NEWSY = message("Weekly digest, issue 14", "Featured stories, the readers' column and highlights.")
MODEL = {"classes": "ham,spam,newsletter", "junk_classes": "spam"}


def test_feedback_with_a_declared_class_and_classify_names_the_class(make_api: MakeApi) -> None:
    api = make_api(model=MODEL)
    api.train()
    for raw in NEWS:
        reply = api.client.post("/v1/feedback", params={"label": "Newsletter"}, content=raw)
        assert reply.status_code == 200, reply.text
        assert reply.json()["label"] == "newsletter"
        assert reply.json()["outcome"] == "learned"
    answers = {
        name: api.client.post("/v1/classify", content=raw).json()
        for name, raw in (("newsletter", NEWSY), ("spam", SPAMMY), ("ham", HAMMY))
    }
    for name, body in answers.items():
        assert body["class"] == name
        assert set(body["log_posteriors"]) == {"ham", "spam", "newsletter"}
        # The log-odds are the side-merged model's (docs/classes.md, "Scores"): newsletter
        # and ham summed against spam, as a two-class site would have learned them.
        odds = body["log_odds"]
        assert body["spam_probability"] == pytest.approx(1 / (1 + math.exp(-odds)))
        assert (odds > 0) == (name == "spam")
    assert answers["newsletter"]["verdict"] == "ham"
    stats = api.client.get("/v1/stats").json()
    assert stats["labels"]["newsletter"]["messages"] == len(NEWS)
    moved = api.client.post("/v1/feedback", params={"label": "ham"}, content=NEWS[0]).json()
    assert moved["outcome"] == "relabelled"


def test_an_undeclared_class_is_a_422_naming_the_classes(make_api: MakeApi) -> None:
    api = make_api(model=MODEL)
    reply = api.client.post("/v1/feedback", params={"label": "receipts"}, content=HAM[0])
    assert reply.status_code == 422
    assert reply.json()["error"] == "invalid_label"
    assert "ham, spam, newsletter" in reply.json()["detail"]


def test_the_default_classify_answer_names_its_class(make_api: MakeApi) -> None:
    api = make_api()
    api.train()
    assert api.client.post("/v1/classify", content=SPAM[0]).json()["class"] == "spam"
    assert api.client.post("/v1/classify", content=HAM[0]).json()["class"] == "ham"
    reply = api.client.post("/v1/feedback", params={"label": "newsletter"}, content=HAM[0])
    assert reply.status_code == 422
