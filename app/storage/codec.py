"""The token bag of a learned message as bytes: n signed 64-bit ids, then n 32-bit counts."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Mapping


def encode_bag(bag: Mapping[int, int]) -> bytes:
    """Little-endian ids (int64) then counts (int32), ids ascending."""
    ids = array("q", sorted(bag))
    counts = array("i", (bag[i] for i in ids))
    if sys.byteorder == "big":  # pragma: no cover - every supported platform is little-endian
        ids.byteswap()
        counts.byteswap()
    return ids.tobytes() + counts.tobytes()


def decode_bag(blob: bytes) -> dict[int, int]:
    """The inverse of ``encode_bag``."""
    if len(blob) % 12:
        raise ValueError("token bag blob has a length that is not a multiple of 12")
    n = len(blob) // 12
    ids = array("q")
    ids.frombytes(blob[: 8 * n])
    counts = array("i")
    counts.frombytes(blob[8 * n :])
    if sys.byteorder == "big":  # pragma: no cover
        ids.byteswap()
        counts.byteswap()
    return dict(zip(ids, counts, strict=True))
