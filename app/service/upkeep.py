"""Keeping each model small (token expiry on demand, ``spamfilter expire``, and after
learns) and its table statistics fresh.

A scope loses the rows not learned for ``max_token_age_days`` and, past ``max_tokens`` rows,
its rarest and oldest rows (see ``app.storage.expiry``). Each scope is expired in a
transaction of its own, never inside a learn's.

After a learn, expiry runs for a scope whose vocabulary the learn left more than
``CAP_SLACK`` above the cap (the learn's own update returned the size: no extra query), and,
when expiry by age is on, once a day per scope and process. Expiry failing never fails the
learn: it is logged, and the next trigger tries again.

PostgreSQL plans a message's count reads from table statistics, which autovacuum gathers a
minute or so after a table grows; until then a table just filled looks empty to the planner
and every read scans it (why: bulk learn rate with and without, docs/benchmarks.md
"Measurements behind the design"). So after a learn that has doubled a scope's vocabulary
since this process last gathered them (or first saw the scope), from ``STATISTICS_FROM``
tokens on, the process gathers them itself. Failing to is logged, as for expiry.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from app.domain.users import user_of
from app.service.scoping import models_for
from app.settings.schema import Settings
from app.storage.expiry import ExpiryReport
from app.storage.rows import today
from app.storage.store import Store

__all__ = ["CAP_SLACK", "ExpiryLimits", "ExpiryReport", "Upkeep"]

log = logging.getLogger(__name__)

# Expiry after a learn starts once a scope is 10 % over the cap, and takes it back to the
# cap: the sort that finds the cut reads the whole scope, so it runs about once per 10 % of
# the cap in new tokens, not at every learn.
CAP_SLACK = 0.10
# Below this many tokens a scope's table is small enough to read whole.
STATISTICS_FROM = 1_000


@dataclass(frozen=True, slots=True)
class ExpiryLimits:
    """The two rules of one expiry run (0 turns a rule off)."""

    max_tokens: int
    max_age_days: int


class Upkeep:
    """Expiry of the scopes' vocabularies, and the per-process memory of when it last ran."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self._settings = settings
        self._aged: dict[str, int] = {}  # scope -> the day this process last expired it
        # scope -> its vocabulary when this process last gathered statistics (or first saw it)
        self._measured: dict[str, int] = {}
        self._lock = threading.Lock()

    def limits(
        self, max_tokens: int | None = None, max_age_days: int | None = None
    ) -> ExpiryLimits:
        """The settings' limits, each replaced by the value given, if any."""
        return ExpiryLimits(
            self._settings.max_tokens if max_tokens is None else max_tokens,
            self._settings.max_token_age_days if max_age_days is None else max_age_days,
        )

    def scopes(self, user: str | None, every: bool) -> list[str]:
        """The scope of ``user`` (None: the site-wide one), or with ``every`` the site-wide
        scope and every user scope under it."""
        if not every:
            return [models_for(self._settings, user).own]
        base = self._settings.scope
        with self._store.transaction(write=False) as tx:
            names = tx.expiry().scope_names()
        return [name for name in names if name == base or user_of(base, name) is not None]

    def expire(
        self,
        scopes: list[str],
        limits: ExpiryLimits,
        dry_run: bool,
        done: Callable[[ExpiryReport], None] | None = None,
    ) -> list[ExpiryReport]:
        """Expire each scope in a transaction of its own (read-only with ``dry_run``),
        calling ``done`` with each scope's report as it is finished."""
        reports = []
        for scope in scopes:
            reports.append(self._expire(scope, limits, dry_run))
            if done is not None:
                done(reports[-1])
        return reports

    def after_learn(self, grown: Mapping[str, int]) -> None:
        """Expire the scopes a committed learn grew, when one is over the cap by the slack or
        not yet aged today by this process (``grown``: scope -> vocabulary after the learn);
        then gather table statistics if one of them has doubled (see the module doc)."""
        self._expire_grown(grown)
        if self._statistics_due(grown):
            try:
                self._store.refresh_statistics()
            except Exception:  # the learn is committed: it must not fail for this
                log.exception("gathering table statistics failed; learning goes on")

    def _statistics_due(self, grown: Mapping[str, int]) -> bool:
        due = False
        with self._lock:
            for scope, vocabulary in grown.items():
                seen = self._measured.setdefault(scope, vocabulary)
                if vocabulary >= max(2 * seen, STATISTICS_FROM):
                    self._measured[scope] = vocabulary
                    due = True
        return due

    def due(self, grown: Mapping[str, int]) -> bool:
        """Whether a learn that grew these vocabularies (scope -> size after) would expire a
        scope afterwards (``after_learn``): over the cap by the slack, or not yet aged today
        by this process. A batch of learns ends its transaction there (``Trainer``)."""
        limits = self.limits()
        day = today()
        with self._lock:
            return any(
                _over_cap(limits, vocabulary) or self._aging_due(limits, scope, day)
                for scope, vocabulary in grown.items()
            )

    def _aging_due(self, limits: ExpiryLimits, scope: str, day: int) -> bool:
        """Whether ``scope`` is to be expired by age (an age is set and this process has not
        aged it on ``day``); the caller holds the lock."""
        return limits.max_age_days > 0 and self._aged.get(scope) != day

    def _expire_grown(self, grown: Mapping[str, int]) -> None:
        limits = self.limits()
        day = today()
        for scope, vocabulary in grown.items():
            over = _over_cap(limits, vocabulary)
            with self._lock:
                aging = self._aging_due(limits, scope, day)
                if aging:
                    self._aged[scope] = day
            if over or aging:
                try:
                    report = self._expire(scope, limits, dry_run=False)
                except Exception:  # the learn is committed: it must not fail for this
                    log.exception("expiry of scope %r failed; learning goes on", scope)
                    continue
                log.info(
                    "expired scope %r: %d rows by age, %d by size, vocabulary %d -> %d",
                    scope,
                    report.by_age,
                    report.by_size,
                    report.vocabulary,
                    report.after,
                )

    def _expire(self, scope: str, limits: ExpiryLimits, dry_run: bool) -> ExpiryReport:
        with self._store.transaction(write=not dry_run) as tx:
            return tx.expiry().expire(
                scope, today(), limits.max_age_days, limits.max_tokens, dry_run
            )


def _over_cap(limits: ExpiryLimits, vocabulary: int) -> bool:
    """Whether a scope of ``vocabulary`` tokens is over the cap by more than the slack."""
    return limits.max_tokens > 0 and vocabulary > limits.max_tokens * (1 + CAP_SLACK)
