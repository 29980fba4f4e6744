"""The console's learn buttons: one per class the site declares, on the scan page and on a
history entry, and nothing learned for a class the site does not declare."""

from __future__ import annotations

import re

import pytest

from tests.api.samples import SPAMMY
from tests.console.conftest import Console, MakeConsole, csrf_of

CLASSES = ["ham", "newsletter", "spam", "phishing"]
BUTTON = re.compile(
    r'<button type="submit" name="action" value="([^"]+)">Learn as ([^<]+)</button>'
)


def buttons(page: str) -> list[str]:
    found = BUTTON.findall(page)
    assert all(value == text for value, text in found)
    return [value for value, _ in found]


@pytest.fixture
def four(make_console: MakeConsole) -> Console:
    """A console on a site that declares four classes, logged in as admin."""
    console = make_console(model={"classes": CLASSES, "junk_classes": ["spam", "phishing"]})
    console.login()
    return console


def entry_link(console: Console) -> str:
    console.service.classify(SPAMMY)
    console.flush()
    link = re.search(r'href="(/ui/history/\d+)"', console.client.get("/ui/history").text)
    assert link
    return link.group(1)


def test_one_button_per_declared_class_in_declared_order(four: Console, console: Console) -> None:
    assert buttons(four.client.get("/ui/scan").text) == CLASSES
    assert buttons(four.client.get(entry_link(four)).text) == CLASSES
    console.login()
    assert buttons(console.client.get("/ui/scan").text) == ["ham", "spam"]


def test_a_declared_class_is_learned_from_a_history_entry(four: Console) -> None:
    link = entry_link(four)
    detail = four.client.get(link).text
    reply = four.client.post(
        link, data={"action": "spam", "csrf": csrf_of(detail)}, follow_redirects=True
    )
    assert reply.status_code == 200 and "learned as spam" in reply.text
    assert four.service.stats().labels["spam"].messages == 1


def test_a_class_the_site_does_not_declare_learns_nothing(four: Console) -> None:
    link = entry_link(four)
    reply = four.client.post(link, data={"action": "receipts", "csrf": four.csrf(link)})
    assert reply.status_code == 403
    scan = four.client.post(
        "/ui/scan",
        data={"raw": SPAMMY.decode(), "action": "receipts", "csrf": four.csrf("/ui/scan")},
    )
    assert scan.status_code == 200 and "learned as" not in scan.text
    assert all(s.messages == 0 for s in four.service.stats().labels.values())
    # A done= line naming a class not declared is not shown.
    assert "learned as receipts" not in four.client.get(f"{link}?done=learned+as+receipts").text


def test_the_scan_page_learns_a_class_beyond_ham_and_spam(four: Console) -> None:
    reply = four.client.post(
        "/ui/scan",
        data={"raw": SPAMMY.decode(), "action": "newsletter", "csrf": four.csrf("/ui/scan")},
    )
    assert reply.status_code == 200 and "learned as newsletter" in reply.text
    assert four.service.stats().labels["newsletter"].messages == 1
