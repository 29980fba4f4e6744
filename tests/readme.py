"""The manual's snippets, found by the ``<!-- snippet: NAME -->`` comment above each block.

A snippet is the text of the fenced block that follows its marker line directly, exactly as
written (without the fences). The snippets live on the page of their concern (the mail-server
ones on docs/mail-servers.md); a name is marked once across README.md and docs/. Tests that
run a snippet read it from here, so what the manual shows is what they run.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAIL_SERVERS = DOCS / "mail-servers.md"
_SNIPPET = re.compile(r"^<!-- snippet: (\S+) -->\n```[^\n]*\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def pages() -> list[Path]:
    """README.md and every Markdown page of docs/."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def snippets(text: str | None = None) -> dict[str, str]:
    """Every marked snippet of the manual (or of ``text``), by name."""
    found: dict[str, str] = {}
    texts = [(page, page.read_text()) for page in pages()] if text is None else [(None, text)]
    for page, content in texts:
        for match in _SNIPPET.finditer(content):
            name = match.group(1)
            assert name not in found, f"two snippets are marked {name!r} (again in {page})"
            found[name] = match.group(2)
    return found


def snippet(name: str) -> str:
    """The snippet marked ``name``; fails when the marker or its fenced block is missing."""
    found = snippets()
    assert name in found, (
        f"no page of the manual has a snippet {name!r}: a line '<!-- snippet: {name} -->' "
        "directly followed by a fenced code block"
    )
    return found[name]
