"""The console's activity: recording batches of events, and reading them back.

``History.record`` turns a batch of service events (see ``events``) into history entries
(one per classify), per-minute counts (every call) and corrections (a learn whose label
contradicts the verdict the history holds for that message: a false positive or a missed
spam), in one transaction, and prunes what is past its retention (``console`` settings).
Entries of anonymous callers (``Event.anonymous``) are counted against a cap of their own,
so that a flood of them cannot push the others out of the history.
The reads serve the console's pages; ``analysed`` rebuilds a kept entry's message so that it
can be learned or forgotten exactly as the feedback endpoint would.
"""

from __future__ import annotations

import json
import math
import uuid
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from app.service.events import Event
from app.service.results import Analysed
from app.settings.schema import Settings
from app.storage.activity import EntryFilter, EntryRow, Judged, MinuteRow
from app.storage.store import Store
from app.storage.tables import LATENCY_BUCKETS

# What a history query takes and returns, re-exported so that the console (an adapter) asks
# the service for them and never imports storage.
__all__ = ["Entry", "EntryFilter", "History", "MinuteRow"]

# Upper bounds (ms) of the latency buckets, the console's and Prometheus's; the last bucket
# has none. From 1 ms to 10 s: a classify takes a few milliseconds, a cold PostgreSQL learn
# can take a second.
LATENCY_BOUNDS_MS = (1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 10000.0)
assert len(LATENCY_BOUNDS_MS) + 1 == LATENCY_BUCKETS

CORRECTION = "correction"
FALSE_POSITIVE = "false_positive"  # judged spam, learned as ham
MISSED_SPAM = "missed_spam"  # judged ham or unsure, learned as spam
_LEARNED = frozenset({"learned", "relabelled", "unchanged", "skipped"})


@dataclass(frozen=True, slots=True)
class Entry:
    """A verdict in the history, as the console shows it."""

    id: int
    at: datetime
    adapter: str
    user: str | None
    sender: str | None
    subject: str | None
    message_id: str | None
    digest: str
    verdict: str
    log_odds: float
    ms: float
    clues: list[tuple[str, float]]
    learned: str | None
    kept: bool  # its tokens are still kept: it can be learned or forgotten


