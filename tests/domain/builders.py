"""Small builders shared by the domain tests: where the hand-written messages live, how to
tokenise bytes the way the service does, and a compact way to write a message in a test."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from app.domain.message import parse
from app.domain.tokenizer import TokenizerOptions, tokenize

DATA_DIR = Path(__file__).resolve().parents[1] / "data"

# The service's default ``tokenizer.scan_bytes`` (512 KiB).
SCAN_LIMIT = 512 * 1024


def eml_files() -> list[Path]:
    """Every hand-written message under tests/data, in name order."""
    return sorted(DATA_DIR.glob("*.eml"))


def tokens_of(
    raw: bytes,
    options: TokenizerOptions | None = None,
    scan_limit: int = SCAN_LIMIT,
) -> Counter[str]:
    """Token counts of ``raw`` exactly as the service computes them."""
    return tokenize(parse(raw, scan_limit), options or TokenizerOptions())


def message(body: bytes | str = b"", **headers: str) -> bytes:
    """An LF-terminated message; keyword ``content_type`` becomes ``Content-Type``, and a
    trailing underscore is dropped (``from_`` is ``From``)."""
    lines = [
        f"{name.rstrip('_').replace('_', '-').title()}: {value}" for name, value in headers.items()
    ]
    head = "\n".join(lines).encode("utf-8")
    payload = body.encode("utf-8") if isinstance(body, str) else body
    return head + b"\n\n" + payload
