"""The export format on its own, streaming reads of large models, and the SQLite backup."""

from __future__ import annotations

import base64
import io
import random
import re
import sqlite3
import threading
import tracemalloc
from array import array
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.errors import InvalidDataFile, TransferRefused
from app.service import SpamFilter
from app.service.transfer_format import (
    HamScore,
    Learned,
    Scope,
    Token,
    Total,
    Writer,
    read_records,
)
from app.settings.schema import Settings
from app.storage.codec import encode_bag, encode_wide
from app.storage.migrate import head_revision
from app.storage.store import Store
from tests.builders import ham_message
from tests.conftest import ServiceFactory
from tests.environment import drop_settings
from tests.storage.snapshot import assert_consistent

DIGEST_A = "0" * 63 + "a"
DIGEST_B = "b" * 64
WHEN = datetime(2026, 3, 3, 10, 15, 0, 123456, tzinfo=UTC)


def sample() -> str:
    out = io.StringIO()
    writer = Writer(out)
    writer.header()
    writer.scope(None)
    writer.total(Total("ham", 2, 30, 12))
    writer.tokens([(-(2**63), 1, 2, 0, 0, 20500), (5, 1, 1, 0, 0, 20501)])
    writer.learned(Learned(DIGEST_A, "ham", WHEN, encode_bag({-(2**63): 2}), 1))
    writer.scope("alice")
    writer.total(Total("spam", 1, 4, 2))
    writer.tokens([(5, 0, 0, 1, 1, 20501), (7, 0, 0, 1, 3, 20501)])
    writer.learned(Learned(DIGEST_B, "spam", WHEN, encode_bag({5: 1, 7: 3}), 2))
    writer.end()
    return out.getvalue()


def read(text: str) -> list[object]:
    return [record for _, record in read_records(io.StringIO(text))]


def test_written_records_read_back() -> None:
    text = sample()
    assert text.splitlines()[0] == "spamfilter-export\t3"
    assert text.splitlines()[-1] == "end\t2\t2\t4\t2\t0"
    assert f"learned\t{DIGEST_A}\tham\t2026-03-03T10:15:00.123456Z\t" in text
    assert text.splitlines()[6].endswith("\t-")
    assert read(text) == [
        Scope(None),
        Total("ham", 2, 30, 12),
        Token(-(2**63), {"ham": (1, 2), "spam": (0, 0)}, 20500),
        Token(5, {"ham": (1, 1), "spam": (0, 0)}, 20501),
        Learned(DIGEST_A, "ham", WHEN, encode_bag({-(2**63): 2}), 1),
        Scope("alice"),
        Total("spam", 1, 4, 2),
        Token(5, {"ham": (0, 0), "spam": (1, 1)}, 20501),
        Token(7, {"ham": (0, 0), "spam": (1, 3)}, 20501),
        Learned(DIGEST_B, "spam", WHEN, encode_bag({5: 1, 7: 3}), 2),
    ]


def _replace(text: str, number: int, line: str | None) -> str:
    """``text`` with line ``number`` (1-based) replaced, or removed when ``line`` is None."""
    lines = text.splitlines(keepends=True)
    lines[number - 1 : number] = [] if line is None else [line + "\n"]
    return "".join(lines)


BAD_BAG = base64.b64encode(encode_wide({3: 0})).decode()
STAMP = "2026-03-03T10:15:00.000000Z"
LATER = f"learned\t{DIGEST_A}\tham\t{STAMP}\t"  # line 7, without its bag
NO_BIN = "\t-"  # a learned record's last field: no ham score


def raw_bag(ids: list[int]) -> str:
    """A bag as written, ids in the order given (encode_bag sorts and dedups), counts 1."""
    return base64.b64encode(
        array("q", ids).tobytes() + array("i", [1] * len(ids)).tobytes()
    ).decode()


