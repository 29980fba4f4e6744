"""Mail users and the model scopes that hold their counts.

A user is who the mail is for: an address (``alice@example.org``) or a login (``alice``).
Names are compared without case and without surrounding space, as mail systems compare
them in practice (Dovecot lowercases logins; no site has two users differing in case only).
A user's counts live in the scope ``<base>/user:<name>``, beside the site-wide scope
``<base>`` (``global`` unless configured), so a base scope and its users move together.
"""

from __future__ import annotations

import unicodedata

USER_MARK = "/user:"
MAX_USER_LENGTH = 150


class InvalidUserName(ValueError):
    """A user name that cannot name a model: too long, or with control characters."""


def normalise_user(value: str | None) -> str | None:
    """The canonical form of a user name; None for no user (the site-wide model).

    Leading and trailing space and angle brackets (``<alice@example.org>``, as SMTP
    envelopes write them) are dropped and the rest is lowercased. InvalidUserName for a name
    longer than MAX_USER_LENGTH or holding control characters, white space or ``/``.
    """
    if value is None:
        return None
    name = value.strip().removeprefix("<").removesuffix(">").strip().lower()
    if not name:
        return None
    if len(name) > MAX_USER_LENGTH:
        raise InvalidUserName(f"a user name is at most {MAX_USER_LENGTH} characters")
    for char in name:
        if char == "/" or char.isspace() or unicodedata.category(char).startswith("C"):
            raise InvalidUserName(f"user name {value!r} holds {char!r}, which is not allowed")
    return name


def users_prefix(base: str) -> str:
    """What every user's scope under ``base`` starts with."""
    return f"{base}{USER_MARK}"


def user_scope(base: str, user: str) -> str:
    """The scope holding ``user``'s counts (``user`` already normalised)."""
    return users_prefix(base) + user


def user_of(base: str, scope: str) -> str | None:
    """The user whose scope ``scope`` is, under ``base``; None for any other scope."""
    prefix = users_prefix(base)
    return scope[len(prefix) :] if scope.startswith(prefix) else None
