"""X-Spam-Class from the filter process, as a mail server runs it: the most likely class
where the site declares more than two classes, none where it declares ham and spam only, and
never a class a sender forged."""

from __future__ import annotations

import random

import pytest

from app.service import SpamFilter
from tests.adapters.pipe.conftest import RunFilter
from tests.adapters.pipe.roundtrip import check_round_trip
from tests.builders import ham_message, spam_message
from tests.conftest import ServiceFactory, SettingsFactory

THREE = {"SPAMFILTER_MODEL__CLASSES": "ham,spam,newsletter"}


@pytest.fixture
def three(
    trained: SpamFilter, make_settings: SettingsFactory, make_service: ServiceFactory
) -> SpamFilter:
    """The trained model as the filter process sees it with THREE."""
    return make_service(make_settings(model={"classes": ["ham", "spam", "newsletter"]}))


def test_the_filter_adds_the_most_likely_class(three: SpamFilter, run_filter: RunFilter) -> None:
    rng = random.Random(41)
    for raw in (spam_message(rng, 400), ham_message(rng, 401)):
        expected = three.classify(raw).class_name
        result = run_filter(raw, env=THREE)
        assert result.stderr == b""
        fields = check_round_trip(raw, result.stdout)
        assert fields["X-Spam-Class"] == expected
        assert expected in ("ham", "spam", "newsletter")


def test_a_forged_class_is_dropped_and_none_added_for_ham_and_spam(
    three: SpamFilter, run_filter: RunFilter
) -> None:
    raw = ham_message(random.Random(42), 402)
    forged = b"X-Spam-Class: newsletter\r\n" + raw
    plain = run_filter(forged)
    assert b"X-Spam-Class" not in plain.stdout
    assert "X-Spam-Class" not in check_round_trip(forged, plain.stdout)
    declared = run_filter(forged, env=THREE)
    assert declared.stdout.count(b"X-Spam-Class: ") == 1
    assert check_round_trip(forged, declared.stdout)["X-Spam-Class"] == (
        three.classify(raw).class_name
    )
