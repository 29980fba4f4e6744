"""The filter in process: verdicts and exit codes, the byte contract, and no lost mail."""

from __future__ import annotations

import io
import random
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.adapters.pipe.filter import direct_classifier, filter_message, service_classifier
from app.adapters.pipe.main import run
from app.adapters.pipe.report import ExitCode, FilterReport
from app.errors import StorageUnavailable
from app.service import SpamFilter
from app.settings.schema import Settings
from app.storage.engine import make_engine
from app.storage.tables import SCHEMA_REVISION
from tests.adapters.pipe.roundtrip import check_round_trip
from tests.builders import ham_message, make_message, spam_message
from tests.environment import drop_settings

LATIN_1 = (
    b"From: Ren\xe9 <rene@example.org>\n"
    b"Subject: r\xe9sum\xe9 attached\n"
    b"Content-Type: text/plain; charset=iso-8859-1\n"
    b"Content-Transfer-Encoding: 8bit\n"
    b"\n"
    b"Voil\xe0 mon r\xe9sum\xe9, \xe0 bient\xf4t.\n\x00\xff\n"
)
NOT_A_MESSAGE = b"\x00\x01 this is not\nan RFC 822 message\n"


def hand_made() -> dict[str, bytes]:
    """Messages written out by hand, one per byte-level case."""
    crlf = make_message("Quarterly report", "The draft is attached.\n")
    return {
        "crlf": crlf,
        "lf": crlf.replace(b"\r\n", b"\n"),
        "no-body": b"From: a@example.org\r\nSubject: nothing else\r\n",
        "no-body-lf-unterminated": b"From: a@example.org\nSubject: nothing else",
        "utf-8": make_message("Caf\u00e9 \u2615", "Pr\u00eat \u00e0 d\u00e9jeuner?\n"),
        "latin-1": LATIN_1,
        "mbox": b"From a@example.org  Tue Mar  3 10:15:00 2026\n" + crlf.replace(b"\r\n", b"\n"),
    }


@pytest.mark.parametrize("name", sorted(hand_made()))
def test_hand_made_messages_round_trip(trained: SpamFilter, name: str) -> None:
    raw = hand_made()[name]
    filtered = filter_message(raw, service_classifier(trained))
    fields = check_round_trip(raw, filtered.output)
    assert fields["X-Spam-Status"].startswith(("Yes, score=", "No, score="))
    assert filtered.code in (ExitCode.SPAM, ExitCode.HAM, ExitCode.UNSURE)


def test_spam_exits_0_with_the_flag(trained: SpamFilter) -> None:
    raw = spam_message(random.Random(99), 5000)
    filtered = filter_message(raw, service_classifier(trained))
    assert (filtered.code, filtered.verdict) == (ExitCode.SPAM, "spam")
    fields = check_round_trip(raw, filtered.output)
    assert fields["X-Spam-Flag"] == "YES"
    assert fields["X-Spam-Verdict"].startswith("spam; log-odds=")


def test_ham_exits_1_without_the_flag(trained: SpamFilter) -> None:
    raw = ham_message(random.Random(99), 6000)
    filtered = filter_message(raw, service_classifier(trained))
    assert (filtered.code, filtered.verdict) == (ExitCode.HAM, "ham")
    fields = check_round_trip(raw, filtered.output)
    assert "X-Spam-Flag" not in fields
    assert fields["X-Spam-Status"].startswith("No, ")


def test_unsure_exits_2(service: SpamFilter) -> None:
    raw = make_message("Hello", "Nothing learned yet.\n")
    filtered = filter_message(raw, service_classifier(service))
    assert (filtered.code, filtered.verdict) == (ExitCode.UNSURE, "unsure")
    assert check_round_trip(raw, filtered.output)["X-Spam-Verdict"].startswith("unsure;")


def test_not_a_message_is_passed_through_with_exit_3(trained: SpamFilter) -> None:
    errors = io.StringIO()
    filtered = filter_message(NOT_A_MESSAGE, service_classifier(trained), errors)
    assert (filtered.output, filtered.code) == (NOT_A_MESSAGE, ExitCode.ERROR)
    assert errors.getvalue() == (
        "spamfilter-filter: invalid_message: input does not start with an RFC 822 header; "
        "message passed through unjudged\n"
    )


@pytest.mark.parametrize(
    "error", [StorageUnavailable("database is locked"), RuntimeError("a bug"), KeyError("x")]
)
def test_any_failure_passes_the_message_through(error: Exception) -> None:
    def failing(_raw: bytes) -> FilterReport:
        raise error

    raw = make_message("Hi", "text\n")
    errors = io.StringIO()
    filtered = filter_message(raw, failing, errors)
    assert (filtered.output, filtered.code, filtered.verdict) == (raw, ExitCode.ERROR, None)
    assert errors.getvalue().startswith("spamfilter-filter: ")
    assert errors.getvalue().endswith("; message passed through unjudged\n")


