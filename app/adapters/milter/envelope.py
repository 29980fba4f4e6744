"""What a milter session keeps besides the message: macros and envelope recipients, each
counted and capped in names, entries and bytes.

Neither is message content, so neither is drawn from the byte budget; without caps one
connection sending 150 macro frames of 1 MiB under new names and 100,000 RCPT commands held
255 MiB more, kept for as long as the connection lived. Macros are kept per stage, as
libmilter keeps them: a stage's new set replaces its last one, so an honest MTA's macros
never grow over a long connection. A cap broken is a reason (a string) for the session to
refuse the connection.
"""

from __future__ import annotations

# Why these numbers: Postfix's default milter macros are about 25 names of short values
# (Sendmail's about 30), so 100 names and 64 KiB leave room for a site's own; 1,000
# recipients is Postfix's smtpd_recipient_limit, and 256 bytes RFC 5321's longest path.
MAX_MACROS = 100
MAX_MACRO_BYTES = 64 * 1024
MAX_RECIPIENTS = 1000
MAX_RECIPIENT_BYTES = MAX_RECIPIENTS * 256


class Macros:
    """Macro values by stage (the command letter they came before)."""

    def __init__(self) -> None:
        self._stages: dict[str, dict[str, str]] = {}

    def define(self, stage: str, macros: dict[str, str]) -> str | None:
        """Keep ``macros`` as ``stage``'s set; the reason when that breaks a cap (then none
        of them is kept)."""
        stages = {**self._stages, stage: macros}
        names = sum(len(values) for values in stages.values())
        size = sum(len(k) + len(v) for values in stages.values() for k, v in values.items())
        if names > MAX_MACROS or size > MAX_MACRO_BYTES:
            return (
                f"{names} macros of {size} bytes, over the limit of {MAX_MACROS} macros "
                f"and {MAX_MACRO_BYTES} bytes"
            )
        self._stages = stages
        return None

    def get(self, name: str) -> str | None:
        """The value of macro ``name`` from the latest stage that sent it."""
        for values in reversed(self._stages.values()):
            if name in values:
                return values[name]
        return None

    def as_dict(self) -> dict[str, str]:
        """Every macro kept, a later stage's value over an earlier one's."""
        merged: dict[str, str] = {}
        for values in self._stages.values():
            merged.update(values)
        return merged

    def clear(self) -> None:
        """Forget every macro (a new SMTP connection, or the end of this one)."""
        self._stages = {}


class Recipients:
    """The envelope recipients of the message in progress."""

    def __init__(self) -> None:
        self._addresses: list[str] = []
        self._bytes = 0

    def add(self, address: str) -> str | None:
        """Keep ``address``; the reason when that breaks a cap (then it is not kept)."""
        size = self._bytes + len(address)
        if len(self._addresses) >= MAX_RECIPIENTS or size > MAX_RECIPIENT_BYTES:
            return (
                f"more than {MAX_RECIPIENTS} recipients or {MAX_RECIPIENT_BYTES} bytes of "
                "them in one message"
            )
        self._addresses.append(address)
        self._bytes = size
        return None

    def all(self) -> tuple[str, ...]:
        """The recipients, in the order the MTA sent them."""
        return tuple(self._addresses)
