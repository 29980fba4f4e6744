"""Finding messages under PATH arguments: files, folders, Maildirs, mbox files and stdin."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from app.cli.mailboxes import Source, Unreadable, find_messages, is_junk_folder, is_maildir
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
    (box / "courierimapkeywords").mkdir()
    (box / "courierimapkeywords" / ":list").write_bytes(b"keywords\n")
    assert is_maildir(box) and is_maildir(sub)
    names = _names(find_messages([str(box)], io.BytesIO()), tmp_path)
    assert names == [
        "ROOT/Mail/cur/1700000000.0.host:2,S",
        "ROOT/Mail/cur/1700000000.1.host:2,S",
        "ROOT/Mail/new/1700000100.0.host",
    ]


def _mailbox_tree(root: Path) -> Path:
    """A Maildir++ tree: INBOX, a kept subfolder and the junk and trash a user has."""
    box = write_maildir(root / "Maildir", cur=messages("ham", 1), new=[])
    write_maildir(box / ".Archive", cur=messages("ham", 1, start=10), new=[])
    for number, name in enumerate((".Junk", ".Trash", ".Archive.Spam", ".Deleted Items")):
        write_maildir(box / name, cur=messages("spam", 1, start=20 + number), new=[])
    return box


def test_recursive_walks_subfolders_but_skips_junk_and_trash(tmp_path: Path) -> None:
    box = _mailbox_tree(tmp_path)
    skipped: list[str] = []
    found = find_messages([str(box)], io.BytesIO(), recursive=True, on_skip=skipped.append)
    assert _names(found, tmp_path) == [
        "ROOT/Maildir/.Archive/cur/1700000000.0.host:2,S",
        "ROOT/Maildir/cur/1700000000.0.host:2,S",
    ]
    assert [name.replace(str(tmp_path), "ROOT") for name in skipped] == [
        "ROOT/Maildir/.Archive.Spam",
        "ROOT/Maildir/.Deleted Items",
        "ROOT/Maildir/.Junk",
        "ROOT/Maildir/.Trash",
    ]


def test_without_recursive_no_subfolder_is_walked_or_reported(tmp_path: Path) -> None:
    box = _mailbox_tree(tmp_path)
    skipped: list[str] = []
    found = find_messages([str(box)], io.BytesIO(), on_skip=skipped.append)
    assert _names(found, tmp_path) == ["ROOT/Maildir/cur/1700000000.0.host:2,S"]
    assert skipped == []


def test_a_junk_folder_named_on_the_command_line_is_read(tmp_path: Path) -> None:
    box = _mailbox_tree(tmp_path)
    skipped: list[str] = []
    paths = [str(box), str(box / ".Junk")]
    found = find_messages(paths, io.BytesIO(), recursive=True, on_skip=skipped.append)
    assert _names(found, tmp_path) == [
        "ROOT/Maildir/.Archive/cur/1700000000.0.host:2,S",
        "ROOT/Maildir/cur/1700000000.0.host:2,S",
        "ROOT/Maildir/.Junk/cur/1700000000.0.host:2,S",
    ]
    # .Junk is read once, as its own argument, and not reported as skipped
    assert [Path(name).name for name in skipped] == [".Archive.Spam", ".Deleted Items", ".Trash"]


def test_plain_folders_skip_junk_and_trash_below_them_once(tmp_path: Path) -> None:
    raws = messages("ham", 3)
    for number, folder in enumerate(("kept", "SPAM", "Deleted Messages")):
        (tmp_path / "mail" / folder).mkdir(parents=True)
        (tmp_path / "mail" / folder / "1").write_bytes(raws[number])
    skipped: list[str] = []
    root = str(tmp_path / "mail")
    found = find_messages([root, root], io.BytesIO(), on_skip=skipped.append)
    assert _names(found, tmp_path) == ["ROOT/mail/kept/1", "ROOT/mail/kept/1"]
    assert [Path(name).name for name in skipped] == ["Deleted Messages", "SPAM"]
    named = find_messages([str(tmp_path / "mail" / "SPAM")], io.BytesIO())
    assert _names(named, tmp_path) == ["ROOT/mail/SPAM/1"]


@pytest.mark.parametrize(
    ("name", "junk"),
    [
        (".Junk", True),
        (".Archive.Spam", True),
        (".Deleted Items", True),
        ("Trash", True),
        ("bin", True),
        ("deleted messages", True),
        (".Spam.Archive", False),
        (".Sent", False),
        ("Junkyard", False),
        ("spam.d", False),
    ],
)
def test_junk_and_trash_names(name: str, junk: bool) -> None:
    assert is_junk_folder(name) is junk


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
