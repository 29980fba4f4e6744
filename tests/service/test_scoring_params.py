"""The scoring parameters the Judge builds once from the settings (app.domain.scoring)."""

from __future__ import annotations

import pytest

from app.domain.labels import LABELS
from app.domain.scoring import ScoringParams
from app.service.judging import scoring_params
from app.settings.schema import Settings
from tests.environment import drop_settings


@pytest.fixture(autouse=True)
def no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings from nothing but the test's arguments."""
    drop_settings(monkeypatch)


def test_the_defaults_read_as_the_settings_say() -> None:
    settings = Settings(_env_file=None)
    model = settings.model
    assert scoring_params(settings) == ScoringParams(
        labels=LABELS,
        kind=model.kind,
        counting=model.counting,
        alpha=model.alpha,
        top=model.top_tokens,
        per_kind=model.top_per_kind,
        floor=model.length_floor,
        distinct=model.distinct_min_messages,
        fallback_strength=settings.users.fallback_strength,
        min_messages=settings.decision.min_messages,
    )


def test_zero_and_off_mean_none() -> None:
    """top_tokens 0 scores every token, normalise_length off has no floor, and
    distinct_min_messages 0 counts every token: None for the maths."""
    settings = Settings(
        _env_file=None,
        model={
            "top_tokens": 0,
            "normalise_length": False,
            "length_floor": 7,
            "distinct_min_messages": 0,
            "kind": "bernoulli",
            "counting": "occurrences",
            "alpha": 0.5,
        },
        users={"fallback_strength": 0},
        decision={"min_messages": 3},
    )
    params = scoring_params(settings)
    assert (params.top, params.floor, params.distinct) == (None, None, None)
    assert (params.kind, params.counting, params.alpha) == ("bernoulli", "occurrences", 0.5)
    assert (params.fallback_strength, params.min_messages) == (0, 3)


def test_each_setting_lands_in_its_own_parameter() -> None:
    settings = Settings(
        _env_file=None,
        model={"top_tokens": 30, "length_floor": 7, "distinct_min_messages": 12},
        users={"fallback_strength": 40},
        decision={"min_messages": 5},
    )
    params = scoring_params(settings)
    assert (params.top, params.floor, params.distinct) == (30, 7, 12)
    assert (params.fallback_strength, params.min_messages) == (40, 5)
