"""A file or stdin over the size cap is refused without being read into memory."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from app.cli.mailboxes import Source, find_messages, read_file, read_stream
from app.errors import MessageTooLarge
from tests.cli.conftest import Run
from tests.cli.mailfiles import messages

GIB = 1 << 30


def sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk space (and would take ``size`` of memory)."""
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


def test_a_file_over_the_cap_is_not_read(tmp_path: Path) -> None:
    huge = sparse(tmp_path / "disk.img", GIB)
    with pytest.raises(MessageTooLarge, match=rf"^message is {GIB} bytes; the limit is 4096$"):
        read_file(huge, 4096)
    small = tmp_path / "m.eml"
    small.write_bytes(b"Subject: x\n\ny\n")
    assert read_file(small, 4096) == read_file(small, None) == b"Subject: x\n\ny\n"


def test_a_stream_over_the_cap_is_drained_not_kept() -> None:
    stream = io.BytesIO(b"x" * 10_000)
    with pytest.raises(MessageTooLarge, match=r"^message is 10000 bytes; the limit is 4096$"):
        read_stream(stream, 4096)
    assert stream.tell() == 10_000  # a pipe's writer is never cut off
    assert read_stream(io.BytesIO(b"x" * 4096), 4096) == b"x" * 4096
    assert read_stream(io.BytesIO(b"x" * 5000), None) == b"x" * 5000


def test_found_sources_apply_the_cap(tmp_path: Path) -> None:
    sparse(tmp_path / "big", 5000)
    (found,) = find_messages([str(tmp_path / "big")], io.BytesIO(), 4096)
    assert isinstance(found, Source)
    with pytest.raises(MessageTooLarge):
        found.read()
    (stdin,) = find_messages(["-"], io.BytesIO(b"y" * 5000), 4096)
    assert isinstance(stdin, Source)
    with pytest.raises(MessageTooLarge):
        stdin.read()


def test_learn_skips_a_huge_file_in_one_line(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPAMFILTER_SERVER__MAX_MESSAGE_BYTES", "65536")
    folder = tmp_path / "mixed"
    folder.mkdir()
    huge = sparse(folder / "a-disk.img", GIB)
    (folder / "b.eml").write_bytes(messages("spam", 1)[0])
    result = run("learn", "--label", "spam", str(folder))
    assert result.exit_code == 1
    assert result.stdout.startswith("learned 1, relabelled 0, unchanged 0, skipped 0, failed 1")
    assert result.stderr == (
        f"error: {huge}: message_too_large: message is {GIB} bytes; the limit is 65536\n"
    )
    piped = run("learn", "--label", "spam", "-", input=b"Subject: x\n\n" + b"y" * 70_000)
    assert piped.exit_code == 1
    assert piped.stderr == (
        "error: -: message_too_large: message is 70012 bytes; the limit is 65536\n"
    )
