"""Users as an administrator sees them: who has a model, what it holds, deleting one.

A user has a model once something was learned for them (the scope ``<base>/user:<name>``
of ``app.domain.users``). Deleting a user deletes that scope whole: its token counts, label
totals and learned-message records, in one transaction. The site-wide model is left as it
is, including whatever the user's feedback trained into it (``users.train_site``): those
counts are no longer the user's, and cannot be told apart from everyone else's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.domain.users import users_prefix
from app.errors import UnknownUser
from app.service.results import Stats
from app.service.scoping import models_for
from app.settings.schema import Settings
from app.storage.store import Store


@dataclass(frozen=True, slots=True)
class UserSummary:
    """One user's model: learned messages per label (every label, zeros included) and its
    vocabulary (distinct tokens)."""

    user: str
    scope: str
    messages: dict[str, int]
    vocabulary: int


@dataclass(frozen=True, slots=True)
class DeletedUser:
    """What deleting a user removed: learned messages and distinct tokens of their model."""

    user: str
    scope: str
    messages: int
    tokens: int


class Accounts:
    """Listing and deleting per-user models; each call is one transaction."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self._settings = settings

    def users(self) -> list[UserSummary]:
        """Every user with a model of their own, by name (one query however many)."""
        prefix = users_prefix(self._settings.scope)
        with self._store.transaction(write=False) as tx:
            scopes = tx.scopes_under(prefix)
        return [
            UserSummary(
                scope.name.removeprefix(prefix),
                scope.name,
                {label: scope.messages.get(label, 0) for label in self._store.classes},
                scope.vocabulary,
            )
            for scope in scopes
        ]

    def delete_user(self, user: str) -> DeletedUser:
        """Delete ``user``'s own model (see the module docstring); InvalidUser for a name
        that cannot name a model, UnknownUser when the user has none."""
        models = models_for(self._settings, user)
        if models.user is None:
            raise UnknownUser("no user given: the site-wide model is not a user's to delete")
        with self._store.transaction(write=True) as tx:
            dropped = tx.drop_scope(models.own)
        if dropped is None:
            raise UnknownUser(f"user {models.user!r} has no model")
        return DeletedUser(models.user, models.own, dropped.messages, dropped.tokens)


def stats_document(stats: Stats) -> dict[str, Any]:
    """``stats`` as JSON: the object of ``GET /v1/stats`` and of ``spamfilter stats --json``
    (``user`` null for the site-wide model)."""
    return {
        "labels": {
            label: {"messages": summary.messages, "tokens": summary.tokens}
            for label, summary in stats.labels.items()
        },
        "vocabulary": stats.vocabulary,
        "database": stats.database,
        "scope": stats.scope,
        "user": stats.user,
        "ham_scored": stats.ham_scored,
        "spam_cutoff": stats.spam_cutoff,
    }


def user_document(summary: UserSummary) -> dict[str, Any]:
    """One user of ``users`` as JSON (``GET /v1/users``, ``spamfilter user list --json``)."""
    return {
        "user": summary.user,
        "scope": summary.scope,
        "messages": summary.messages,
        "vocabulary": summary.vocabulary,
    }


def deleted_document(deleted: DeletedUser) -> dict[str, Any]:
    """What ``delete_user`` removed as JSON (``DELETE /v1/users/{user}``, the CLI's
    ``user delete --json``)."""
    return {
        "user": deleted.user,
        "scope": deleted.scope,
        "messages": deleted.messages,
        "tokens": deleted.tokens,
    }
