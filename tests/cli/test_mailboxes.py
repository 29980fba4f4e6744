"""Finding messages under PATH arguments: files, folders, Maildirs, mbox files and stdin."""

from __future__ import annotations

import io
from pathlib import Path

from app.cli.mailboxes import Source, Unreadable, find_messages, is_maildir
from tests.cli.mailfiles import ENVELOPE, messages, write_maildir, write_mbox


def _names(found: list[Source | Unreadable], root: Path) -> list[str]:
    return [item.name.replace(str(root), "ROOT") for item in found]


def test_a_file_is_one_message(tmp_path: Path) -> None:
    raw = messages("ham", 1)[0]
    (tmp_path / "one.eml").write_bytes(raw)
    found = find_messages([str(tmp_path / "one.eml")], io.BytesIO())
    assert len(found) == 1
    assert isinstance(found[0], Source)
    assert found[0].read() == raw


def test_stdin_is_one_message(tmp_path: Path) -> None:
    found = find_messages(["-"], io.BytesIO(b"Subject: x\n\nbody\n"))
    assert [item.name for item in found] == ["-"]
    assert isinstance(found[0], Source)
    assert found[0].read() == b"Subject: x\n\nbody\n"


def test_folders_are_walked_recursively_in_sorted_order(tmp_path: Path) -> None:
    raws = messages("spam", 3)
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "deep").mkdir(parents=True)
    (tmp_path / "b" / "2").write_bytes(raws[0])
    (tmp_path / "a" / "deep" / "1").write_bytes(raws[1])
    (tmp_path / "c").write_bytes(raws[2])
    found = find_messages([str(tmp_path)], io.BytesIO())
    assert _names(found, tmp_path) == ["ROOT/a/deep/1", "ROOT/b/2", "ROOT/c"]


def test_maildir_reads_cur_and_new_only(tmp_path: Path) -> None:
    box = write_maildir(tmp_path / "Mail", cur=messages("ham", 2), new=messages("spam", 1))
    sub = write_maildir(box / ".Archive", cur=messages("ham", 1, start=50), new=[])
    assert is_maildir(box) and is_maildir(sub)
    names = _names(find_messages([str(box)], io.BytesIO()), tmp_path)
    assert names == [
        "ROOT/Mail/.Archive/cur/1700000000.0.host:2,S",
        "ROOT/Mail/cur/1700000000.0.host:2,S",
        "ROOT/Mail/cur/1700000000.1.host:2,S",
        "ROOT/Mail/new/1700000100.0.host",
    ]


def test_mbox_is_split_into_messages(tmp_path: Path) -> None:
    raws = messages("ham", 3)
    box = write_mbox(tmp_path / "inbox", raws)
    found = find_messages([str(box)], io.BytesIO())
    assert _names(found, tmp_path) == ["ROOT/inbox#1", "ROOT/inbox#2", "ROOT/inbox#3"]
    for item, raw in zip(found, raws, strict=True):
        assert isinstance(item, Source)
        assert item.read().rstrip(b"\n") == raw.replace(b"\r\n", b"\n").rstrip(b"\n")


def test_a_saved_message_with_an_envelope_line_stays_whole(tmp_path: Path) -> None:
    raw = ENVELOPE + messages("ham", 1)[0]
    (tmp_path / "saved").write_bytes(raw)
    found = find_messages([str(tmp_path / "saved")], io.BytesIO())
    assert _names(found, tmp_path) == ["ROOT/saved"]
    assert isinstance(found[0], Source)
    assert found[0].read() == raw


def test_a_missing_path_is_reported(tmp_path: Path) -> None:
    found = find_messages([str(tmp_path / "missing")], io.BytesIO())
    assert len(found) == 1
    assert isinstance(found[0], Unreadable)
