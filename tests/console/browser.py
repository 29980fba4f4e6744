"""A real browser and a real server for the console's end-to-end tests.

Chromium is Debian's (``apt-get install chromium``), driven by Playwright; a machine without
either skips these tests, CI (SPAMFILTER_TEST_REQUIRE_PEERS=1) fails them instead.
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.adapters.peers import unavailable
from tests.serving import spamfilter_serve

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def chromium_path() -> str:
    """Debian's Chromium, or skip (fail in CI)."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    unavailable("chromium is not installed (apt-get install chromium, or run .ci/run)")


@contextmanager
def browser() -> Iterator[Any]:
    """A headless Chromium driven by Playwright."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed (pip install -e '.[test]')")
    path = chromium_path()
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@contextmanager
def console_server(folder: Path, admin: str, reader: str) -> Iterator[str]:
    """``spamfilter serve`` with the console on a free port and a fresh SQLite database; its
    base URL once it answers. The recorder writes after every event."""
    settings = {
        "SPAMFILTER_DATABASE_URL": f"sqlite:///{folder / 'console.db'}",
        "SPAMFILTER_API_TOKENS": admin,
        "SPAMFILTER_READ_TOKENS": reader,
        "SPAMFILTER_DECISION__MIN_MESSAGES": "1",
        "SPAMFILTER_TRAINING_MODE": "everything",
        "SPAMFILTER_CONSOLE__FLUSH_EVENTS": "1",
        "SPAMFILTER_LOG__VERDICTS": "off",
    }
    with spamfilter_serve(folder, settings) as url:
        yield url


def call(url: str, path: str, body: bytes, token: str, **params: str) -> dict[str, Any]:
    """POST ``body`` to an API route with the bearer ``token``; the JSON answer."""
    query = "&".join(f"{k}={v}" for k, v in params.items())
    request = urllib.request.Request(
        f"{url}{path}{'?' + query if query else ''}",
        data=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "message/rfc822"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        answer: dict[str, Any] = json.loads(reply.read())
        return answer
