"""What a caller without a valid API token may learn from a verdict.

The clues of a classification are learned tokens. A bare body word says little, but a
namespaced token (``from:addr:alice@example.org``, ``received:ip:10.1.2``,
``url:host:intranet.example.org``) tells whoever can classify which addresses, relays and
hosts the model has learned, and so whose mail the server sees. A classify for a caller
who proved nothing (``anonymous``: over HTTP, without a valid token when tokens are
configured) answers the verdict, the scores and every clue's weight, but a namespaced clue's
value is replaced by ``HIDDEN``: ``from:addr:*``. The X-Spam headers are built from the same
hidden clues.
"""

from __future__ import annotations

import dataclasses

from app.domain.naive_bayes import Clue
from app.domain.tokenizer import token_kind
from app.service.results import Classification

HIDDEN = "*"

# The second-level names the tokenizer puts between a namespace and a value (``from:addr:``,
# ``received:ip6:``, ``url:path:``, ``mime:charset:``, ``meta:limit:``, ``<field>:skip:``).
# Only these are kept: anything else after the first ``:`` may be part of a value.
_KINDS = frozenset(
    {
        "addr",
        "charset",
        "domain",
        "encoding",
        "ext",
        "host",
        "ip",
        "ip6",
        "limit",
        "name",
        "path",
        "skip",
        "type",
    }
)


def hide_token(token: str) -> str:
    """``token`` with the value of a namespaced token replaced by ``HIDDEN``; a bare body word
    unchanged. ``from:addr:a@example.org`` -> ``from:addr:*``, ``subject:free`` ->
    ``subject:*``."""
    if token_kind(token) == "word":
        return token
    parts = token.split(":", 2)
    keep = 2 if len(parts) == 3 and parts[1] in _KINDS else 1
    return ":".join([*parts[:keep], HIDDEN])


def hide_field_values(result: Classification) -> Classification:
    """``result`` with every clue's token passed through ``hide_token`` (weights kept, and
    the clues' learned counts under the hidden names)."""
    clues = [Clue(hide_token(clue.token), clue.weight) for clue in result.clues]
    counts = {hide_token(token): per for token, per in result.clue_counts.items()}
    return dataclasses.replace(result, clues=clues, clue_counts=counts)
