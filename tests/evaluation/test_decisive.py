"""Each message's share of 1-ROCA% (app.evaluation.metrics.misordered_pairs) and the list of
the messages that decide a run (app.evaluation.decisive), against brute force over pairs."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.evaluation.decisive import decisive, table
from app.evaluation.metrics import misordered_pairs, roc_area_above_pct
from app.evaluation.resultfile import Scored

# Few distinct values, so that ties between a spam and a ham are common.
SCORES = st.lists(st.sampled_from([-3.0, -1.0, 0.0, 0.5, 1.0, 2.0, 7.5]), min_size=1, max_size=12)


def _brute(spam: list[float], ham: list[float]) -> tuple[list[float], list[float]]:
    def lost(s: float, h: float) -> float:
        return 1.0 if h > s else 0.5 if h == s else 0.0

    return [sum(lost(s, h) for h in ham) for s in spam], [
        sum(lost(s, h) for s in spam) for h in ham
    ]


@given(SCORES, SCORES)
def test_each_message_counts_the_pairs_it_ranks_wrong(spam: list[float], ham: list[float]) -> None:
    by_spam, by_ham = misordered_pairs(spam, ham)
    assert (by_spam, by_ham) == _brute(spam, ham)
    # Both sides count every misordered pair once: 1-ROCA% over the pairs.
    assert sum(by_spam) == sum(by_ham)
    assert math.isclose(100 * sum(by_spam) / (len(spam) * len(ham)), roc_area_above_pct(spam, ham))


@given(SCORES, SCORES)
def test_a_message_s_share_and_the_figure_without_it(spam: list[float], ham: list[float]) -> None:
    messages = {f"s{k}": Scored("spam", x, "spam") for k, x in enumerate(spam)}
    messages |= {f"h{k}": Scored("ham", x, "ham") for k, x in enumerate(ham)}
    found = decisive(messages, 3)
    if roc_area_above_pct(spam, ham) == 0:
        assert found == []
        return
    assert [item.pairs for item in found] == sorted((item.pairs for item in found), reverse=True)
    for item in found:
        rest = {path: m for path, m in messages.items() if path != item.path}
        rest_spam = [m.log_odds for m in rest.values() if m.label == "spam"]
        rest_ham = [m.log_odds for m in rest.values() if m.label == "ham"]
        if rest_spam and rest_ham:
            assert math.isclose(
                item.roca_without_pct, roc_area_above_pct(rest_spam, rest_ham), abs_tol=1e-12
            )
        assert 0 < item.share <= 1
    assert all(item.pairs > 0 for item in found)


def test_one_mislabelled_ham_is_most_of_the_figure() -> None:
    # Nine spam above nine ham, a "ham" scored above every spam (10 lost pairs) and a spam
    # below five of the ham and the "ham" (6): 15 lost pairs in all.
    messages = {f"spam/{k}": Scored("spam", 10.0 + k, "spam") for k in range(9)}
    messages |= {f"ham/{k}": Scored("ham", -10.0 - k, "ham") for k in range(9)}
    messages |= {"ham/promotion": Scored("ham", 30.0, "spam")}
    messages |= {"spam/odd": Scored("spam", -14.5, "ham")}
    found = decisive(messages, 2)
    assert [item.path for item in found] == ["ham/promotion", "spam/odd"]
    assert (found[0].pairs, found[1].pairs) == (10, 6)
    assert found[0].share == pytest.approx(10 / 15)
    assert found[0].roca_without_pct == pytest.approx(100 * 5 / (10 * 9))
    text = table("run", found)
    assert "ham/promotion" in text.splitlines()[2] and "66.7%" in text


def test_nothing_to_list_when_every_pair_is_right() -> None:
    messages = {"a": Scored("spam", 5.0, "spam"), "b": Scored("ham", -5.0, "ham")}
    assert decisive(messages, 5) == []
    assert "none" in table("run", [])
