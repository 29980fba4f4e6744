"""Corpus discovery and the order in which its messages are presented.

A corpus is a folder of raw messages, one per file, in one of two layouts:

* ``DIR/index`` with one line per message, ``spam|ham RELATIVE/PATH`` (the
  label is case-insensitive, the path is everything after the first space).
  Order ``"index"`` presents the lines in file order.
* ``DIR/ham/`` and ``DIR/spam/`` (files at any depth, hidden ones included),
  used when there is no index. Order ``"shuffle"`` takes the ham files, then
  the spam files, each sorted by path components, and shuffles that list with
  ``random.Random(seed)``.

An index corpus can be shuffled the same way (the shuffle starts from the file
order). Order ``"auto"`` is ``"index"`` when an index exists, else ``"shuffle"``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

LABELS = ("ham", "spam")
ORDERS = ("auto", "index", "shuffle")
INDEX_NAME = "index"

T = TypeVar("T")


class CorpusError(ValueError):
    """A corpus cannot be read as asked."""


class CorpusNotFoundError(CorpusError):
    """The corpus folder, or its index and ham/spam folders, is missing."""


class IndexFormatError(CorpusError):
    """A line of the index is not ``spam|ham RELATIVE/PATH``."""


class UnknownLabelError(IndexFormatError):
    """An index line names a label other than spam or ham."""


@dataclass(frozen=True)
class CorpusItem:
    """One message: gold label ("spam" or "ham") and absolute file path."""

    label: str
    path: Path


def parse_index_line(line: str, root: Path, lineno: int = 0) -> CorpusItem | None:
    """One index line as an item under ``root``; None for a blank line."""
    text = line.strip()
    if not text:
        return None
    label, sep, rel = text.partition(" ")
    rel = rel.strip()
    if not sep or not rel:
        raise IndexFormatError(f"index line {lineno}: expected 'spam|ham PATH', got {text!r}")
    if label.lower() not in LABELS:
        raise UnknownLabelError(f"index line {lineno}: unknown label {label!r} in {text!r}")
    return CorpusItem(label.lower(), root / rel)


def read_index(root: Path) -> list[CorpusItem]:
    """Items of ``root/index`` in file order."""
    items: list[CorpusItem] = []
    with (root / INDEX_NAME).open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            item = parse_index_line(line, root, lineno)
            if item is not None:
                items.append(item)
    return items


def _files_under(folder: Path) -> list[Path]:
    """Regular files below ``folder`` at any depth, sorted by path components."""
    found = [p for p in folder.rglob("*") if p.is_file()]
    return sorted(found, key=lambda p: p.relative_to(folder).parts)


def read_label_folders(root: Path) -> list[CorpusItem]:
    """Sorted ham files, then sorted spam files."""
    items: list[CorpusItem] = []
    for label in LABELS:
        folder = root / label
        if not folder.is_dir():
            raise CorpusNotFoundError(f"{root}: no {INDEX_NAME} file and no {label}/ folder")
        items.extend(CorpusItem(label, p) for p in _files_under(folder))
    return items


def effective_order(root: str | Path, order: str) -> str:
    """``index`` or ``shuffle``: what ``order`` means for the corpus at ``root`` (``auto`` is
    ``index`` when the corpus has an index file, else ``shuffle``)."""
    if order == "auto":
        return "index" if (Path(root) / INDEX_NAME).is_file() else "shuffle"
    return order


def load_corpus(
    root: str | Path, order: str = "auto", seed: int = 1, limit: int | None = None
) -> list[CorpusItem]:
    """The corpus items in presentation order.

    order: "auto", "index" (needs an index file) or "shuffle"
    (``random.Random(seed).shuffle`` of the index order, or of sorted ham then
    sorted spam files). ``limit`` keeps the first N items of that order.
    """
    if order not in ORDERS:
        raise CorpusError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")
    if limit is not None and limit < 0:
        raise CorpusError(f"limit must be >= 0, got {limit}")
    base = Path(root).resolve()
    if not base.is_dir():
        raise CorpusNotFoundError(f"corpus folder not found: {base}")
    has_index = (base / INDEX_NAME).is_file()
    if order == "index" and not has_index:
        raise CorpusNotFoundError(f"{base}: order 'index' needs an {INDEX_NAME} file")
    items = read_index(base) if has_index else read_label_folders(base)
    if effective_order(base, order) == "shuffle":
        random.Random(seed).shuffle(items)
    return items if limit is None else items[:limit]


def kfold_splits(items: Sequence[T], k: int) -> list[tuple[list[T], list[T]]]:
    """(train, test) pairs for k-fold cross-validation, one per fold.

    Fold i tests the items whose position in ``items`` is i modulo k and trains
    on the others; both keep the order of ``items``.
    """
    if k < 2:
        raise ValueError(f"k must be at least 2, got {k}")
    if k > len(items):
        raise ValueError(f"k={k} folds need at least {k} items, got {len(items)}")
    folds: list[tuple[list[T], list[T]]] = []
    for fold in range(k):
        train = [item for pos, item in enumerate(items) if pos % k != fold]
        test = [item for pos, item in enumerate(items) if pos % k == fold]
        folds.append((train, test))
    return folds
