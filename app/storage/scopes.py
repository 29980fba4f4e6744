"""Scope names to ids, within one transaction, and the per-scope row: vocabulary, generation.

Callers name scopes; every count row carries the scope's integer id. A read of a scope never
written finds nothing and creates nothing; the first write creates the scope's row.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal, overload

from sqlalchemy import Connection, select, update

from app.errors import StorageConflict
from app.storage import dialect
from app.storage.tables import model_scope


class ScopeIds:
    """The scope ids one transaction has looked up, and the scopes it has changed."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._ids: dict[str, int] = {}
        self._bumped: dict[int, int] = {}  # scope id -> its generation after the bump
        self._untracked: set[int] = set()

    def remember(self, name: str, scope_id: int) -> None:
        """Keep an id found by a query that read it along with something else."""
        self._ids[name] = scope_id

    def known(self, name: str) -> int | None:
        """The id of scope ``name`` if this transaction has learned it already (no query)."""
        return self._ids.get(name)

    def find(self, name: str) -> int | None:
        """The id of scope ``name``; None for a scope never written (nothing is created)."""
        scope_id = self._ids.get(name)
        return self._read_id(name) if scope_id is None else scope_id

    def changed(self, name: str) -> bool:
        """Whether this transaction has changed the model ``name`` (bumped its generation)."""
        return self.bumped_to(name) is not None

    def lock(self, name: str) -> None:
        """Lock the row of scope ``name`` (if there is one) until the transaction ends,
        without changing it: its writers wait for this transaction as for a change
        (``changing``). On SQLite a plain read: a writer holds the whole database."""
        self._read_id(name, lock=True)

    def _read_id(self, name: str, lock: bool = False) -> int | None:
        """The id of scope ``name`` read from the database (kept for this transaction), None
        for a scope never written; with ``lock``, its row locked as ``lock`` says.

        why: through the driver; a user without a model of their own has their scope looked
        up on every classify, and SQLAlchemy's select cost ~10x the query (docs/benchmarks.md,
        "Measurements behind the design")."""
        rows = dialect.fetch(self._conn, "SELECT id FROM model_scope WHERE name = ?", [name], lock)
        if not rows:
            return None
        scope_id = self._ids[name] = int(rows[0][0])
        return scope_id

    def bumped_to(self, name: str) -> int | None:
        """The generation this transaction's change gave the model ``name`` (None when it
        has not changed it)."""
        scope_id = self._ids.get(name)
        return None if scope_id is None else self._bumped.get(scope_id)

    def untracked(self, name: str) -> bool:
        """Whether this transaction changed the model ``name`` in a way a cache cannot follow
        (see ``changing``)."""
        scope_id = self._ids.get(name)
        return scope_id is not None and scope_id in self._untracked

    def get_or_create(self, name: str) -> int:
        """The id of scope ``name``, its row created on the first write.

        Insert-if-absent, then select: when two transactions create the same scope,
        PostgreSQL makes the second insert wait for the first and then do nothing, and the
        select (a new snapshot under READ COMMITTED) sees the committed row; SQLite writers
        never overlap.
        """
        scope_id = self.find(name)
        if scope_id is None:
            values = {
                "name": name,
                "vocabulary": 0,
                "generation": 0,
                "created_at": datetime.now(UTC),
            }
            dialect.insert_if_absent(self._conn, model_scope, values, unique=["name"])
            query = select(model_scope.c.id).where(model_scope.c.name == name)
            scope_id = int(self._conn.execute(query).scalar_one())
            self._ids[name] = scope_id
        return scope_id

    @overload
    def changing(self, name: str, *, tracked: bool = False) -> int: ...

    @overload
    def changing(
        self, name: str, create: Literal[False], *, tracked: bool = False
    ) -> int | None: ...

    def changing(self, name: str, create: bool = True, *, tracked: bool = False) -> int | None:
        """The id of scope ``name``, whose counts this transaction is about to change.

        The first change in a transaction bumps the scope's generation (what a cache of
        counts compares: see ``count_cache.py``). That update also locks the scope row before
        any count row, so on PostgreSQL the writers of one scope queue there and never wait
        for each other in a cycle on count rows. Without ``create``, None for a scope never
        written. ``tracked``: the caller records its change for the cache; any other change
        leaves the cache nothing to follow.
        """
        scope_id = self.get_or_create(name) if create else self.find(name)
        if scope_id is not None and not tracked:
            self._untracked.add(scope_id)
        if scope_id is not None and scope_id not in self._bumped:
            generation = self._conn.execute(
                update(model_scope)
                .where(model_scope.c.id == scope_id)
                .values(generation=model_scope.c.generation + 1)
                .returning(model_scope.c.generation)
            ).scalar_one_or_none()
            if generation is None:
                # The scope was deleted (a user deleted: ``accounts.drop_scope``) after this
                # transaction found its id; counts written now would belong to no scope.
                raise StorageConflict(f"scope {name!r} was deleted during this write")
            self._bumped[scope_id] = int(generation)
        return scope_id

    def grow_vocabulary(self, scope_id: int, tokens: int) -> int | None:
        """``tokens`` more distinct tokens in the scope's vocabulary; its size after (None
        when ``tokens`` is 0 and nothing was written). The size comes back with the update,
        so whoever watches it (automatic expiry) costs a learn no query of its own."""
        if not tokens:
            return None
        return int(
            self._conn.execute(
                update(model_scope)
                .where(model_scope.c.id == scope_id)
                .values(vocabulary=model_scope.c.vocabulary + tokens)
                .returning(model_scope.c.vocabulary)
            ).scalar_one()
        )

    def shrink_vocabulary(self, scope_id: int, tokens: int) -> None:
        """``tokens`` fewer distinct tokens in the scope's vocabulary (never below zero)."""
        if tokens:
            dialect.decrement(self._conn, model_scope, [{"id": scope_id, "vocabulary": tokens}])
