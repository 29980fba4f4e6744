"""The console's pages through the HTTP app: scan and learn, status, history, graphs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.api.samples import SPAMMY
from tests.console.conftest import Console, MakeConsole, csrf_of
from tests.storage.faults import immutable


def scan(console: Console, raw: bytes, action: str = "classify") -> str:
    page = console.client.get("/ui/scan")
    reply = console.client.post(
        "/ui/scan", data={"raw": raw.decode(), "action": action, "csrf": csrf_of(page.text)}
    )
    assert reply.status_code == 200, reply.text
    return reply.text


def test_scanning_shows_the_verdict_and_its_clues(console: Console) -> None:
    console.train()
    console.login()
    page = scan(console, SPAMMY)
    assert 'Verdict: <span class="badge spam">spam</span>' in page
    assert "<svg" in page and "token weights" in page
    assert re.search(r"<title>[^<]*prize[^<]*: \+", page)  # a spam clue, pushing right


def test_learning_from_the_scan_page_moves_the_counts_and_forgetting_restores_them(
    console: Console,
) -> None:
    console.login()
    raw = b"From: a@b.example\nSubject: a new offer\n\nA wholly new offer of cash.\n"
    page = scan(console, raw, "spam")
    assert "learned as spam" in page
    assert console.service.stats().labels["spam"].messages == 1
    status = console.client.get("/ui/").text
    assert '<span id="learned-spam">1</span>' in status
    assert "forgotten" in scan(console, raw, "forget")
    assert console.service.stats().labels["spam"].messages == 0


def test_an_uploaded_file_is_read_as_its_exact_bytes(console: Console) -> None:
    console.login()
    raw = "Subject: caf\u00e9\nContent-Type: text/plain; charset=latin-1\n\ncaf\u00e9 au lait\n"
    import base64

    encoded = base64.b64encode(raw.encode("latin-1")).decode()
    reply = console.client.post(
        "/ui/scan",
        data={"raw": "", "upload_b64": encoded, "action": "spam", "csrf": console.csrf("/ui/scan")},
    )
    assert reply.status_code == 200
    latin = console.service.analyse(raw.encode("latin-1"))
    assert console.service.forget(latin).outcome.value == "forgotten"


def test_an_unreadable_message_is_an_error_on_the_page(console: Console) -> None:
    console.login()
    reply = console.client.post(
        "/ui/scan", data={"raw": "", "action": "classify", "csrf": console.csrf("/ui/scan")}
    )
    assert reply.status_code == 400
    assert "invalid_message" in reply.text


def test_the_status_page_shows_model_database_training_and_daemons(console: Console) -> None:
    console.train()
    console.login()
    page = console.client.get("/ui/").text
    assert '<span id="learned-ham">3</span>' in page
    assert '<span id="learned-spam">3</span>' in page
    stats = console.service.stats()
    assert f'<span id="vocabulary">{stats.vocabulary:,}</span>' in page
    assert "sqlite" in page or "postgresql" in page
    assert "everything (margin 30 nats)" in page
    assert "not running" in page  # no spamd or milter in this test
    assert ">HTTP<" in page and ">spamd<" in page and ">milter<" in page


def test_history_lists_filters_and_marks_a_verdict_which_trains_the_model(
    console: Console,
) -> None:
    console.train()
    console.login()
    console.service.classify(SPAMMY)
    console.service.classify(b"From: carol@example.org\nSubject: Lunch notes\n\nSee the notes.\n")
    console.flush()
    listing = console.client.get("/ui/history").text
    assert "Free money prize" in listing and "Lunch notes" in listing
    only_spam = console.client.get("/ui/history", params={"verdict": "spam"}).text
    assert "Free money prize" in only_spam and "Lunch notes" not in only_spam
    by_text = console.client.get("/ui/history", params={"q": "carol@"}).text
    assert "Lunch notes" in by_text and "Free money prize" not in by_text

    link = re.search(r'href="(/ui/history/\d+)"', only_spam)
    assert link
    detail = console.client.get(link.group(1)).text
    assert "z@win.biz" in detail and "<svg" in detail
    before = console.service.stats().labels["ham"].messages
    reply = console.client.post(
        link.group(1), data={"action": "ham", "csrf": csrf_of(detail)}, follow_redirects=True
    )
    assert reply.status_code == 200
    assert "learned as ham" in reply.text
    assert console.service.stats().labels["ham"].messages == before + 1
    assert console.service.learn(SPAMMY, "ham").outcome.value == "unchanged"  # same digest

    console.flush()
    detail = console.client.get(link.group(1)).text
    assert '<span id="learned-as">ham</span>' in detail
    accuracy = console.client.get("/ui/accuracy").text
    assert '<span class="fp">1</span>' in accuracy


def test_an_entry_whose_tokens_are_not_kept_cannot_be_learned(make_console: MakeConsole) -> None:
    console = make_console(console={"keep_tokens_hours": 0})
    console.login()
    console.service.classify(SPAMMY)
    console.flush()
    link = re.search(r'href="(/ui/history/\d+)"', console.client.get("/ui/history").text)
    assert link
    detail = console.client.get(link.group(1)).text
    assert "no longer kept" in detail
    reply = console.client.post(link.group(1), data={"action": "ham", "csrf": csrf_of(detail)})
    assert reply.status_code == 403
    assert console.service.stats().labels["ham"].messages == 0


def test_privacy_keeps_no_sender_or_subject(make_console: MakeConsole) -> None:
    console = make_console(console={"show_senders": False})
    console.login()
    console.service.classify(SPAMMY)
    console.flush()
    listing = console.client.get("/ui/history").text
    assert "Free money prize" not in listing and "z@win.biz" not in listing
    assert 'class="badge' in listing


def charts_of(page: str) -> list[dict[str, object]]:
    found = re.findall(r'data-chart="([^"]+)"', page)
    import html

    return [json.loads(html.unescape(f)) for f in found]


def test_traffic_graphs_count_the_recorded_calls(console: Console) -> None:
    console.train()
    console.login()
    for _ in range(3):
        console.service.classify(SPAMMY)
    console.flush()
    charts = charts_of(console.client.get("/ui/traffic").text)
    assert [c["title"] for c in charts[:4]] == [
        "Messages per minute by verdict",
        "Messages per minute by adapter",
        "Feedback per minute",
        "Classify latency",
    ]
    by_verdict = {s["label"]: s["values"] for s in charts[0]["series"]}  # type: ignore[index]
    assert sum(by_verdict["spam"]) == 3 and sum(by_verdict["ham"]) == 0
    by_adapter = {s["label"]: s["values"] for s in charts[1]["series"]}  # type: ignore[index]
    assert sum(by_adapter["http"]) == 3
    feedback = {s["label"]: s["values"] for s in charts[2]["series"]}  # type: ignore[index]
    assert sum(feedback["learn learned"]) == 6
    latency = {s["label"]: s["values"] for s in charts[3]["series"]}  # type: ignore[index]
    assert [v for v in latency["p50"] if v is not None]
    days = {s["label"]: s["values"] for s in charts[4]["series"]}  # type: ignore[index]
    assert sum(days["spam"]) == 3 / 60  # hourly periods: a mean per minute


def test_the_status_page_lists_per_user_models_when_there_are_some(console: Console) -> None:
    console.login()
    assert "Per-user models" not in console.client.get("/ui/").text
    console.service.learn(SPAMMY, "spam", user="alice@example.org")
    page = console.client.get("/ui/").text
    assert '<span id="user-count">1</span>' in page
    assert "alice@example.org" in page


def test_a_verdict_for_a_user_is_learned_into_that_users_model(console: Console) -> None:
    console.train()
    console.login()
    console.service.classify(SPAMMY, user="bob@example.org")
    console.flush()
    listing = console.client.get("/ui/history", params={"user": "bob@example.org"}).text
    link = re.search(r'href="(/ui/history/\d+)"', listing)
    assert link and "bob@example.org" in listing
    detail = console.client.get(link.group(1)).text
    console.client.post(link.group(1), data={"action": "ham", "csrf": csrf_of(detail)})
    assert console.service.stats(user="bob@example.org").labels["ham"].messages == 1


def test_history_pages_through_older_entries(console: Console) -> None:
    from datetime import UTC, datetime

    from app.service.events import Event

    now = datetime.now(UTC)
    console.service.history.record(
        [
            Event(now, "classify", "milter", None, "ham", 0.001, digest=f"{i:064x}",
                  subject=f"message {i}", log_odds=-5.0)
            for i in range(105)
        ]
    )  # fmt: skip
    console.login()
    first = console.client.get("/ui/history", params={"adapter": "milter"}).text
    assert "message 104" in first and "message 5<" in first and "message 4<" not in first
    older = re.search(r'href="(/ui/history\?[^"]*before=\d+[^"]*)"', first)
    assert older
    second = console.client.get(older.group(1).replace("&amp;", "&")).text
    assert "message 4<" in second and "message 0<" in second and "message 5<" not in second


def test_the_status_page_says_why_writes_fail(console: Console, database_backend: str) -> None:
    """A database file read-only under the running service (chattr +i stands for chmod a-w,
    which binds no root; see tests/storage/faults.py): the status says so, naming it."""
    if database_backend != "sqlite":
        pytest.skip("a file fault (PostgreSQL's are in tests/service/test_postgres_write_faults)")
    console.train()
    console.login()
    path = Path(str(make_url(console.settings.database_url).database))
    with immutable(path):
        page = console.client.get("/ui/").text
    assert f"not ready: read-only: {path.name} cannot be written (mode 0" in page
    assert "not ready" not in console.client.get("/ui/").text
