"""Corpus layouts, presentation order and folds."""

from __future__ import annotations

import importlib
import random
from pathlib import Path
from typing import Any

import pytest

from app.evaluation.corpus import (
    CorpusError,
    CorpusItem,
    CorpusNotFoundError,
    IndexFormatError,
    UnknownLabelError,
    kfold_splits,
    load_corpus,
    parse_index_line,
)

PEERS = Path(__file__).resolve().parents[3] / "shared" / "peers"


def _write(path: Path, text: str = "x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _index_corpus(root: Path, lines: list[str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "index").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _folder_corpus(root: Path) -> Path:
    """ham/ and spam/ trees with names whose string and component orders differ."""
    names = ["a/b", "a-c", "a.d", "B1", "b10", "b2", ".hidden", "x/.cmds"]
    names += ["x/y/z", "zz", "10", "9", "a b", "ä", "a/c/d", "a0"]
    for label in ("ham", "spam"):
        for name in names:
            _write(root / label / name)
    for i in range(25):
        _write(root / "ham" / f"h{i:03d}")
        _write(root / "spam" / "deep" / f"s{i}")
    (root / "ham" / "emptydir").mkdir()
    (root / "ham" / "dangling").symlink_to(root / "missing")
    return root


# ---- index layout --------------------------------------------------------------


def test_index_order_and_labels(tmp_path: Path) -> None:
    root = _index_corpus(tmp_path / "c", ["spam a/1", "", "HAM b/2", "ham  c/with space  "])
    items = load_corpus(root)
    base = root.resolve()
    assert items == [
        CorpusItem("spam", base / "a/1"),
        CorpusItem("ham", base / "b/2"),
        CorpusItem("ham", base / "c/with space"),
    ]
    assert load_corpus(root, order="index", limit=2) == items[:2]
    assert load_corpus(root, limit=0) == []


def test_index_shuffle_is_seeded(tmp_path: Path) -> None:
    root = _index_corpus(tmp_path / "c", [f"{'spam' if i % 3 else 'ham'} m{i}" for i in range(40)])
    in_order = load_corpus(root, order="index")
    shuffled = load_corpus(root, order="shuffle", seed=5)
    expected = list(in_order)
    random.Random(5).shuffle(expected)
    assert shuffled == expected
    assert shuffled != in_order
    assert load_corpus(root, order="shuffle", seed=5, limit=7) == expected[:7]


def test_index_takes_precedence_over_folders(tmp_path: Path) -> None:
    root = _folder_corpus(tmp_path / "c")
    _index_corpus(root, ["spam only/one"])
    assert load_corpus(root) == [CorpusItem("spam", root.resolve() / "only/one")]


@pytest.mark.parametrize("line", ["spam", "spam   ", "spam\tpath", "junk path"])
def test_bad_index_lines(tmp_path: Path, line: str) -> None:
    root = _index_corpus(tmp_path / "c", ["ham ok", line])
    with pytest.raises(IndexFormatError, match="line 2"):
        load_corpus(root)


def test_unknown_label_error() -> None:
    with pytest.raises(UnknownLabelError, match="junk"):
        parse_index_line("junk path", Path("/c"), 3)
    assert parse_index_line("  \n", Path("/c")) is None
    assert issubclass(UnknownLabelError, ValueError)


# ---- ham/spam folders ------------------------------------------------------------


def test_folder_order_is_sorted_ham_then_spam_shuffled(tmp_path: Path) -> None:
    root = _folder_corpus(tmp_path / "c").resolve()
    items = load_corpus(root, seed=3)
    ham = sorted((p for p in (root / "ham").rglob("*") if p.is_file()), key=lambda p: p.parts)
    spam = sorted((p for p in (root / "spam").rglob("*") if p.is_file()), key=lambda p: p.parts)
    expected = [CorpusItem("ham", p) for p in ham] + [CorpusItem("spam", p) for p in spam]
    random.Random(3).shuffle(expected)
    assert items == expected
    assert CorpusItem("ham", root / "ham" / ".hidden") in items
    assert all(item.path.is_file() for item in items)
    assert load_corpus(root, order="auto", seed=3, limit=5) == expected[:5]
    assert load_corpus(root, seed=4) != items


def test_missing_folders_and_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(CorpusNotFoundError):
        load_corpus(tmp_path / "absent")
    (tmp_path / "half" / "ham").mkdir(parents=True)
    with pytest.raises(CorpusNotFoundError, match="spam/"):
        load_corpus(tmp_path / "half")
    root = _folder_corpus(tmp_path / "c")
    with pytest.raises(CorpusNotFoundError, match="index"):
        load_corpus(root, order="index")
    with pytest.raises(CorpusError, match="order"):
        load_corpus(root, order="chrono")
    with pytest.raises(ValueError, match="limit"):
        load_corpus(root, limit=-1)
    assert issubclass(CorpusNotFoundError, ValueError)


# ---- folds -----------------------------------------------------------------------


def test_kfold_splits_by_position() -> None:
    items = list("abcdefg")
    folds = kfold_splits(items, 3)
    assert folds == [
        (list("bcef"), list("adg")),
        (list("acdfg"), list("be")),
        (list("abdeg"), list("cf")),
    ]
    tests = sorted(x for _, test in folds for x in test)
    assert tests == items
    for train, test in folds:
        assert sorted(train + test) == items


def test_kfold_rejects_bad_k() -> None:
    with pytest.raises(ValueError):
        kfold_splits([1, 2, 3], 1)
    with pytest.raises(ValueError):
        kfold_splits([1, 2], 3)


# ---- same order as the peer harness ------------------------------------------------


def _peer_corpus(monkeypatch: pytest.MonkeyPatch) -> Any:
    if not (PEERS / "peerlib" / "corpus.py").is_file():
        pytest.skip(f"peer harness not found at {PEERS}")
    monkeypatch.syspath_prepend(str(PEERS))
    return importlib.import_module("peerlib.corpus")


def _peer_items(peer: Any, root: Path, **kwargs: Any) -> list[CorpusItem]:
    corpus = peer.load_corpus(root, **kwargs)
    return [CorpusItem(m.label, corpus.path(m)) for m in corpus.messages]


@pytest.mark.parametrize("seed", [1, 2, 42])
def test_folder_order_matches_peers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, seed: int
) -> None:
    peer = _peer_corpus(monkeypatch)
    root = _folder_corpus(tmp_path / "c")
    assert load_corpus(root, seed=seed) == _peer_items(peer, root, seed=seed)
    assert load_corpus(root, seed=seed, limit=9) == _peer_items(peer, root, seed=seed, limit=9)


def test_index_order_matches_peers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    peer = _peer_corpus(monkeypatch)
    lines = [f"{'Spam' if i % 4 else 'ham'}  dir{i % 3}/msg {i} " for i in range(50)]
    root = _index_corpus(tmp_path / "c", ["", *lines, ""])
    for order in ("auto", "index", "shuffle"):
        for seed in (1, 7):
            ours = load_corpus(root, order=order, seed=seed, limit=30)
            assert ours == _peer_items(peer, root, order=order, seed=seed, limit=30)