def test_exit_codes_follow_bogofilter() -> None:
    codes = {v: FilterReport(v, []).exit_code for v in ("spam", "ham", "unsure")}
    assert codes == {"spam": 0, "ham": 1, "unsure": 2}
    assert int(ExitCode.ERROR) == 3


def test_fifty_generated_messages_round_trip(trained: SpamFilter) -> None:
    rng = random.Random(2024)
    classify = service_classifier(trained)
    seen = set()
    for serial in range(50):
        make = spam_message if serial % 2 else ham_message
        raw = make(rng, 7000 + serial, length=rng.randrange(5, 80))
        if serial % 3 == 0:
            raw = raw.replace(b"\r\n", b"\n")
        filtered = filter_message(raw, classify)
        fields = check_round_trip(raw, filtered.output)
        verdict = trained.classify(raw).verdict.value
        assert filtered.verdict == verdict
        assert fields["X-Spam-Verdict"].startswith(f"{verdict};")
        seen.add(verdict)
    assert {"spam", "ham"} <= seen


@pytest.fixture
def environment(settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """SPAMFILTER_DATABASE_URL on this test's database, nothing else, no .env file.

    It depends on ``settings``, whose fixture has removed the other SPAMFILTER_* variables.
    """
    monkeypatch.setenv("SPAMFILTER_DATABASE_URL", settings.database_url)
    monkeypatch.chdir(tmp_path)


def _run(raw: bytes, exit_zero: bool = False) -> tuple[int, bytes, str]:
    stdout, stderr = io.BytesIO(), io.StringIO()
    code = run(io.BytesIO(raw), stdout, stderr, exit_zero)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.mark.usefixtures("environment")
def test_run_reads_the_settings_from_the_environment(trained: SpamFilter) -> None:
    raw = spam_message(random.Random(5), 8000)
    code, out, err = _run(raw)
    assert (code, err) == (0, "")
    assert check_round_trip(raw, out)["X-Spam-Flag"] == "YES"
    code, out, err = _run(ham_message(random.Random(5), 8001), exit_zero=True)
    assert (code, err) == (0, "")


@pytest.mark.usefixtures("environment")
def test_exit_zero_keeps_3_for_errors(trained: SpamFilter) -> None:
    code, out, err = _run(NOT_A_MESSAGE, exit_zero=True)
    assert (code, out) == (3, NOT_A_MESSAGE)
    assert "invalid_message" in err


@pytest.mark.usefixtures("environment")
def test_invalid_settings_pass_the_message_through(
    trained: SpamFilter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPAMFILTER_MODEL__ALPHA", "-1")
    raw = make_message("Hi", "text\n")
    code, out, err = _run(raw)
    assert (code, out) == (3, raw)
    assert "model.alpha" in err or "alpha" in err


def test_the_filter_never_migrates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    database = tmp_path / "new.db"
    drop_settings(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPAMFILTER_DATABASE_URL", f"sqlite:///{database}")
    raw = make_message("Hi", "text\n")
    stdout, stderr = io.BytesIO(), io.StringIO()
    assert run(io.BytesIO(raw), stdout, stderr) == 3
    assert stdout.getvalue() == raw
    assert "storage_unavailable" in stderr.getvalue()
    assert "never creates or migrates the database: spamfilter db upgrade does" in (
        stderr.getvalue()
    )
    with sqlite3.connect(database) as conn:
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    assert tables == []


@pytest.mark.usefixtures("environment")
def test_a_database_a_newer_release_migrated_passes_the_message_through(
    trained: SpamFilter, settings: Settings
) -> None:
    """The filter never migrates, but it does not judge with a schema newer than it knows
    (a newer release may store what it would misread): exit 3, the message unjudged."""
    engine = make_engine(settings.database_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
        raw = spam_message(random.Random(5), 8002)
        code, out, err = _run(raw)
        assert (code, out) == (3, raw)
        assert "configuration_error" in err and "schema revision 9999" in err
        with engine.begin() as conn:
            conn.execute(sa.text(f"UPDATE alembic_version SET version_num = '{SCHEMA_REVISION}'"))
        assert _run(raw)[0] == 0
    finally:
        engine.dispose()


@pytest.mark.usefixtures("environment")
def test_a_broken_stdout_is_an_error(trained: SpamFilter) -> None:
    class Closed(io.BytesIO):
        def write(self, _data: object) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    stderr = io.StringIO()
    assert run(io.BytesIO(make_message("Hi", "x\n")), Closed(), stderr) == 3
    assert "cannot write the message" in stderr.getvalue()


def test_direct_classifier_uses_given_settings(trained: SpamFilter, settings: Settings) -> None:
    raw = spam_message(random.Random(11), 9000)
    assert direct_classifier(settings)(raw).verdict == trained.classify(raw).verdict.value
