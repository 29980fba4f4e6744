"""``app.cli.atomic.written``: a file written whole or not at all."""

from __future__ import annotations

import os
import signal
import stat
import threading
from pathlib import Path

import pytest

from app.cli.atomic import written


def test_a_complete_write_replaces_the_file_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "model.tsv"
    target.write_text("old\n")
    target.chmod(0o640)
    with written(str(target)) as out:
        out.write("new\n")
        assert target.read_text() == "old\n"  # in place only once complete
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.tsv"]


def test_a_new_file_is_its_owners_only(tmp_path: Path) -> None:
    with written(str(tmp_path / "new.tsv")) as out:
        out.write("x\n")
    assert stat.S_IMODE((tmp_path / "new.tsv").stat().st_mode) == 0o600


def test_a_failed_write_leaves_the_file_and_no_temporary_one(tmp_path: Path) -> None:
    target = tmp_path / "model.tsv"
    target.write_text("good\n")
    with pytest.raises(KeyboardInterrupt), written(str(target)) as out:
        out.write("partial")
        raise KeyboardInterrupt
    assert target.read_text() == "good\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.tsv"]


def test_sigterm_meanwhile_exits_143_and_cleans_up(tmp_path: Path) -> None:
    target = tmp_path / "model.tsv"
    target.write_text("good\n")
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stopped, written(str(target)) as out:
        out.write("partial")
        os.kill(os.getpid(), signal.SIGTERM)
    assert stopped.value.code == 143
    assert target.read_text() == "good\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.tsv"]
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_symbolic_link_is_kept_and_its_destination_replaced(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    destination = tmp_path / "real" / "model.tsv"
    destination.write_text("old\n")
    link = tmp_path / "current.tsv"
    link.symlink_to(destination)
    with written(str(link)) as out:
        out.write("new\n")
    assert link.is_symlink()
    assert destination.read_text() == "new\n"


def test_a_fifo_is_written_into_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    with written(str(fifo)) as out:
        out.write("through the pipe\n")
    reader.join(timeout=10)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
