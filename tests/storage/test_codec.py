"""The token-bag codec of learned-message records."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.storage.codec import decode_bag, decode_wide, encode_bag, encode_wide

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
COUNT = st.integers(min_value=1, max_value=2**31 - 1)
# Counts as learning makes them: mostly 1, at most the tokenizer's max_tokens (5,000).
SMALL = st.integers(min_value=1, max_value=5_000)


@given(st.dictionaries(INT64, COUNT, max_size=300))
def test_round_trip_of_both_layouts(bag: dict[int, int]) -> None:
    assert decode_bag(encode_bag(bag)) == bag
    assert decode_bag(encode_wide(bag)) == bag
    assert decode_wide(encode_wide(bag)) == bag


@given(st.dictionaries(INT64, COUNT, max_size=50))
def test_encodings_are_independent_of_insertion_order(bag: dict[int, int]) -> None:
    reordered = dict(reversed(list(bag.items())))
    assert encode_bag(bag) == encode_bag(reordered)
    assert encode_wide(bag) == encode_wide(reordered)
    assert len(encode_wide(bag)) == 12 * len(bag)


@given(st.dictionaries(INT64, SMALL, min_size=1, max_size=300))
def test_stored_counts_take_one_byte_each_below_256_else_two(bag: dict[int, int]) -> None:
    width = 1 if max(bag.values()) < 256 else 2
    blob = encode_bag(bag)
    assert len(blob) == (8 + width) * len(bag) + 1
    assert blob[-1] == width
    assert len(blob) % 12  # never mistaken for the wide layout


@pytest.mark.parametrize(
    ("largest", "size"),
    [(255, 2 * 9 + 1), (256, 2 * 10 + 1), (65_535, 2 * 10 + 1), (65_536, 2 * 12)],
)
def test_the_narrowest_width_that_holds_every_count(largest: int, size: int) -> None:
    bag = {1: 1, -5: largest}
    blob = encode_bag(bag)
    assert len(blob) == size
    assert decode_bag(blob) == bag


def test_extremes_and_the_empty_bag() -> None:
    bag = {-(2**63): 1, 2**63 - 1: 2**31 - 1, 0: 7, -1: 3}
    assert decode_bag(encode_bag(bag)) == bag
    assert encode_bag(bag) == encode_wide(bag)  # a count past 16 bits: the wide layout
    assert encode_wide({}) == b""
    assert decode_bag(b"") == {}
    assert decode_bag(encode_bag({})) == {}


def test_layouts_are_little_endian_ids_ascending_then_counts() -> None:
    ids = (-1).to_bytes(8, "little", signed=True) + (2).to_bytes(8, "little", signed=True)
    assert encode_bag({2: 5, -1: 1}) == ids + bytes([1, 5]) + bytes([1])
    assert encode_bag({2: 300, -1: 1}) == ids + (1).to_bytes(2, "little") + (300).to_bytes(
        2, "little"
    ) + bytes([2])
    assert encode_wide({2: 5, -1: 1}) == ids + (1).to_bytes(4, "little", signed=True) + (
        5
    ).to_bytes(4, "little", signed=True)


def test_a_record_stored_in_the_wide_layout_is_read_as_it_is() -> None:
    """Records stored before the narrow layout keep their bytes and their bag."""
    bag = {9: 1, 3: 2, -7: 1}
    assert decode_bag(encode_wide(bag)) == bag


@pytest.mark.parametrize("length", [1, 11, 13, 25])
def test_a_truncated_wide_blob_is_refused(length: int) -> None:
    with pytest.raises(ValueError, match="multiple of 12"):
        decode_wide(bytes(length))


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (bytes(10) + bytes([3]), "not a count width"),
        (bytes(10) + bytes([0]), "not a count width"),
        (bytes(9 + 3) + bytes([1]), "whole tokens"),
        (bytes(10 + 2) + bytes([2]), "whole tokens"),
    ],
)
def test_a_damaged_stored_blob_is_refused(blob: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decode_bag(blob)
