"""User names: canonical form, refusals, and the scope a user's counts live in."""

from __future__ import annotations

import pytest

from app.domain.users import (
    MAX_USER_LENGTH,
    InvalidUserName,
    normalise_user,
    user_of,
    user_scope,
)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, None),
        ("", None),
        ("   ", None),
        ("<>", None),
        ("Alice@Example.ORG", "alice@example.org"),
        ("  <bob@example.org>  ", "bob@example.org"),
        ("carol", "carol"),
        ("dörte@exämple.de", "dörte@exämple.de"),
    ],
)
def test_normalise_user(given: str | None, expected: str | None) -> None:
    assert normalise_user(given) == expected


@pytest.mark.parametrize("bad", ["a b", "a/b", "a\x00b", "tab\there", "x" * (MAX_USER_LENGTH + 1)])
def test_names_that_cannot_name_a_model_are_refused(bad: str) -> None:
    with pytest.raises(InvalidUserName):
        normalise_user(bad)


def test_a_user_scope_lies_under_its_base_and_maps_back() -> None:
    scope = user_scope("global", "alice@example.org")
    assert scope == "global/user:alice@example.org"
    assert user_of("global", scope) == "alice@example.org"
    assert user_of("global", "global") is None
    assert user_of("other", scope) is None