def minute_of(moment: datetime) -> int:
    """Minutes since the epoch (UTC)."""
    return int(moment.timestamp() // 60)


def bucket_of(ms: float) -> int:
    """The latency bucket of a call that took ``ms`` milliseconds."""
    for index, bound in enumerate(LATENCY_BOUNDS_MS):
        if ms <= bound:
            return index
    return len(LATENCY_BOUNDS_MS)


def percentile(buckets: Sequence[int], fraction: float) -> float | None:
    """The ``fraction`` quantile (ms) of a latency histogram, interpolated within its bucket
    (the last bucket reports its lower bound); None when it is empty."""
    total = sum(buckets)
    if total == 0:
        return None
    rank = fraction * total
    seen = 0
    for index, count in enumerate(buckets):
        if count and seen + count >= rank:
            if index == len(LATENCY_BOUNDS_MS):
                return LATENCY_BOUNDS_MS[-1]
            low = 0.0 if index == 0 else LATENCY_BOUNDS_MS[index - 1]
            high = LATENCY_BOUNDS_MS[index]
            return low + (high - low) * max(rank - seen, 0) / count
        seen += count
    return LATENCY_BOUNDS_MS[-1]  # pragma: no cover - rank never exceeds the total


def pack_tokens(tokens: Mapping[str, int]) -> bytes:
    """A message's token counts, compressed for keeping.

    Level 1: every classification a daemon makes is packed, and level 6 took 57 µs of the
    ~150 µs a recorded verdict costs, for blobs only 9 % smaller (1,042 against 1,138 bytes
    on average over 1,000 SpamAssassin messages). Either level unpacks the same way."""
    return zlib.compress(json.dumps(dict(tokens), separators=(",", ":")).encode(), 1)


def unpack_tokens(blob: bytes) -> Counter[str]:
    """The inverse of ``pack_tokens``."""
    return Counter({str(k): int(v) for k, v in json.loads(zlib.decompress(blob)).items()})


class History:
    """The console's recorded activity in the store, within the ``console`` settings."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self._settings = settings.console
        self.source = uuid.uuid4().hex[:16]

    def record(self, events: Sequence[Event], now: datetime | None = None) -> None:
        """Store a batch of events in one transaction, then prune what is past retention."""
        now = now or datetime.now(UTC)
        minutes: dict[tuple[int, str, str, str], MinuteRow] = {}
        entries = [self._entry(e, now) for e in events if e.call == "classify" and e.digest]
        feedback = [e for e in events if e.call in ("learn", "forget") and e.digest]
        with self._store.transaction(write=True) as tx:
            activity = tx.activity()
            activity.add_entries([e for e in entries if e is not None])
            known = activity.judged({e.digest for e in feedback if e.digest})
            changed: dict[str, str | None] = {}
            for event in events:
                _count(minutes, event.time, event.adapter, event.call, event.outcome, event.seconds)
                judged = known.get(event.digest or "")
                if judged is None or event.outcome == "error":
                    continue
                if event.call == "learn" and event.outcome in _LEARNED and event.label:
                    kind = _correction(judged, event.label)
                    if kind is not None:
                        _count(minutes, event.time, event.adapter, CORRECTION, kind, 0.0)
                    judged.learned = changed[event.digest or ""] = event.label
                elif event.call == "forget" and event.outcome == "forgotten":
                    judged.learned = changed[event.digest or ""] = None
            for label in set(changed.values()):
                activity.set_learned([d for d, lb in changed.items() if lb == label], label)
            activity.add_minutes(self.source, list(minutes.values()))
            keep = self._settings
            activity.prune_entries(
                now - timedelta(days=keep.history_days),
                keep.history_entries,
                keep.history_anonymous_entries,
                now - timedelta(hours=keep.keep_tokens_hours),
            )
            activity.prune_minutes(minute_of(now - timedelta(days=keep.rollup_days)))

    def _entry(self, event: Event, now: datetime) -> EntryRow | None:
        if event.outcome == "error" or event.digest is None:
            return None
        private = not self._settings.show_senders
        keep_tokens = self._settings.keep_tokens_hours > 0 and event.tokens is not None
        return EntryRow(
            at=event.time,
            adapter=event.adapter,
            user=event.user,
            sender=None if private else event.sender,
            subject=None if private else event.subject,
            message_id=event.message_id,
            digest=event.digest,
            verdict=event.outcome,
            log_odds=event.log_odds if event.log_odds is not None else 0.0,
            ms=event.seconds * 1000,
            form=event.form or "rfc822",
            clues=json.dumps([[t, round(w, 4)] for t, w in event.clues]),
            tokens=pack_tokens(event.tokens) if keep_tokens and event.tokens else None,
            anonymous=event.anonymous,
        )

    def entries(self, chosen: EntryFilter, limit: int = 100) -> list[Entry]:
        """The newest history entries matching ``chosen``, newest first."""
        with self._store.transaction(write=False) as tx:
            rows = tx.activity().entries(chosen, limit)
        return [_shown(row) for row in rows]

    def entry(self, entry_id: int) -> tuple[Entry, Analysed | None] | None:
        """One entry, and its message rebuilt from the kept tokens (None once dropped)."""
        with self._store.transaction(write=False) as tx:
            row = tx.activity().entry(entry_id)
        if row is None:
            return None
        analysed = None
        if row.tokens is not None:
            analysed = Analysed(
                row.digest,
                unpack_tokens(row.tokens),
                truncated=False,
                form=row.form,
                message_id=row.message_id,
                sender=row.sender,
                subject=row.subject,
            )
        return _shown(row), analysed

    def minutes(self, since: datetime, width: int = 1) -> list[MinuteRow]:
        """Per-period counts from ``since`` on (periods of ``width`` minutes), every process
        summed."""
        with self._store.transaction(write=False) as tx:
            return tx.activity().minutes(minute_of(since), width)

    def database_bytes(self) -> int | None:
        """The database's size in bytes, when the dialect tells."""
        with self._store.transaction(write=False) as tx:
            return tx.activity().database_bytes()


def _count(
    minutes: dict[tuple[int, str, str, str], MinuteRow],
    moment: datetime,
    adapter: str,
    action: str,
    outcome: str,
    seconds: float,
) -> None:
    minute = minute_of(moment)
    key = (minute, adapter, action, outcome)
    row = minutes.get(key)
    if row is None:
        row = minutes[key] = MinuteRow(minute, adapter, action, outcome)
    row.count += 1
    if action != CORRECTION:
        ms = seconds * 1000
        row.ms_total += ms
        row.latency[bucket_of(ms)] += 1


def _correction(entry: Judged, label: str) -> str | None:
    """What learning ``label`` says of the verdict the history holds, once per message."""
    if entry.learned == label:
        return None
    if entry.verdict == "spam" and label == "ham":
        return FALSE_POSITIVE
    if entry.verdict in ("ham", "unsure") and label == "spam":
        return MISSED_SPAM
    return None


def _shown(row: EntryRow) -> Entry:
    at = row.at if row.at.tzinfo else row.at.replace(tzinfo=UTC)
    clues = [(str(t), float(w)) for t, w in json.loads(row.clues)]
    return Entry(
        id=row.id or 0,
        at=at,
        adapter=row.adapter,
        user=row.user,
        sender=row.sender,
        subject=row.subject,
        message_id=row.message_id,
        digest=row.digest,
        verdict=row.verdict,
        log_odds=row.log_odds if math.isfinite(row.log_odds) else 0.0,
        ms=row.ms,
        clues=clues,
        learned=row.learned,
        kept=row.tokens is not None,
    )
