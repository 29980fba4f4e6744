"""The composition root: settings -> engine -> store -> service. Every entry point uses it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.service import SpamFilter
from app.service.events import Observer
from app.settings import Settings
from app.storage.engine import make_engine
from app.storage.store import Store

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry


DAEMONS = frozenset({"http", "spamd", "milter"})
RECORDED = DAEMONS | {"cli"}


def build_service(
    settings: Settings,
    migrate: bool = True,
    adapter: str = "cli",
    registry: CollectorRegistry | None = None,
    recorded: str | None = None,
) -> SpamFilter:
    """A ready service for the entry point ``adapter``; with ``migrate`` the database is
    created or upgraded first. Its calls go to the verdict log (``log.verdicts``) and, given
    a Prometheus ``registry``, to the service metrics in it.

    ``recorded`` names the program the service runs in for the web console (``RECORDED``:
    the daemons, and the CLI, through which learn-on-move feedback arrives): its calls are
    reported under that name and recorded (``console.record``), while the verdict log is
    still chosen by ``adapter``."""
    engine = make_engine(settings.database_url)
    if migrate:
        from app.storage.migrate import upgrade  # Alembic: only when migrating (~0.14 s)

        upgrade(engine)
    chosen = observers(settings, adapter, registry)
    recorder = None
    if recorded in RECORDED and settings.console.record:
        from app.telemetry.recorder import Recorder

        console = settings.console
        recorder = Recorder(
            lambda events: service.history.record(events),
            console.flush_seconds,
            console.flush_events,
            console.buffer_events,
        )
        chosen.append(recorder)
    service = SpamFilter(Store(engine), settings, chosen, recorded or adapter)
    if recorder is not None:
        recorder.start()
    return service


def observers(
    settings: Settings, adapter: str, registry: CollectorRegistry | None = None
) -> list[Observer]:
    """The observers of a service built for ``adapter`` (see ``app.telemetry``)."""
    chosen: list[Observer] = []
    target = verdict_log_target(settings.log.verdicts, adapter)
    if target is not None:
        from app.telemetry.journal import open_journal

        chosen.append(open_journal(target))
    if registry is not None:
        from app.telemetry.collectors import ServiceMetrics

        chosen.append(ServiceMetrics(registry))
    return chosen


def verdict_log_target(setting: str, adapter: str) -> str | None:
    """Where the verdict log goes: ``stderr``, a file path, or None (off)."""
    if setting == "auto":
        return "stderr" if adapter in DAEMONS else None
    return None if setting == "off" else setting


def migrate_database(settings: Settings) -> str:
    """Upgrade the configured database to the newest schema; returns the revision."""
    from app.storage.migrate import head_revision, upgrade

    engine = make_engine(settings.database_url)
    try:
        upgrade(engine)
        return head_revision()
    finally:
        engine.dispose()
