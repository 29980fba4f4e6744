"""Writes failing while reads go on, in a real ``spamfilter serve`` (issue 30, row 6).

The disk is made full for the server process alone: its file-size limit is set to 0 from
outside (``prlimit``), so every write SQLite makes fails (EFBIG: "disk I/O error") and every
read still works; SIGXFSZ, which would end the process, is ignored in it as a daemon under a
quota would see it. ``/readyz`` must say so while it lasts, and all must come back when the
limit is lifted, without a restart.
"""

from __future__ import annotations

import json
import random
import resource
import signal
import urllib.error
import urllib.request
from pathlib import Path

from tests.builders import spam_message
from tests.serving import served


def _ignore_sigxfsz() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _call(url: str, body: bytes | None = None) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(url, data=body, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_full_disk_is_told_by_readyz_and_heals_without_a_restart(tmp_path: Path) -> None:
    settings = {"SPAMFILTER_DATABASE_URL": f"sqlite:///{tmp_path / 'spamfilter.db'}"}
    first, second = (spam_message(random.Random(n), n) for n in (1, 2))
    with served(tmp_path, settings, preexec=_ignore_sigxfsz) as server:
        feedback = f"{server.url}/v1/feedback?label=spam"
        assert _call(feedback, first)[0] == 200
        pid = server.process.pid
        limits = resource.prlimit(pid, resource.RLIMIT_FSIZE)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (0, limits[1]))
        try:
            refused = _call(feedback, second)
            unready = _call(f"{server.url}/readyz")
            classified = _call(f"{server.url}/v1/classify", first)
        finally:
            resource.prlimit(pid, resource.RLIMIT_FSIZE, limits)
        ready = _call(f"{server.url}/readyz")
        learned = _call(feedback, second)

    told = {"error": "storage_unavailable", "detail": "writes failing: disk I/O error"}
    assert refused == (503, told)
    assert unready == (503, told)
    assert classified[0] == 200  # reading goes on
    assert ready == (200, {"status": "ready"})
    assert learned[0] == 200
    assert learned[1]["outcome"] == "learned"
