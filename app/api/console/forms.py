"""Console forms read as they arrive: urlencoded fields, each under a cap of its own.

A form is refused (MessageTooLarge, naming the field) as soon as one field's decoded bytes
pass its cap, while the rest of the body is still on its way: a 60 MiB field posted to the
scan page was once read whole (RSS 92 -> 629 MiB) before the message cap refused it. The
fields are split on ``&`` as bytes arrive and decoded as ``urllib.parse.parse_qs`` decodes
them (UTF-8, bad bytes replaced, blank values kept, the first value of a name wins).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import unquote_plus

from app.errors import MessageTooLarge

# A field name is a word (raw, upload_b64, csrf, action, token): longer is no form of ours.
MAX_NAME_BYTES = 64


class FormReader:
    """Fields of one urlencoded body fed in chunks; ``caps`` gives a field's most decoded
    bytes, ``other_cap`` those of any field not named there."""

    def __init__(self, caps: Mapping[str, int], other_cap: int) -> None:
        self._caps = caps
        self._other_cap = other_cap
        self._fields: dict[str, str] = {}
        self._pending = bytearray()  # the field still arriving, encoded
        self._name: str | None = None  # its name, once its "=" has arrived
        self._value_at = 0  # where its value starts in _pending
        self._cap = other_cap
        self._escapes = 0  # "%" signs in its value so far: each stands for 3 encoded bytes

    def feed(self, chunk: bytes) -> None:
        """Take the next bytes of the body; MessageTooLarge once a field passes its cap."""
        *whole, rest = chunk.split(b"&")
        for part in whole:
            self._extend(part)
            self._end_field()
        self._extend(rest)

    def finish(self) -> dict[str, str]:
        """The fields (first value of each name) once the body has ended."""
        self._end_field()
        return self._fields

    def _extend(self, part: bytes) -> None:
        start = len(self._pending)
        self._pending += part
        if self._name is None:
            equals = self._pending.find(b"=")
            if equals < 0:
                if len(self._pending) > MAX_NAME_BYTES:
                    raise MessageTooLarge(f"a form field name is over {MAX_NAME_BYTES} bytes")
                return
            self._name = _decoded(bytes(self._pending[:equals]))
            self._value_at = start = equals + 1
            self._cap = self._caps.get(self._name, self._other_cap)
        self._escapes += self._pending.count(b"%", start)
        # Each escape (%XX) decodes to one byte, every other byte to itself.
        decoded = len(self._pending) - self._value_at - 2 * self._escapes
        if decoded > self._cap:
            raise MessageTooLarge(
                f"the form field {self._name!r} is over its limit of {self._cap} bytes"
            )

    def _end_field(self) -> None:
        if self._pending:
            if self._name is None:  # a name without "=": a blank value
                name, value = _decoded(bytes(self._pending)), ""
            else:
                name, value = self._name, _decoded(bytes(self._pending[self._value_at :]))
            self._fields.setdefault(name, value)
        self._pending = bytearray()
        self._name = None
        self._value_at = 0
        self._escapes = 0


def _decoded(encoded: bytes) -> str:
    return unquote_plus(encoded.decode("utf-8", "replace"), errors="replace")
