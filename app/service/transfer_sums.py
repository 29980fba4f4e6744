"""What one model's records in an export file must agree on, checked at the record that
breaks it (``transfer_format`` reads the records; this keeps their running sums).

The rules, and why a file that breaks one is refused, are in docs/export-format.md ("What a
model's counts must agree on"): per label, token messages <= ``total`` messages, the
tokens' occurrences and messages <= the ``total``'s, learned records <= ``total`` messages,
and a learned record names only tokens of its model (the set of ids is kept while a model
is read).
"""

from __future__ import annotations

from collections.abc import Iterable

from app.errors import InvalidDataFile

_NONE = (0, 0, 0, 0)  # no 'total' record: a label without messages


class ModelSums:
    """The running sums of one model (one ``scope`` record and what follows it)."""

    def __init__(self) -> None:
        # label: the line of its 'total' record, messages, occurrences, token messages
        self._totals: dict[str, tuple[int, int, int, int]] = {}
        self._sums: dict[str, list[int]] = {}  # label: occurrences, token messages so far
        self._learned: dict[str, int] = {}
        self._tokens: set[int] = set()

    def add_total(
        self, number: int, label: str, messages: int, occurrences: int, token_messages: int
    ) -> None:
        """The ``total`` record of ``label``, at line ``number``."""
        self._totals[label] = (number, messages, occurrences, token_messages)

    def add_token(self, number: int, token_id: int, counts: dict[str, tuple[int, int]]) -> None:
        """A ``token`` record (``counts``: label -> messages, occurrences) at line
        ``number``; InvalidDataFile when it breaks the label's total."""
        self._tokens.add(token_id)
        for label, (messages, occurrences) in counts.items():
            line, most_messages, most_occurrences, most_token_messages = self._total(label)
            if messages > most_messages:
                raise _bad(
                    number,
                    f"token {token_id} is in {messages:,} {label} messages, more than the "
                    f"{most_messages:,} of the {label} total{line}",
                )
            sums = self._sums.setdefault(label, [0, 0])
            sums[0] += occurrences
            sums[1] += messages
            for kind, found, most in (
                ("occurrences", sums[0], most_occurrences),
                ("messages", sums[1], most_token_messages),
            ):
                if found > most:
                    raise _bad(
                        number,
                        f"the tokens' {label} {kind} add up to {found:,} by this line, more "
                        f"than the {most:,} of the {label} total{line}",
                    )

    def held(self, bag: dict[int, int]) -> dict[int, int]:
        """The ids and counts of ``bag`` whose tokens the model's records hold (so far)."""
        return {token_id: n for token_id, n in bag.items() if token_id in self._tokens}

    def add_learned(self, number: int, label: str, token_ids: Iterable[int]) -> None:
        """A ``learned`` record of ``label`` naming ``token_ids``, at line ``number``;
        InvalidDataFile when it names a token the model's records do not hold, or the
        label's total counts fewer messages than are recorded as learned."""
        missing = next((i for i in token_ids if i not in self._tokens), None)
        if missing is not None:
            raise _bad(
                number,
                f"the learned record names token {missing}, which the model's token records "
                "do not hold",
            )
        line, most, _, _ = self._total(label)
        learned = self._learned[label] = self._learned.get(label, 0) + 1
        if learned > most:
            raise _bad(
                number,
                f"{learned:,} {label} messages are recorded as learned by this line, more "
                f"than the {most:,} of the {label} total{line}",
            )

    def _total(self, label: str) -> tuple[str, int, int, int]:
        number, *counts = self._totals.get(label, _NONE)
        where = f" (line {number})" if number else " (no 'total' record: 0)"
        return where, counts[0], counts[1], counts[2]


def _bad(number: int, detail: str) -> InvalidDataFile:
    return InvalidDataFile(f"line {number}: {detail}")
