"""The console in a real browser: log in, scan a message, learn one from the history and see
the counts move, on a real ``spamfilter serve``.

With SPAMFILTER_TEST_SCREENSHOTS=docs/console the screenshots of docs/console.md are (re)taken.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.samples import HAM, SPAM, SPAMMY
from tests.console.browser import browser, call, console_server

pytestmark = pytest.mark.peer

ADMIN = "browser-admin-token"
READER = "browser-read-token"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("console-e2e")
    with console_server(folder, ADMIN, READER) as url:
        for label, messages in (("ham", HAM), ("spam", SPAM)):
            for raw in messages:
                call(url, "/v1/feedback", raw, ADMIN, label=label)
        yield url


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with browser() as launched:
        yield launched


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    chosen = os.environ.get("SPAMFILTER_TEST_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def new_page(chromium: Any, viewport: dict[str, int]) -> tuple[Any, list[str]]:
    context = chromium.new_context(viewport=viewport)
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    return page, problems


def log_in(page: Any, url: str, token: str) -> None:
    page.goto(f"{url}/ui/")
    assert page.url.endswith("/ui/login")
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/ui/")


def learned(page: Any, url: str, label: str) -> int:
    page.goto(f"{url}/ui/")
    return int(page.inner_text(f"#learned-{label}").replace(",", ""))


def test_log_in_scan_learn_from_history_and_see_the_counts_move(
    served: str, chromium: Any, shots: Path
) -> None:
    page, problems = new_page(chromium, DESKTOP)
    page.goto(f"{served}/ui/login")
    page.screenshot(path=str(shots / "login.png"))
    log_in(page, served, ADMIN)
    assert page.inner_text("#learned-spam") == "3"
    page.screenshot(path=str(shots / "status.png"), full_page=True)

    page.goto(f"{served}/ui/scan")
    page.fill("#raw", SPAMMY.decode())
    page.click("button[value=classify]")
    assert page.inner_text("#result h2") == "Verdict: spam"
    assert page.locator("figure.clues rect").count() > 0
    page.screenshot(path=str(shots / "scan.png"), full_page=True)

    page.goto(f"{served}/ui/scan")
    upload = {"name": "offer.eml", "mimeType": "message/rfc822", "buffer": SPAM[0]}
    page.set_input_files("#upload", files=[upload])
    page.wait_for_function("document.querySelector('input[name=upload_b64]') !== null")
    assert "FREE PRIZE" in page.input_value("#raw")
    page.click("button[value=classify]")
    assert page.inner_text("#result h2") == "Verdict: spam"

    ham = (
        b"From: Carol <carol@example.org>\nSubject: Notes from the allotment\n\n"
        b"The notes from Sunday at the allotment, and lunch plans for the meeting.\n"
    )
    call(served, "/v1/classify", ham, ADMIN)
    page.goto(f"{served}/ui/history?q=allotment")
    for _ in range(50):  # the recorder writes within moments of the call
        if page.locator("table.history a").count():
            break
        page.wait_for_timeout(100)
        page.reload()
    page.click("table.history a")
    assert "Notes from the allotment" in page.inner_text("main")
    assert page.inner_text("#learned-as") == "not learned"
    page.screenshot(path=str(shots / "history-entry.png"), full_page=True)

    before = learned(page, served, "ham")
    page.go_back()
    page.click("button[value=ham]")
    assert "learned as ham" in page.inner_text(".notice")
    assert learned(page, served, "ham") == before + 1

    page.goto(f"{served}/ui/history")
    page.screenshot(path=str(shots / "history.png"), full_page=True)
    page.goto(f"{served}/ui/traffic")
    assert page.locator(".uplot canvas").count() >= 4  # uPlot drew the graphs
    page.screenshot(path=str(shots / "traffic.png"), full_page=True)
    page.goto(f"{served}/ui/accuracy")
    assert page.locator(".uplot").count() == 1
    page.screenshot(path=str(shots / "accuracy.png"), full_page=True)
    assert problems == []  # no script error, nothing refused by the Content-Security-Policy


def test_a_read_only_session_on_a_phone_fits_the_screen_and_cannot_learn(
    served: str, chromium: Any, shots: Path
) -> None:
    page, problems = new_page(chromium, PHONE)
    log_in(page, served, READER)
    for path in ("/ui/", "/ui/history", "/ui/traffic", "/ui/scan"):
        page.goto(f"{served}{path}")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], path
    page.goto(f"{served}/ui/history")
    page.screenshot(path=str(shots / "phone-history.png"), full_page=True)
    page.goto(f"{served}/ui/scan")
    assert page.locator("button[value=spam]").count() == 0
    assert "Learning needs an admin" in page.inner_text("main")
    page.click("button[type=submit] >> text=Log out")
    page.wait_for_url(f"{served}/ui/login")
    page.goto(f"{served}/ui/")
    assert page.url.endswith("/ui/login")
    assert problems == []