@pytest.mark.parametrize(
    ("number", "line", "message"),
    [
        (1, "spamfilter-export\t4", "line 1: export format version '4' is not supported"),
        (
            1,
            "spamfilter-export\t0",
            "format version '0' is not supported (this version reads 1, 2 and 3)",
        ),
        (1, "something else", "line 1: not a spamfilter export file"),
        (2, "labels\tham\tjunk", "line 2: unknown label 'junk'"),
        (4, "total\tjunk\t1\t1\t1", "line 4: unknown label 'junk'"),
        (4, "total\tham\t-1\t1\t1", "line 4: -1 is not a non-negative count"),
        (4, f"total\tham\t{2**53}\t1\t1", f"line 4: {2**53} is not a non-negative count"),
        (4, f"total\tham\t{2**63}\t1\t1", f"line 4: {2**63} is not a non-negative count"),
        (4, f"total\tham\t1\t1\t{'9' * 5000}", "line 4: '9999"),
        (5, f"token\t1\t{2**53}\t2\t0\t0\t1", f"line 5: {2**53} is not a non-negative count"),
        (5, f"token\t1\t1\t2\t0\t0\t{2**31}", f"line 5: {2**31} is not a day number"),
        (5, "token\t1\t1\t2\t0\t0\t-1", "line 5: -1 is not a day number"),
        (5, "token\t01\t1\t2\t0\t0\t20500", "line 5: '01' is not a decimal integer"),
        (5, "token\t9223372036854775808\t1\t2\t0\t0\t1", "not a 64-bit signed token id"),
        (5, "token\t1\t1\t2\t0\t0", "line 5: a 'token' record has 6 fields, this one 5"),
        (6, "token\t-9223372036854775808\t1\t1\t0\t0\t1", "line 6: token records must come"),
        (7, f"learned\t{DIGEST_A}\tham\t2026-03-03 10:15:00Z\t{NO_BIN}", "line 7: time"),
        (7, LATER + "!!" + NO_BIN, "line 7: unreadable"),
        (7, LATER + BAD_BAG + NO_BIN, "positive"),
        (7, LATER + raw_bag([5, 7, 5]) + NO_BIN, "line 7: a bag holds strictly ascending"),
        (7, LATER + raw_bag([5, 5]) + NO_BIN, "line 7: a bag holds strictly ascending token ids"),
        (7, LATER + raw_bag([7, 5]) + NO_BIN, "line 7: a bag holds strictly ascending token ids"),
        (7, LATER + "A" * 1_600_004 + NO_BIN, "line 7: a bag holds at most 100,000 tokens"),
        (7, LATER + "A" * 4 * 2**20, "line 7: the line is longer than 4,194,304 characters"),
        (7, f"learned\t{DIGEST_A.upper()}\tham\t2026-03-03T10:15:00.000000Z\t\t-", "lowercase"),
        (7, LATER + raw_bag([5]), "line 7: a 'learned' record has 5 fields, this one 4"),
        (7, LATER + raw_bag([5]) + "\t82", "line 7: 82 is not a ham score bin or '-'"),
        (7, LATER + raw_bag([5]) + "\t", "line 7: '' is not a decimal integer"),
        (6, "hamscore\t3\t1", "line 6: hamscore records must come by ascending bin, before"),
        (4, "hamscore\t82\t1", "line 4: 82 is not a ham score bin"),
        (4, "hamscore\t-1\t1", "line 4: -1 is not a ham score bin"),
        (4, "hamscore\t3\t0", "line 4: a hamscore record holds a count above 0"),
        (4, f"hamscore\t3\t{2**53}", f"line 4: {2**53} is not a non-negative count"),
        (8, "scope\tsite", "line 8: scopes must come once each"),
        (8, "scope\tuser:Alice", "line 8: user scope 'user:Alice' is not a normalised"),
        (8, "scope\tother", "line 8: scope 'other' is neither"),
        (8, f"learned\t{'0' * 64}\tham\t2026-03-03T10:15:00.000000Z\t\t-", "ascending digest"),
        (13, "end\t2\t2\t4\t3\t0", "line 13: the record counts of 'end' disagree"),
        (13, "end\t2\t2\t4\t2\t1", "line 13: the record counts of 'end' disagree"),
        (13, "end\t2\t2\t4\t2", "line 13: a 'end' record has 5 fields, this one 4"),
        (13, f"end\t2\t2\t4\t{2**53}\t0", f"line 13: {2**53} is not a non-negative count"),
        # Counts that disagree with their model's totals (line 4: ham 2 30 12).
        (
            5,
            "token\t1\t3\t9\t0\t0\t20500",
            "line 5: token 1 is in 3 ham messages, more than the 2 of the ham total (line 4)",
        ),
        (
            6,
            "token\t5\t0\t0\t1\t1\t20501",
            "line 6: token 5 is in 1 spam messages, more "
            "than the 0 of the spam total (no 'total' record: 0)",
        ),
        (
            6,
            "token\t5\t1\t29\t0\t0\t20501",
            "line 6: the tokens' ham occurrences add up "
            "to 31 by this line, more than the 30 of the ham total (line 4)",
        ),
        (
            4,
            "total\tham\t2\t30\t1",
            "line 6: the tokens' ham messages add up to 2 by this "
            "line, more than the 1 of the ham total (line 4)",
        ),
        (
            12,
            f"learned\t{DIGEST_B}\tspam\t{STAMP}\t{raw_bag([5])}\t-\n"
            f"learned\t{'c' * 64}\tspam\t{STAMP}\t{raw_bag([7])}\t-",
            "line 13: 2 spam messages are recorded as learned by "
            "this line, more than the 1 of the spam total (line 9)",
        ),
        # A learned record naming a token its model's records do not hold (site holds
        # -2**63 and 5; alice 5 and 7).
        (7, LATER + raw_bag([5, 7]) + NO_BIN, "line 7: the learned record names token 7, "),
        (11, None, "line 11: the learned record names token 7, which the model's token"),
        (13, "frob", "line 13: unknown record 'frob'"),
        (13, None, "line 13: the file ends without its 'end' record"),
    ],
)
def test_a_bad_line_is_named(number: int, line: str | None, message: str) -> None:
    with pytest.raises(InvalidDataFile, match=re.escape(message)):
        read(_replace(sample(), number, line))


