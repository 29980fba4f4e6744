"""Token ids: xxh3-64 as a signed 64-bit integer, stable across processes, stored exactly."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import sqlalchemy as sa
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from app.domain.token_ids import token_id, token_ids
from app.storage import dialect
from app.storage.tables import token_count

# Pinned: every stored count is keyed by these ids, so a change of hash breaks every database.
KNOWN = {
    "viagra": 1861208466256785166,
    "subject:free": 3334959430910797510,
    "from:domain:example.org": 6923195181670584357,
    "url:host:win.example.com": -63401321695180200,
    "é": -606849052844159821,
}


def reference_id(text: str) -> int:
    """The same id computed another way: the big-endian digest read as a signed integer."""
    data = text.encode("utf-8", "surrogatepass")
    return int.from_bytes(xxhash.xxh3_64(data).digest(), "big", signed=True)


@pytest.mark.parametrize(("text", "expected"), KNOWN.items())
def test_known_ids(text: str, expected: int) -> None:
    assert token_id(text) == expected


@given(st.text(max_size=60))
def test_signed_64_bit_and_equal_to_the_reference(text: str) -> None:
    value = token_id(text)
    assert -(2**63) <= value < 2**63
    assert value == reference_id(text)


@given(st.lists(st.text(max_size=20) | st.sampled_from(["caf\udcc3", "\udcff", "é"]), max_size=30))
def test_a_message_s_ids_are_each_token_s_id_in_order(texts: list[str]) -> None:
    """``token_ids``, one loop over a message's tokens, gives each its id, in order."""
    ids = token_ids(texts)
    assert list(ids.items()) == [(text, reference_id(text)) for text in dict.fromkeys(texts)]
    assert all(token_id(text) == ids[text] for text in texts)
    assert token_ids(KNOWN) == KNOWN


def test_ids_do_not_depend_on_the_process_hash_seed() -> None:
    code = (
        f"from app.domain.token_ids import token_id\nprint([token_id(t) for t in {list(KNOWN)!r}])"
    )
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(result.stdout.strip())
    assert outputs == {str(list(KNOWN.values()))}


def test_both_signs_and_the_extremes_survive_the_database(engine: sa.Engine) -> None:
    ids = [-(2**63), -1, 0, 1, 2**63 - 1, *KNOWN.values()]
    with engine.begin() as conn:
        counts = {"ham_messages": 1, "ham_occurrences": 1, "spam_messages": 0}
        rows = [
            {"scope_id": 1, "token_id": i, **counts, "spam_occurrences": 0, "seen_day": 0}
            for i in sorted(ids)
        ]
        dialect.increment(conn, token_count, rows)
    with engine.connect() as conn:
        stored = conn.execute(
            sa.select(token_count.c.token_id).where(
                dialect.id_filter(conn, token_count.c.token_id, ids)
            )
        ).scalars()
        assert sorted(stored) == sorted(ids)
