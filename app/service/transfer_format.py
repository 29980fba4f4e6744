"""The export file (format version 3, versions 1 and 2 read too): records in, lines out,
and the reverse.

The format, its records, bounds and order, is specified in docs/export-format.md; the
constants below are its limits. This module is pure: no database, no files.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import pairwise
from typing import Protocol

from app.domain.cutoff import BINS
from app.domain.labels import LABELS
from app.domain.users import USER_MARK, InvalidUserName, normalise_user
from app.errors import InvalidDataFile, TransferRefused
from app.service.transfer_sums import ModelSums
from app.storage.codec import decode_bag, decode_wide, encode_bag, encode_wide

MAGIC = "spamfilter-export"
VERSION = 3
READABLE = (1, 2, 3)
_HELD_ONLY = 3  # from this version on a learned record names only tokens its file holds
_NO_BIN = "-"
SITE = "site"
USER_PREFIX = USER_MARK.lstrip("/")  # "user:"
MAX_COUNT = 2**53 - 1
"""The largest count a file may hold, and a merge may produce: exact in a float, and the sum
of two is far from 2**63 (a 64-bit integer column)."""
_MAX_DAY = 2**31 - 1  # seen_day is a 32-bit integer column
_MIN_ID, _MAX_ID = -(2**63), 2**63 - 1
_MAX_BAG_TOKENS = 100_000  # 20 times the tokenizer's default max_tokens
_MAX_BAG = 4 * -(-12 * _MAX_BAG_TOKENS // 3)  # its base64 length: 1,600,000 characters
MAX_LINE = 4 * 2**20  # characters, the line end included: a full bag and the rest fit
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\Z")
_DIGEST = re.compile(r"[0-9a-f]{64}\Z")


class TextSink(Protocol):
    """Where an export is written: a text file, stdout, a StringIO."""

    def write(self, text: str, /) -> int: ...


@dataclass(frozen=True, slots=True)
class Total:
    """A ``total`` record: one label's totals in the current model."""

    label: str
    messages: int
    occurrences: int
    token_messages: int


@dataclass(frozen=True, slots=True)
class Token:
    """A ``token`` record: ``counts`` maps a label to (messages, occurrences)."""

    token_id: int
    counts: dict[str, tuple[int, int]]
    seen_day: int


@dataclass(frozen=True, slots=True)
class Learned:
    """A ``learned`` record; ``bag`` is the bag as the database stores it
    (``app.storage.codec.encode_bag``; the file holds it in the wide layout)."""

    digest: str
    label: str
    learned_at: datetime
    bag: bytes
    token_count: int
    ham_bin: int | None = None


@dataclass(frozen=True, slots=True)
class HamScore:
    """A ``hamscore`` record: ``count`` ham messages scored in bin ``bin``."""

    bin: int
    count: int


@dataclass(frozen=True, slots=True)
class Scope:
    """A ``scope`` record: ``user`` is None for the site-wide model."""

    user: str | None


Record = Scope | Total | HamScore | Token | Learned


def scope_field(user: str | None) -> str:
    """``site`` or ``user:<name>``: how a model is named in a file."""
    return SITE if user is None else f"{USER_PREFIX}{user}"


@dataclass(slots=True)
class Counts:
    """How many records of each kind a file holds (the ``end`` record)."""

    scopes: int = 0
    totals: int = 0
    tokens: int = 0
    learned: int = 0
    hamscores: int = 0

    def fields(self, version: int = VERSION) -> list[int]:
        """In ``end`` record order (version 1 files have no ham scores)."""
        fields = [self.scopes, self.totals, self.tokens, self.learned]
        return fields if version == 1 else [*fields, self.hamscores]