def test_ham_scores_and_a_learned_messages_bin_read_back() -> None:
    out = io.StringIO()
    writer = Writer(out)
    writer.header()
    writer.scope(None)
    writer.total(Total("ham", 2, 30, 12))
    writer.ham_score(HamScore(0, 1500))
    writer.ham_score(HamScore(81, 2))
    writer.tokens([(5, 1, 1, 0, 0, 20500)])
    writer.learned(Learned(DIGEST_A, "ham", WHEN, encode_bag({5: 1}), 1, ham_bin=81))
    writer.end()
    text = out.getvalue()
    assert "hamscore\t0\t1500\nhamscore\t81\t2\n" in text
    assert text.splitlines()[-2].endswith("\t81")
    assert text.splitlines()[-1] == "end\t1\t1\t1\t1\t2"
    assert read(text) == [
        Scope(None),
        Total("ham", 2, 30, 12),
        HamScore(0, 1500),
        HamScore(81, 2),
        Token(5, {"ham": (1, 1), "spam": (0, 0)}, 20500),
        Learned(DIGEST_A, "ham", WHEN, encode_bag({5: 1}), 1, ham_bin=81),
    ]


def test_the_file_holds_bags_in_the_wide_layout_whatever_was_stored() -> None:
    """A record stored narrow (the database's layout now) or wide (records stored before)
    is written alike, in the file's one layout; read back, it comes in the stored layout."""
    bag = {5: 300, -(2**63): 2}

    def line(stored: bytes) -> str:
        out = io.StringIO()
        Writer(out).learned(Learned(DIGEST_A, "ham", WHEN, stored, 2))
        return out.getvalue()

    assert encode_bag(bag) != encode_wide(bag)
    assert line(encode_bag(bag)) == line(encode_wide(bag))
    assert f"\t{base64.b64encode(encode_wide(bag)).decode()}\t" in line(encode_bag(bag))
    text = _replace(sample(), 7, line(encode_bag(bag)).rstrip("\n"))
    assert read(text)[4] == Learned(DIGEST_A, "ham", WHEN, encode_bag(bag), 2)


def test_a_bag_in_the_stored_layout_is_refused_in_a_file() -> None:
    narrow = base64.b64encode(encode_bag({5: 1})).decode()
    with pytest.raises(InvalidDataFile, match=r"line 7: .*multiple of 12"):
        read(_replace(sample(), 7, f"{LATER}{narrow}{NO_BIN}"))


