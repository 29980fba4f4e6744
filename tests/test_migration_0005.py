"""Revision 0005 marks narrow learned-message bags; stepping below it widens them again, so
code older than it reads every record, and stepping up again leaves them as they are."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.service import Outcome, SpamFilter
from app.storage.codec import decode_bag
from app.storage.engine import make_engine
from app.storage.migrate import downgrade, upgrade
from app.storage.tables import learned_message
from tests.builders import make_message
from tests.storage.snapshot import assert_consistent, snapshot


def stored(database_url: str) -> dict[str, bytes]:
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.select(learned_message.c.digest, learned_message.c.tokens))
            return {digest: bytes(blob) for digest, blob in rows}
    finally:
        engine.dispose()


def test_downgrade_widens_every_narrow_bag_and_upgrade_keeps_them(
    service: SpamFilter, database_url: str
) -> None:
    messages = [
        (make_message(f"offer {n}", f"cheap pills offer number {n} " * (1 + n % 3)), "spam")
        for n in range(12)
    ] + [
        (make_message(f"minutes {n}", f"meeting notes for week {n} agenda attached"), "ham")
        for n in range(12)
    ]
    # A word 300 times: a count past 255, stored with two-byte counts.
    messages.append((make_message("report", "figure " * 300 + "appendix"), "ham"))
    assert {service.learn(raw, label).outcome for raw, label in messages} == {Outcome.LEARNED}
    before = stored(database_url)
    assert {blob[-1] for blob in before.values()} == {1, 2}
    learned = snapshot(database_url)

    engine = make_engine(database_url)
    try:
        downgrade(engine, "0004")
        widened = stored(database_url)
        assert all(len(blob) % 12 == 0 for blob in widened.values())
        assert {d: decode_bag(b) for d, b in widened.items()} == {
            d: decode_bag(b) for d, b in before.items()
        }
        upgrade(engine)
    finally:
        engine.dispose()
    assert stored(database_url) == widened
    assert snapshot(database_url) == learned

    assert {service.forget(raw).outcome for raw, _ in messages} == {Outcome.FORGOTTEN}
    snap = assert_consistent(database_url)
    assert snap["token_count"] == snap["learned_message"] == []


def test_a_damaged_bag_stops_the_downgrade_naming_its_record(
    service: SpamFilter, database_url: str
) -> None:
    """A bag in neither layout stops the downgrade with its digest, and nothing changes:
    the database stays at 0005 with every bag as it was."""
    for n in range(6):
        service.learn(make_message(f"note {n}", f"words of note number {n} " * (1 + n)), "ham")
    engine = make_engine(database_url)
    try:
        downgrade(engine, "0005")  # the revisions after it step down cleanly
        with engine.begin() as conn:
            digests = sorted(conn.execute(sa.select(learned_message.c.digest)).scalars())
            conn.execute(
                sa.update(learned_message)
                .where(learned_message.c.digest == digests[3])
                .values(tokens=b"\x01\x02\x03\x04\x05")
            )
        before = stored(database_url)
        with pytest.raises(ValueError, match=f"learned message {digests[3]}: its token bag"):
            downgrade(engine, "0004")
        assert stored(database_url) == before
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar() == (
                "0005"
            )
    finally:
        engine.dispose()
