"""A process that only ever uses SQLite never imports the PostgreSQL dialect or driver: the
pipe filter starts once per message (on a database migrated beforehand), and every module it
imports is paid for each time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from app.bootstrap import migrate_database
from app.settings.schema import Settings
from tests.builders import make_message

SCRIPT = """
import json, sys
from app.bootstrap import build_service
from app.settings.schema import Settings
service = build_service(Settings(database_url=sys.argv[1]), migrate=False)
service.learn(sys.stdin.buffer.read(), "ham")
service.classify(b"Subject: again\\n\\nhello\\n")
print(json.dumps(sorted(m for m in sys.modules if "postgres" in m or m.startswith("psycopg"))))
"""


def test_sqlite_learning_and_judging_import_nothing_of_postgresql(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'lazy.db'}"
    migrate_database(Settings(database_url=url))  # as `spamfilter db upgrade` would, beforehand
    raw = make_message("Lunch?", "Are we still on for noon\n")
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, url], input=raw, capture_output=True, timeout=60
    )
    assert result.returncode == 0, result.stderr.decode()
    assert json.loads(result.stdout) == []