def test_a_version_1_file_is_read_without_ham_scores() -> None:
    bag = base64.b64encode(encode_wide({5: 1})).decode()
    text = (
        "spamfilter-export\t1\nlabels\tham\tspam\nscope\tsite\ntotal\tham\t1\t1\t1\n"
        "token\t5\t1\t1\t0\t0\t20500\n"
        f"learned\t{DIGEST_A}\tham\t2026-03-03T10:15:00.123456Z\t{bag}\nend\t1\t1\t1\t1\n"
    )
    assert read(text) == [
        Scope(None),
        Total("ham", 1, 1, 1),
        Token(5, {"ham": (1, 1), "spam": (0, 0)}, 20500),
        Learned(DIGEST_A, "ham", WHEN, encode_bag({5: 1}), 1),
    ]
    with pytest.raises(InvalidDataFile, match="line 6: unknown record 'hamscore'"):
        read(text.replace("learned", "hamscore\t3\t1\nlearned"))


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_file_has_the_tokens_its_model_lacks_left_out_of_a_bag(version: int) -> None:
    """Releases before version 3 wrote bags as stored, naming tokens expiry had deleted: the
    ids the model's records do not hold are left out (as export writes the bag now), the
    rest read as they are; the same record in a version-3 file is refused."""
    ham_bin = "" if version == 1 else NO_BIN
    bag = base64.b64encode(encode_wide({3: 4, 5: 2, 9: 1})).decode()
    learned = f"learned\t{DIGEST_A}\tham\t2026-03-03T10:15:00.123456Z\t{bag}{ham_bin}\n"
    end = "end\t1\t1\t1\t1" + ("" if version == 1 else "\t0")
    token = "token\t5\t1\t2\t0\t0\t20500\n"
    body = f"labels\tham\tspam\nscope\tsite\ntotal\tham\t1\t2\t1\n{token}{learned}{end}\n"
    assert read(f"spamfilter-export\t{version}\n{body}")[-1] == Learned(
        DIGEST_A, "ham", WHEN, encode_bag({5: 2}), 1
    )
    if version == 2:
        with pytest.raises(InvalidDataFile, match="line 6: the learned record names token 3,"):
            read(f"spamfilter-export\t3\n{body}")


def test_the_largest_values_read_back() -> None:
    """Counts up to 2**53 - 1, a seen day up to 2**31 - 1, a bag of 100,000 tokens."""
    top = 2**53 - 1
    bag = encode_bag({n: 1 for n in range(100_000)})
    held = [Token(n, {"ham": (0, 0), "spam": (0, 0)}, 1) for n in range(100_000)]
    out = io.StringIO()
    writer = Writer(out)
    writer.header()
    writer.scope(None)
    writer.total(Total("ham", top, top, top))
    writer.total(Total("spam", top, top, top))
    writer.tokens(
        [*((n, 0, 0, 0, 0, 1) for n in range(100_000)), (2**63 - 1, top, top, top, top, 2**31 - 1)]
    )
    writer.learned(Learned(DIGEST_A, "spam", WHEN, bag, 100_000))
    writer.end()
    assert read(out.getvalue()) == [
        Scope(None),
        Total("ham", top, top, top),
        Total("spam", top, top, top),
        *held,
        Token(2**63 - 1, {"ham": (top, top), "spam": (top, top)}, 2**31 - 1),
        Learned(DIGEST_A, "spam", WHEN, bag, 100_000),
    ]


def test_a_long_line_is_refused_as_it_arrives() -> None:
    """The reader looks at a line's length before anything else, and reads no further."""
    served: list[int] = []

    def lines() -> Iterator[str]:
        for number, line in enumerate(sample().splitlines(keepends=True), start=1):
            served.append(number)
            yield ("x" * (4 * 2**20) + line) if number == 5 else line

    with pytest.raises(InvalidDataFile, match="line 5: the line is longer"):
        read_all(lines())
    assert served == [1, 2, 3, 4, 5]


def read_all(lines: Iterator[str]) -> list[object]:
    return [record for _, record in read_records(lines)]


def test_truncation_anywhere_is_detected() -> None:
    text = sample()
    for cut in range(len(text)):  # every prefix, mid-line ones included
        with pytest.raises(InvalidDataFile):
            read(text[:cut])
    with pytest.raises(InvalidDataFile, match="after the 'end' record"):
        read(text + "scope\tuser:zed\n")


def test_records_before_their_place_are_refused() -> None:
    with pytest.raises(InvalidDataFile, match="line 2: the 'labels' record must follow"):
        read("spamfilter-export\t1\nscope\tsite\n")
    with pytest.raises(InvalidDataFile, match="line 3: a 'total' record before any 'scope'"):
        read("spamfilter-export\t1\nlabels\tham\tspam\ntotal\tham\t1\t1\t1\n")


ROWS = 50_000


