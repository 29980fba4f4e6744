"""Which class a corpus message is, which class the model learns it as, and which side of
junk-vs-not-junk it falls on.

A corpus names a class per message: the index label, the ``ham/`` or ``spam/`` folder, or a
file-name prefix given with ``eval --classes-from-names`` (``easy_ham,hard_ham`` splits the
SpamAssassin corpus's ham into its two sub-corpora). The model knows the classes the site
declares (``model.classes``), some of them junk (``model.junk_classes``).

* side: ``spam`` for a declared junk class, ``ham`` for any other declared class; a class
  taken from a file name that the model does not declare keeps its folder's (or index
  label's) side.
* learned as: the class itself when declared; else its side (``ham`` or ``spam``, which must
  then be declared). So with the default classes ``ham,spam`` the three-class SpamAssassin
  stream is learned exactly as the two-class one, and the report still shows how each of the
  three classes was judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

HAM = "ham"
SPAM = "spam"


class UndeclaredClassError(ValueError):
    """A class cannot be learned: neither it nor its side is declared."""


@dataclass(frozen=True, slots=True)
class Classes:
    """The classes a model declares, and the junk ones among them (lower-case names)."""

    declared: tuple[str, ...] = (HAM, SPAM)
    junk: tuple[str, ...] = (SPAM,)

    def side(self, class_name: str, fallback: str) -> str:
        """``spam`` or ``ham``: junk membership for a declared class, else ``fallback``."""
        if class_name in self.declared:
            return SPAM if class_name in self.junk else HAM
        return fallback

    def learned_as(self, class_name: str, side: str) -> str:
        """The class the model learns a message of ``class_name`` (on ``side``) as."""
        if class_name in self.declared:
            return class_name
        if side in self.declared:
            return side
        raise UndeclaredClassError(
            f"class {class_name!r} is not declared in model.classes "
            f"({', '.join(self.declared)}) and neither is {side!r}, to learn it as"
        )


def class_from_name(name: str, prefixes: Sequence[str]) -> str | None:
    """The longest of ``prefixes`` that ``name`` starts with, followed by the end of the name
    or by a character other than a letter or digit (``easy_ham_2_00001.x`` is ``easy_ham``);
    None when no prefix matches."""
    found: str | None = None
    for prefix in prefixes:
        if not name.startswith(prefix) or (found is not None and len(found) >= len(prefix)):
            continue
        rest = name[len(prefix) :]
        if not rest or not rest[0].isalnum():
            found = prefix
    return found


def parse_class_names(text: str) -> tuple[str, ...]:
    """``easy_ham,hard_ham`` as lower-case names; ValueError for an empty list or name."""
    names = tuple(part.strip().lower() for part in text.split(","))
    if not names or any(not name for name in names):
        raise ValueError(f"expected comma-separated class names, got {text!r}")
    return names
