"""64-bit token ids: xxh3 of the token's UTF-8 bytes, as a signed integer (SQL BIGINT).

xxh3_64 costs ~170 ns a token here and showed no collision over ~1 M distinct tokens; at
2^64 values a collision among 10^7 tokens has probability ~3e-6.
"""

from __future__ import annotations

from collections.abc import Iterable

from xxhash import xxh3_64_intdigest

_SIGN = 1 << 63
_SPAN = 1 << 64


def token_id(token: str) -> int:
    """The signed 64-bit id of ``token`` (``token_ids`` of it alone)."""
    return token_ids((token,))[token]


def token_ids(tokens: Iterable[str]) -> dict[str, int]:
    """Each of ``tokens`` with its signed 64-bit id, in the order given: the xxh3 of its
    UTF-8 bytes (surrogate escapes kept), read as a signed integer.

    why: one loop for a message's tokens; its ~200 ids took 84 µs as a call a token and
    take 67 µs so (docs/benchmarks.md, "Measurements behind the design").
    """
    ids: dict[str, int] = {}
    for token in tokens:
        value: int = xxh3_64_intdigest(token.encode("utf-8", "surrogatepass"))
        ids[token] = value - _SPAN if value >= _SIGN else value
    return ids
