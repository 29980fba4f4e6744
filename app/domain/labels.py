"""The classes a message can be learned as: the two every site has, and the rules a site's
own list of classes follows."""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum


class Label(StrEnum):
    """The two classes every site has: the spam/ham verdict, spamc's exit codes and the
    ``X-Spam-*`` headers are about them."""

    HAM = "ham"
    SPAM = "spam"


# The classes of a site that declares none, in the order their counts are stored and scored.
LABELS: tuple[str, ...] = tuple(label.value for label in Label)
# The junk classes of a site that declares none.
JUNK: tuple[str, ...] = (Label.SPAM.value,)

# A class name is a column-name fragment in storage and a word on every wire: lower-case
# letters, digits and underscores, starting with a letter, at most 31 characters.
CLASS_NAME = re.compile(r"[a-z][a-z0-9_]{0,30}")
# rspamd's multi-class Bayes allows 2 to 20 classes; so does this.
MAX_CLASSES = 20


def check_classes(classes: Sequence[str], junk: Sequence[str]) -> None:
    """ValueError unless ``classes`` is a valid list of classes and ``junk`` a valid choice
    of junk classes among them: names match ``CLASS_NAME``, none twice, ham and spam among
    them, at most ``MAX_CLASSES``; spam junk, ham not."""
    for name in (*classes, *junk):
        if not CLASS_NAME.fullmatch(name):
            raise ValueError(
                f"class name {name!r}: lower-case letters, digits and _, starting with a "
                "letter, at most 31 characters"
            )
    for names, what in ((classes, "classes"), (junk, "junk classes")):
        doubled = sorted({n for n in names if list(names).count(n) > 1})
        if doubled:
            raise ValueError(f"{what} named twice: {', '.join(doubled)}")
    missing = [label for label in LABELS if label not in classes]
    if missing:
        raise ValueError(f"the classes must include ham and spam; missing: {', '.join(missing)}")
    if len(classes) > MAX_CLASSES:
        raise ValueError(f"at most {MAX_CLASSES} classes; {len(classes)} declared")
    unknown = [name for name in junk if name not in classes]
    if unknown:
        raise ValueError(f"junk classes not among the classes: {', '.join(unknown)}")
    # The spam/ham verdict, spamc's exit codes and the X-Spam headers keep their meaning:
    # spam is junk and ham is not, whatever else a site declares.
    if Label.SPAM not in junk:
        raise ValueError("spam must be among the junk classes")
    if Label.HAM in junk:
        raise ValueError("ham cannot be a junk class")


def parse_class(value: str, classes: Sequence[str] = LABELS) -> str:
    """The class of ``classes`` that ``value`` names (case-insensitive, spaces around
    ignored); ValueError naming the declared classes for anything else."""
    name = value.strip().lower()
    if name not in classes:
        raise ValueError(f"unknown label {value!r}; expected one of {', '.join(classes)}")
    return name


def parse_label(value: str) -> Label:
    """The Label for ``value`` (case-insensitive); ValueError for anything else."""
    return Label(parse_class(value, LABELS))