@dataclass(slots=True)
class Writer:
    """Writes records to ``out`` in the format above; the caller keeps the order."""

    out: TextSink
    counts: Counts = field(default_factory=Counts)
    classes: tuple[str, ...] = LABELS

    def header(self) -> None:
        """The version header and the ``labels`` record (the classes, in ``token`` order)."""
        self.out.write(f"{MAGIC}\t{VERSION}\nlabels\t{chr(9).join(self.classes)}\n")

    def scope(self, user: str | None) -> None:
        """Start the model of ``user`` (None: the site-wide model)."""
        self.counts.scopes += 1
        self.out.write(f"scope\t{scope_field(user)}\n")

    def total(self, total: Total) -> None:
        """One label's totals."""
        self.counts.totals += 1
        self.out.write(
            f"total\t{total.label}\t{total.messages}\t{total.occurrences}\t{total.token_messages}\n"
        )

    def ham_score(self, score: HamScore) -> None:
        """One bin of the model's ham scores."""
        self.counts.hamscores += 1
        self.out.write(f"hamscore\t{score.bin}\t{score.count}\n")

    def tokens(self, rows: Iterable[Sequence[int]]) -> None:
        """``token`` records from (id, per label messages and occurrences..., seen_day)
        tuples, in ``labels`` order: the storage row as it is, for speed."""
        write = self.out.write
        n = 0
        for row in rows:
            write("token\t" + "\t".join(map(str, row)) + "\n")
            n += 1
        self.counts.tokens += n

    def learned(self, record: Learned, held: Container[int] | None = None) -> None:
        """One learned-message record; with ``held``, the bag's ids not in it (the tokens
        expiry deleted from the model) are left out, the counts of the others kept."""
        self.counts.learned += 1
        when = record.learned_at.astimezone(UTC).strftime(_TIME_FORMAT)
        tokens = stored_bag(record)
        if held is not None:
            tokens = {token_id: n for token_id, n in tokens.items() if token_id in held}
        # The file keeps one layout whatever the database stored (see app.storage.codec).
        bag = base64.b64encode(encode_wide(tokens)).decode("ascii")
        ham_bin = _NO_BIN if record.ham_bin is None else str(record.ham_bin)
        self.out.write(f"learned\t{record.digest}\t{record.label}\t{when}\t{bag}\t{ham_bin}\n")

    def end(self) -> None:
        """The ``end`` record: without it a reader treats the file as truncated."""
        self.out.write("end\t" + "\t".join(map(str, self.counts.fields())) + "\n")


def stored_bag(record: Learned) -> dict[int, int]:
    """The token ids and counts of a record's stored bag; TransferRefused when damaged."""
    try:
        return decode_bag(record.bag)
    except ValueError as error:
        raise TransferRefused(
            f"the learned-message record {record.digest} holds a damaged token bag "
            f"({error}); no import could read it, so the export stops here"
        ) from None


def read_records(
    lines: Iterable[str], classes: Sequence[str] = LABELS
) -> Iterator[tuple[int, Record]]:
    """The records of a file, with their line numbers, checked as they are read.

    InvalidDataFile, naming the line, for a wrong header or version, an unknown record or
    label (one not among ``classes``, the reading site's), a malformed, negative or too large
    number, a line or bag too long, records out of order, anything after ``end``, or a file
    that ends without it (truncated).
    """
    reader = _Reader(tuple(classes))
    number = 0
    for number, line in enumerate(lines, start=1):
        if len(line) > MAX_LINE:
            raise _bad(number, f"the line is longer than {MAX_LINE:,} characters")
        if not line.endswith("\n"):
            raise _bad(number, "the line has no line end (the file is truncated)")
        record = reader.read(number, line[:-1].split("\t"))
        if record is not None:
            yield number, record
    if not reader.ended:
        raise _bad(number + 1, "the file ends without its 'end' record (truncated)")


