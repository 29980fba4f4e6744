"""The token-bag codec of learned-message records."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.storage.codec import decode_bag, encode_bag

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
COUNT = st.integers(min_value=1, max_value=2**31 - 1)


@given(st.dictionaries(INT64, COUNT, max_size=300))
def test_round_trip(bag: dict[int, int]) -> None:
    assert decode_bag(encode_bag(bag)) == bag


@given(st.dictionaries(INT64, COUNT, max_size=50))
def test_encoding_is_twelve_bytes_a_token_and_independent_of_insertion_order(
    bag: dict[int, int],
) -> None:
    reordered = dict(reversed(list(bag.items())))
    assert encode_bag(bag) == encode_bag(reordered)
    assert len(encode_bag(bag)) == 12 * len(bag)


def test_extremes_and_the_empty_bag() -> None:
    bag = {-(2**63): 1, 2**63 - 1: 2**31 - 1, 0: 7, -1: 3}
    assert decode_bag(encode_bag(bag)) == bag
    assert encode_bag({}) == b""
    assert decode_bag(b"") == {}


def test_layout_is_little_endian_ids_ascending_then_counts() -> None:
    blob = encode_bag({2: 5, -1: 1})
    assert blob == (
        (-1).to_bytes(8, "little", signed=True)
        + (2).to_bytes(8, "little", signed=True)
        + (1).to_bytes(4, "little", signed=True)
        + (5).to_bytes(4, "little", signed=True)
    )


@pytest.mark.parametrize("length", [1, 11, 13, 25])
def test_a_truncated_blob_is_refused(length: int) -> None:
    with pytest.raises(ValueError, match="multiple of 12"):
        decode_bag(bytes(length))
