"""Which model a call reads and trains: the site-wide one, or a user's with its fallback."""

from __future__ import annotations

from dataclasses import dataclass

from app.domain.users import InvalidUserName, normalise_user, user_scope
from app.errors import InvalidUser
from app.settings.schema import Settings


@dataclass(frozen=True, slots=True)
class Models:
    """The scopes of one call.

    ``own`` is the scope the call reads and trains; ``site`` is the site-wide scope a user's
    model falls back on (None when ``own`` is the site-wide model itself). ``user`` is the
    normalised user name, None for the site-wide model.
    """

    own: str
    site: str | None = None
    user: str | None = None


def models_for(settings: Settings, user: str | None) -> Models:
    """The scopes for ``user`` (None or blank: the site-wide model); InvalidUser for a name
    that cannot name a model."""
    try:
        name = normalise_user(user)
    except InvalidUserName as error:
        raise InvalidUser(str(error)) from error
    if name is None:
        return Models(settings.scope)
    return Models(user_scope(settings.scope, name), settings.scope, name)