class _Reader:
    """The state of one file being read: what came before decides what may come next."""

    def __init__(self, classes: tuple[str, ...]) -> None:
        self.classes = classes
        self.labels: tuple[str, ...] | None = None
        self.counts = Counts()
        self.ended = False
        self._started = False
        self._users: list[str | None] = []
        self._totals: set[str] = set()
        self._last_token: int | None = None
        self._last_digest: str | None = None
        self._last_bin: int | None = None
        self._version = VERSION
        self._stage = 0  # 0 totals, 1 ham scores, 2 tokens, 3 learned (in the current scope)
        self._model = ModelSums()

    def read(self, number: int, fields: list[str]) -> Record | None:
        kind, values = fields[0], fields[1:]
        if self.ended:
            raise _bad(number, "a record after the 'end' record")
        if not self._started:
            self._header(number, fields)
            return None
        if kind == "labels":
            self._labels(number, values)
            return None
        if self.labels is None:
            raise _bad(number, "the 'labels' record must follow the header")
        if kind == "end":
            self._end(number, values)
            return None
        if kind == "scope":
            return self._scope(number, values)
        if not self._users:
            raise _bad(number, f"a {kind!r} record before any 'scope' record")
        if kind == "total":
            return self._total(number, values)
        if kind == "hamscore" and self._version > 1:
            return self._ham_score(number, values)
        if kind == "token":
            return self._token(number, values)
        if kind == "learned":
            return self._learned(number, values)
        raise _bad(number, f"unknown record {kind!r}")

    def _header(self, number: int, fields: list[str]) -> None:
        if fields[0] != MAGIC or len(fields) != 2:
            raise _bad(number, f"not a spamfilter export file (expected {MAGIC!r} first)")
        if fields[1] not in {str(version) for version in READABLE}:
            *older, newest = map(str, READABLE)
            readable = f"{', '.join(older)} and {newest}"
            raise _bad(number, f"export format version {fields[1]!r} is not supported "
                       f"(this version reads {readable})")  # fmt: skip
        self._version = int(fields[1])
        self._started = True

    def _labels(self, number: int, values: list[str]) -> None:
        if self.labels is not None:
            raise _bad(number, "a second 'labels' record")
        for label in values:
            self._label(number, label)
        if not values or len(set(values)) != len(values):
            raise _bad(number, "the 'labels' record must name each label once")
        self.labels = tuple(values)

    def _scope(self, number: int, values: list[str]) -> Scope:
        _arity(number, "scope", values, 1)
        name = values[0]
        if name == SITE:
            user = None
        elif name.startswith(USER_PREFIX):
            try:
                user = normalise_user(name[len(USER_PREFIX) :])
            except InvalidUserName as error:
                raise _bad(number, str(error)) from None
            if user is None or scope_field(user) != name:
                raise _bad(number, f"user scope {name!r} is not a normalised user name")
        else:
            raise _bad(number, f"scope {name!r} is neither {SITE!r} nor 'user:<name>'")
        if self._users and (user is None or (self._users[-1] or "") >= user):
            raise _bad(number, "scopes must come once each: site first, then users by name")
        self._users.append(user)
        self.counts.scopes += 1
        self._totals.clear()
        self._last_token = self._last_digest = self._last_bin = None
        self._stage = 0
        self._model = ModelSums()
        return Scope(user)

    def _total(self, number: int, values: list[str]) -> Total:
        _arity(number, "total", values, 4)
        label = self._label(number, values[0])
        if label in self._totals or self._stage > 0:
            raise _bad(number, "'total' records come once per label, before tokens")
        self._totals.add(label)
        messages, occurrences, token_messages = (_count(number, v) for v in values[1:])
        self.counts.totals += 1
        total = Total(label, messages, occurrences, token_messages)
        self._model.add_total(number, label, messages, occurrences, token_messages)
        return total

    def _ham_score(self, number: int, values: list[str]) -> HamScore:
        _arity(number, "hamscore", values, 2)
        index = _integer(number, values[0], 0, BINS - 1, "a ham score bin")
        if self._stage > 1 or (self._last_bin is not None and index <= self._last_bin):
            raise _bad(number, "hamscore records must come by ascending bin, before tokens")
        count = _count(number, values[1])
        if count == 0:
            raise _bad(number, "a hamscore record holds a count above 0")
        self._stage, self._last_bin = 1, index
        self.counts.hamscores += 1
        return HamScore(index, count)

    def _token(self, number: int, values: list[str]) -> Token:
        labels = self.labels or ()
        _arity(number, "token", values, 2 + 2 * len(labels))
        token_id = _integer(number, values[0], _MIN_ID, _MAX_ID, "a 64-bit signed token id")
        if self._stage > 2 or (self._last_token is not None and token_id <= self._last_token):
            raise _bad(number, "token records must come by ascending id, before learned ones")
        self._stage, self._last_token = 2, token_id
        numbers = [_count(number, v) for v in values[1:-1]]
        seen_day = _integer(number, values[-1], 0, _MAX_DAY, "a day number")
        counts = {label: (numbers[2 * k], numbers[2 * k + 1]) for k, label in enumerate(labels)}
        self._model.add_token(number, token_id, counts)
        self.counts.tokens += 1
        return Token(token_id, counts, seen_day)

    def _learned(self, number: int, values: list[str]) -> Learned:
        _arity(number, "learned", values, 4 if self._version == 1 else 5)
        digest, label, when, bag = values[:4]
        ham_bin = None
        if self._version > 1 and values[4] != _NO_BIN:
            ham_bin = _integer(number, values[4], 0, BINS - 1, f"a ham score bin or {_NO_BIN!r}")
        if not _DIGEST.match(digest):
            raise _bad(number, "a digest is 64 lowercase hex digits")
        if self._last_digest is not None and digest <= self._last_digest:
            raise _bad(number, "learned records must come by ascending digest")
        self._stage, self._last_digest = 3, digest
        label = self._label(number, label)
        if not _TIME.match(when):
            raise _bad(number, f"time {when!r} is not YYYY-MM-DDTHH:MM:SS.ffffffZ")
        if len(bag) > _MAX_BAG:
            raise _bad(
                number,
                f"a bag holds at most {_MAX_BAG_TOKENS:,} tokens ({_MAX_BAG:,} base64 "
                f"characters), this one {len(bag):,} characters",
            )
        try:
            learned_at = datetime.strptime(when, _TIME_FORMAT).replace(tzinfo=UTC)
            blob = base64.b64decode(bag, validate=True)
            ids = list(decode_wide(blob).items())
        except (ValueError, binascii.Error) as error:
            raise _bad(number, f"unreadable learned record: {error}") from None
        # decode_wide makes a dict, which drops a repeated id: the file's bag held ascending
        # unique ids only if none was dropped and the ones left are ascending.
        if (
            len(ids) != len(blob) // 12
            or any(n <= 0 for _, n in ids)
            or any(a[0] >= b[0] for a, b in pairwise(ids))
        ):
            raise _bad(number, "a bag holds strictly ascending token ids with positive counts")
        tokens = dict(ids)
        if self._version < _HELD_ONLY:  # written before export left expired tokens out
            tokens = self._model.held(tokens)
        self._model.add_learned(number, label, tokens)
        self.counts.learned += 1
        return Learned(digest, label, learned_at, encode_bag(tokens), len(tokens), ham_bin)

    def _label(self, number: int, value: str) -> str:
        if value not in self.classes or (self.labels is not None and value not in self.labels):
            known = self.classes if self.labels is None else self.labels
            raise _bad(
                number,
                f"unknown label {value!r}; expected {', '.join(known)} (a class the file "
                "names must be one of this site's classes, model.classes)",
            )
        return value

    def _end(self, number: int, values: list[str]) -> None:
        expected = self.counts.fields(self._version)
        _arity(number, "end", values, len(expected))
        if [_count(number, v) for v in values] != expected:
            raise _bad(number, "the record counts of 'end' disagree with the file (truncated?)")
        self.ended = True


def _arity(number: int, kind: str, values: list[str], expected: int) -> None:
    if len(values) != expected:
        raise _bad(number, f"a {kind!r} record has {expected} fields, this one {len(values)}")


def _count(number: int, value: str) -> int:
    return _integer(number, value, 0, MAX_COUNT, "a non-negative count")


def _integer(number: int, value: str, low: int, high: int, what: str) -> int:
    """A decimal integer in [low, high], written canonically (no '+', spaces, zeros)."""
    if len(value) > 20:  # int() of a long string is slow; no value here needs more
        raise _bad(number, f"{value[:20]!r}... is not {what} ({low} .. {high})")
    try:
        result = int(value)
    except ValueError:
        result = None
    if result is None or str(result) != value:
        raise _bad(number, f"{value!r} is not a decimal integer")
    if not low <= result <= high:
        raise _bad(number, f"{value} is not {what} ({low} .. {high})")
    return result


def _bad(number: int, detail: str) -> InvalidDataFile:
    return InvalidDataFile(f"line {number}: {detail}")
