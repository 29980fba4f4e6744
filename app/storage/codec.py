"""The token bag of a learned message as bytes: its n token ids, then their n counts.

Stored (``encode_bag``): n little-endian signed 64-bit ids in ascending order, then the n
counts in the narrowest width that holds them all, then one byte naming that width: 1
(unsigned 8-bit) or 2 (unsigned 16-bit, little-endian). The ids are random 64-bit hashes and
take the 8 bytes each; the counts are almost all 1, and the records are most of a database
(two thirds of a SQLite file after learning the SpamAssassin corpus's first half), so a bag
of 200 tokens takes 1,801 bytes instead of 2,400.

Wide (``encode_wide``): the n ids, then n little-endian signed 32-bit counts, no width byte:
12n bytes. This is the layout of the export file's bags, of every record stored before the
narrow ones, and of a stored bag whose counts do not fit 16 bits. ``decode_bag`` reads all of
them: a narrow bag is 9n + 1 or 10n + 1 bytes, never a multiple of 12.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Mapping

# Width byte -> array type code of the counts.
_NARROW = {1: "B", 2: "H"}
_LIMITS = ((256, 1), (65_536, 2))


def encode_bag(bag: Mapping[int, int]) -> bytes:
    """The stored layout: ids ascending, then the counts as narrow as they fit, then the
    width byte; the wide layout when a count needs more than 16 bits."""
    ids = array("q", sorted(bag))
    largest = max(bag.values(), default=0)
    width = next((w for limit, w in _LIMITS if 0 <= largest < limit), None)
    if width is None or min(bag.values(), default=0) < 0:
        return encode_wide(bag)
    counts = array(_NARROW[width], [bag[i] for i in ids])
    if sys.byteorder == "big":  # pragma: no cover - every supported platform is little-endian
        ids.byteswap()
        counts.byteswap()
    return ids.tobytes() + counts.tobytes() + bytes([width])


def encode_wide(bag: Mapping[int, int]) -> bytes:
    """The wide layout: little-endian ids (int64) then counts (int32), ids ascending."""
    ids = array("q", sorted(bag))
    counts = array("i", [bag[i] for i in ids])
    if sys.byteorder == "big":  # pragma: no cover
        ids.byteswap()
        counts.byteswap()
    return ids.tobytes() + counts.tobytes()


def decode_bag(blob: bytes) -> dict[int, int]:
    """The bag of a blob in either layout (see the module's description)."""
    if len(blob) % 12 == 0:
        return decode_wide(blob)
    width = blob[-1]
    if width not in _NARROW:
        raise ValueError(f"token bag blob ends in {width}, not a count width (1 or 2)")
    n, rest = divmod(len(blob) - 1, 8 + width)
    if rest:
        raise ValueError(f"token bag blob of {len(blob)} bytes does not hold whole tokens")
    return _pairs(blob[: 8 * n], array(_NARROW[width], blob[8 * n : -1]))


def decode_wide(blob: bytes) -> dict[int, int]:
    """The inverse of ``encode_wide``; ValueError for any other layout."""
    if len(blob) % 12:
        raise ValueError("token bag blob has a length that is not a multiple of 12")
    n = len(blob) // 12
    return _pairs(blob[: 8 * n], array("i", blob[8 * n :]))


def _pairs(id_bytes: bytes, counts: array[int]) -> dict[int, int]:
    ids = array("q", id_bytes)
    if sys.byteorder == "big":  # pragma: no cover
        ids.byteswap()
        counts.byteswap()
    return dict(zip(ids, counts, strict=True))
