"""The settings lines of an eval report name the scoring rule that was used."""

from __future__ import annotations

from typing import Any

import pytest

from app.evaluation.report import settings_lines


def doc(**model: Any) -> dict[str, Any]:
    base = {"kind": "multinomial", "counting": "presence", "alpha": 1.0}
    return {
        "settings": {
            "model": {**base, **model},
            "decision": {"ham_log_odds": 0.0, "spam_log_odds": 10.0, "min_messages": 10},
            "tokenizer": {"max_token_length": 40, "max_tokens": 5000, "scan_bytes": 524288},
            "training": {"mode": "thick", "margin": 30.0},
        },
        "timing": {"includes": "classify: read + parse + tokenise + score; train: learn"},
    }


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (
            {"top_tokens": 25, "top_per_kind": True, "normalise_length": True, "length_floor": 10},
            "top_tokens 25 per kind (body words; header/URL/MIME tokens), "
            "length-normalised (floor 10)",
        ),
        (
            {
                "top_tokens": 25,
                "top_per_kind": False,
                "normalise_length": False,
                "length_floor": 10,
            },
            "alpha 1.0, top_tokens 25",
        ),
        # Every token scores: there is no budget to normalise to, whatever the setting says.
        ({"top_tokens": 0, "normalise_length": True, "length_floor": 10}, "top_tokens 0"),
        (
            {"top_tokens": 25, "distinct_min_messages": 10},
            "top_tokens 25, identical learned counts once (from 10 messages)",
        ),
        ({"top_tokens": 25, "distinct_min_messages": 0}, "top_tokens 25"),
    ],
)
def test_the_model_line_names_the_token_budget_and_the_normalisation(
    model: dict[str, Any], expected: str
) -> None:
    line = settings_lines(doc(**model))[0]
    assert line.endswith(expected), line