def test_exporting_streams_a_batch_at_a_time(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading 50k token rows in batches of 1,000 holds about one batch (~0.2 MB): were
    they all in memory at once, the peak would be ~10 MB."""
    monkeypatch.setattr("app.storage.transfer.BATCH", 1_000)
    store = Store(engine)
    with store.transaction(write=True) as tx:
        tx.add("global", "ham", {1: 1}, vocabulary=True)
    with engine.begin() as conn:
        scope_id = conn.execute(sa.text("SELECT id FROM model_scope")).scalar_one()
        conn.execute(
            sa.text(
                "INSERT INTO token_count (scope_id, token_id, ham_messages, ham_occurrences,"
                " spam_messages, spam_occurrences, seen_day)"
                " WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :rows)"
                " SELECT :scope, i * 7919 - 800000000, 1, 2, 0, 3, 20000 FROM n"
            ),
            {"rows": ROWS, "scope": scope_id},
        )

    class Sink:
        lines = 0

        def write(self, text: str, /) -> int:
            self.lines += text.count("\n")
            return len(text)

    sink = Sink()
    tracemalloc.start()
    try:
        with store.transaction(write=False) as tx:
            Writer(sink).tokens(tx.model_rows().tokens("global"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sink.lines == ROWS + 1
    assert peak < 2_000_000, f"peak {peak:,} bytes"


@pytest.fixture
def sqlite_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    drop_settings(monkeypatch)
    url = f"sqlite:///{tmp_path / 'live.db'}"
    return Settings(_env_file=None, database_url=url, training_mode="everything")


def test_backup_copies_a_database_that_is_being_written(
    sqlite_settings: Settings, make_service: ServiceFactory, tmp_path: Path
) -> None:
    service = make_service(sqlite_settings)
    writer = make_service(sqlite_settings)  # a second engine: another writer
    rng = random.Random(3)
    for serial in range(50):
        service.learn(ham_message(rng, serial), "ham")
    stop = threading.Event()
    learned = [50]

    def keep_learning() -> None:
        serial = 1000
        while not stop.is_set():
            writer.learn(ham_message(rng, serial), "ham")
            serial += 1
            learned[0] += 1

    thread = threading.Thread(target=keep_learning)
    thread.start()
    copies = []
    try:
        for n in range(5):
            while learned[0] < 50 + 10 * (n + 1):
                stop.wait(0.01)
            copy = tmp_path / f"copy-{n}.db"
            assert service.backup(copy) == copy.stat().st_size
            copies.append(copy)
    finally:
        stop.set()
        thread.join()
    counts = []
    for copy in copies:
        with sqlite3.connect(copy) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [
                (head_revision(),)
            ]
            counts.append(conn.execute("SELECT count(*) FROM learned_message").fetchone()[0])
        assert_consistent(f"sqlite:///{copy}")  # counts agree with the learned records
    assert counts == sorted(counts) and counts[0] > 50 and counts[-1] <= learned[0]


def test_backup_refuses_an_existing_file_unless_forced(
    sqlite_settings: Settings, make_service: ServiceFactory, tmp_path: Path
) -> None:
    service = make_service(sqlite_settings)
    copy = tmp_path / "copy.db"
    copy.write_bytes(b"keep me")
    with pytest.raises(TransferRefused, match="--force"):
        service.backup(copy)
    assert copy.read_bytes() == b"keep me"
    service.backup(copy, overwrite=True)
    with sqlite3.connect(copy) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


@pytest.mark.postgres
def test_backup_of_postgresql_points_to_pg_dump(
    service: SpamFilter, database_backend: str, tmp_path: Path
) -> None:
    if database_backend != "postgresql":
        pytest.skip("the SQLite case is the backup itself")
    with pytest.raises(TransferRefused, match="pg_dump -Fc"):
        service.backup(tmp_path / "copy.db")
    assert not (tmp_path / "copy.db").exists()


def test_merging_adds_counts_and_keeps_the_later_seen_day(engine: sa.Engine) -> None:
    store = Store(engine)
    first = [(1, {"ham": (1, 2)}, 100), (2, {"spam": (1, 1)}, 300)]
    second = [(1, {"ham": (1, 1), "spam": (2, 5)}, 200), (2, {"spam": (1, 4)}, 50), (3, {}, 7)]
    for rows in (first, second):
        with store.transaction(write=True) as tx:
            model = tx.model_rows()
            model.prepare("global", replace=False)
            model.add_tokens("global", rows)
            vocabulary = model.recount_vocabulary("global")
    with engine.connect() as conn:
        stored = conn.execute(
            sa.text(
                "SELECT token_id, ham_messages, ham_occurrences, spam_messages, "
                "spam_occurrences, seen_day FROM token_count ORDER BY token_id"
            )
        ).all()
    assert [tuple(row) for row in stored] == [
        (1, 2, 3, 2, 5, 200),
        (2, 0, 0, 2, 5, 300),
        (3, 0, 0, 0, 0, 7),
    ]
    assert vocabulary == 3
