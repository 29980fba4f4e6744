"""Corpus discovery and the order in which its messages are presented.

A corpus is a folder of raw messages, one per file, in one of two layouts:

* ``DIR/index`` with one line per message, ``CLASS RELATIVE/PATH`` (the
  class is case-insensitive and one the model declares, ``spam|ham`` by default;
  the path is everything after the first space).
  Order ``"index"`` presents the lines in file order.
* ``DIR/ham/`` and ``DIR/spam/`` (files at any depth, hidden ones included),
  used when there is no index. Order ``"shuffle"`` takes the ham files, then
  the spam files, each sorted by path components, and shuffles that list with
  ``random.Random(seed)``.

An index corpus can be shuffled the same way (the shuffle starts from the file
order). Order ``"auto"`` is ``"index"`` when an index exists, else ``"shuffle"``.

File-name prefixes (``from_names``, e.g. ``easy_ham,hard_ham``) give a message whose file
name starts with one of them that class instead (see ``app.evaluation.classes``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from app.evaluation.classes import Classes, UndeclaredClassError, class_from_name

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
    """An index line names a class the model does not declare (spam and ham by default)."""


@dataclass(frozen=True)
class CorpusItem:
    """One message: gold label ("spam" or "ham": junk or not), absolute file path, its class
    in the corpus (default: the label) and the class the model learns it as (default: the
    class)."""

    label: str
    path: Path
    class_name: str = ""
    taught: str = ""

    def __post_init__(self) -> None:
        if not self.class_name:
            object.__setattr__(self, "class_name", self.label)
        if not self.taught:
            object.__setattr__(self, "taught", self.class_name)


def classified_item(
    path: Path, given: str, classes: Classes, from_names: Sequence[str] = ()
) -> CorpusItem:
    """The item at ``path`` whose index label or folder is ``given`` (a declared class or
    ``ham``/``spam``), refined by its file name's prefix among ``from_names``."""
    class_name = class_from_name(path.name, from_names) or given
    side = classes.side(class_name, classes.side(given, given))
    try:
        taught = classes.learned_as(class_name, side)
    except UndeclaredClassError as error:
        raise CorpusError(f"{path.name}: {error}") from error
    return CorpusItem(side, path, class_name, taught)


def parse_index_line(
    line: str,
    root: Path,
    lineno: int = 0,
    classes: Classes | None = None,
    from_names: Sequence[str] = (),
) -> CorpusItem | None:
    """One index line as an item under ``root``; None for a blank line. The label must be
    one of ``classes.declared`` (ham and spam by default)."""
    classes = classes or Classes()
    text = line.strip()
    if not text:
        return None
    label, sep, rel = text.partition(" ")
    rel = rel.strip()
    if not sep or not rel:
        raise IndexFormatError(f"index line {lineno}: expected 'CLASS PATH', got {text!r}")
    if label.lower() not in classes.declared:
        raise UnknownLabelError(
            f"index line {lineno}: unknown label {label!r} in {text!r} "
            f"(model.classes: {', '.join(classes.declared)})"
        )
    return classified_item(root / rel, label.lower(), classes, from_names)


def read_index(
    root: Path, classes: Classes | None = None, from_names: Sequence[str] = ()
) -> list[CorpusItem]:
    """Items of ``root/index`` in file order."""
    items: list[CorpusItem] = []
    with (root / INDEX_NAME).open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            item = parse_index_line(line, root, lineno, classes, from_names)
            if item is not None:
                items.append(item)
    return items


def _files_under(folder: Path) -> list[Path]:
    """Regular files below ``folder`` at any depth, sorted by path components."""
    found = [p for p in folder.rglob("*") if p.is_file()]
    return sorted(found, key=lambda p: p.relative_to(folder).parts)


def read_label_folders(
    root: Path, classes: Classes | None = None, from_names: Sequence[str] = ()
) -> list[CorpusItem]:
    """Sorted ham files, then sorted spam files."""
    classes = classes or Classes()
    items: list[CorpusItem] = []
    for label in LABELS:
        folder = root / label
        if not folder.is_dir():
            raise CorpusNotFoundError(f"{root}: no {INDEX_NAME} file and no {label}/ folder")
        items.extend(classified_item(p, label, classes, from_names) for p in _files_under(folder))
    return items


def effective_order(root: str | Path, order: str) -> str:
    """``index`` or ``shuffle``: what ``order`` means for the corpus at ``root`` (``auto`` is
    ``index`` when the corpus has an index file, else ``shuffle``)."""
    if order == "auto":
        return "index" if (Path(root) / INDEX_NAME).is_file() else "shuffle"
    return order


def load_corpus(
    root: str | Path,
    order: str = "auto",
    seed: int = 1,
    limit: int | None = None,
    classes: Classes | None = None,
    from_names: Sequence[str] = (),
) -> list[CorpusItem]:
    """The corpus items in presentation order.

    order: "auto", "index" (needs an index file) or "shuffle"
    (``random.Random(seed).shuffle`` of the index order, or of sorted ham then
    sorted spam files). ``limit`` keeps the first N items of that order. ``classes`` are
    the model's (ham and spam by default); ``from_names`` file-name prefixes that name a
    class of their own.
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
    if has_index:
        items = read_index(base, classes, from_names)
    else:
        items = read_label_folders(base, classes, from_names)
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
