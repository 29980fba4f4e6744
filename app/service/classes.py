"""Renaming and removing a class a site declared (``spamfilter classes``).

Ham and spam are every site's and stay. Another class can be renamed (its counts, totals
and learned messages follow it, in one transaction) or removed: its learned messages are
forgotten, each exactly as ``forget`` would, or moved into another class, each exactly as
feedback with that class would; then its totals and count columns go. Every model, the
site-wide one and each user's, changes alike: they share the site's classes.

Services running with the old list of classes must be restarted with the new one.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.domain.labels import CLASS_NAME, LABELS
from app.errors import InvalidLabel
from app.service.learning import forget_record, move_record
from app.storage.store import Store

# Learned messages forgotten or moved per transaction: a server's feedback waits for at
# most one batch.
BATCH = 200


@dataclass(frozen=True, slots=True)
class ClassChange:
    """What renaming or removing class ``name`` did: ``messages`` learned messages
    renamed, forgotten or moved ``into`` another class, and ``orphan_rows`` token rows that
    held counts of the class alone without a learned message (imported counts), deleted."""

    name: str
    action: str  # renamed | forgotten | moved
    messages: int
    into: str | None = None
    orphan_rows: int = 0


class ClassAdmin:
    """Class changes over a store whose layout includes the class changed
    (``bootstrap.build_class_admin``)."""

    def __init__(self, store: Store, declared: tuple[str, ...]) -> None:
        self._store = store
        self._declared = declared

    def rename(self, old: str, new: str) -> ClassChange:
        """Rename class ``old`` to ``new`` in every model, in one transaction. InvalidLabel
        for ham or spam, a name that cannot be a class, an ``old`` the database holds
        nothing of, or a ``new`` that holds learned messages already."""
        _changeable(old)
        _changeable(new)
        with self._store.transaction(write=True) as tx:
            held = tx.class_holdings(old)
            if not (held.records or held.messages or held.columns):
                raise InvalidLabel(f"the database holds nothing of class {old!r}")
            taken = tx.class_holdings(new)
            if taken.records or taken.messages:
                raise InvalidLabel(
                    f"class {new!r} holds {taken.records} learned messages already; "
                    f"use 'spamfilter classes remove {old} --into {new}' to merge them"
                )
            tx.rename_class(old, new)
        return ClassChange(old, "renamed", held.records, new)

    def remove(self, name: str, into: str | None = None) -> ClassChange:
        """Remove class ``name`` from every model: forget its learned messages or, with
        ``into`` (a declared class), move them there; then drop its totals and columns.
        A batch of messages a transaction, so an interrupted removal resumes where it
        stopped when run again."""
        _changeable(name)
        if into is not None and (into == name or into not in self._declared):
            raise InvalidLabel(
                f"--into names the class the messages go to: one of "
                f"{', '.join(c for c in self._declared if c != name)}"
            )
        done = 0
        while True:
            with self._store.transaction(write=True) as tx:
                batch = tx.records_of(name, BATCH)
                for scope, record in batch:
                    if into is None:
                        forget_record(tx, scope, record)
                    else:
                        move_record(tx, scope, record, into)
                if not batch:
                    orphans = tx.drop_class(name)
                    break
            done += len(batch)
        return ClassChange(name, "forgotten" if into is None else "moved", done, into, orphans)


def _changeable(name: str) -> None:
    """InvalidLabel unless ``name`` can name a class other than ham and spam."""
    if name in LABELS:
        raise InvalidLabel(f"{name} is a class of every site: it cannot be renamed or removed")
    if not CLASS_NAME.fullmatch(name):
        raise InvalidLabel(
            f"{name!r} cannot name a class: lower-case letters, digits and _, starting with "
            "a letter, at most 31 characters"
        )
