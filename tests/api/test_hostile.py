"""Every attack shape of ``benchmarks.hostile`` through HTTP: a verdict or a clean 4xx,
never a 500, and never the forged X-Spam headers taken for the filter's own."""

from __future__ import annotations

import pytest

from benchmarks.hostile import SHAPES, Shape
from tests.api.conftest import Api, MakeApi

# Bytes: deep enough to pass the depths that once raised RecursionError (about 1,000 nested
# multiparts, 500 nested comments in From:), small enough that the module runs in seconds.
SIZE = 128 * 1024


@pytest.fixture(scope="module")
def built() -> dict[str, bytes]:
    """Each shape's message at ``SIZE`` bytes, built once."""
    return {item.name: item.build(SIZE) for item in SHAPES}


@pytest.fixture
def trained(make_api: MakeApi) -> Api:
    """A trained app whose unexpected errors come back as responses, as a client sees them."""
    api = make_api(raise_errors=False)
    api.train()
    return api


@pytest.mark.parametrize("shape", SHAPES, ids=[item.name for item in SHAPES])
def test_classify_answers_every_hostile_shape(
    trained: Api, built: dict[str, bytes], shape: Shape
) -> None:
    reply = trained.client.post("/v1/classify", content=built[shape.name])
    assert reply.status_code == 200 or 400 <= reply.status_code < 500, reply.text
    if reply.status_code == 200:
        body = reply.json()
        assert body["verdict"] in ("ham", "unsure", "spam")
        assert ["X-Spam-Status", "No, score=-100.0 required=5.0"] not in body["mail"]["headers"]
    else:
        assert set(reply.json()) == {"error", "detail"}


@pytest.mark.parametrize("shape", SHAPES, ids=[item.name for item in SHAPES])
def test_feedback_learns_every_hostile_shape(
    trained: Api, built: dict[str, bytes], shape: Shape
) -> None:
    reply = trained.client.post("/v1/feedback?label=spam", content=built[shape.name])
    assert reply.status_code == 200 or 400 <= reply.status_code < 500, reply.text
    if reply.status_code == 200:
        assert reply.json()["outcome"] in ("learned", "relabelled", "unchanged", "skipped")
    else:
        assert set(reply.json()) == {"error", "detail"}
