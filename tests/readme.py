"""The README's snippets, found by the ``<!-- snippet: NAME -->`` comment above each block.

A snippet is the text of the fenced block that follows its marker line directly, exactly as
written (without the fences). Tests that run a snippet read it from here, so what the README
shows is what they run.
"""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
_SNIPPET = re.compile(r"^<!-- snippet: (\S+) -->\n```[^\n]*\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def snippets(text: str | None = None) -> dict[str, str]:
    """Every marked snippet of the README (or of ``text``), by name."""
    found: dict[str, str] = {}
    for match in _SNIPPET.finditer(README.read_text() if text is None else text):
        name = match.group(1)
        assert name not in found, f"two snippets are marked {name!r} in {README}"
        found[name] = match.group(2)
    return found


def snippet(name: str) -> str:
    """The snippet marked ``name``; fails when the marker or its fenced block is missing."""
    found = snippets()
    assert name in found, (
        f"README.md has no snippet {name!r}: a line '<!-- snippet: {name} -->' directly "
        "followed by a fenced code block"
    )
    return found[name]
