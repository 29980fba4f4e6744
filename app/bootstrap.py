"""The composition root: settings -> engine -> store -> service. Every entry point uses it."""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from app.service import SpamFilter
from app.service.events import Observer
from app.settings.schema import Settings
from app.storage.engine import make_engine
from app.storage.sqlite_file import exposure, require_writable
from app.storage.store import Store, is_current

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from app.service.classes import ClassAdmin

log = logging.getLogger(__name__)

DAEMONS = frozenset({"http", "spamd", "milter"})


def build_service(
    settings: Settings,
    migrate: bool = True,
    adapter: str = "cli",
    registry: CollectorRegistry | None = None,
    record: bool | None = None,
) -> SpamFilter:
    """A ready service for the entry point ``adapter``; with ``migrate`` the database is
    created or upgraded first. Its calls go to the verdict log (``log.verdicts``) and, given
    a Prometheus ``registry``, to the service metrics in it.

    With ``record`` (by default: in the daemons) its calls are also recorded for the web
    console (``console.record``); the CLI's message commands ask for it, since Dovecot's
    learn-on-move feedback arrives through ``spamfilter learn``."""
    engine = make_engine(settings.database_url)
    if migrate:
        require_writable(engine)
        # why: importing Alembic cost every command on a current database ~0.14 s (a
        # learn-on-move runs one process per message); reading the revision tells whether
        # it is needed.
        if not is_current(engine):
            from app.storage.migrate import upgrade

            upgrade(engine)
    chosen = observers(settings, adapter, registry)
    recorder = None
    if (adapter in DAEMONS if record is None else record) and settings.console.record:
        from app.telemetry.recorder import Recorder

        console = settings.console
        recorder = Recorder(
            lambda events: service.history.record(events),
            console.flush_seconds,
            console.flush_events,
            console.buffer_events,
            keep_tokens=console.keep_tokens_hours > 0,
        )
        chosen.append(recorder)
    store = Store(engine, settings.cache_tokens, settings.model.classes)
    # A declared class's count columns, added when first declared (nothing for ham and spam
    # alone: a site that declares no class reads nothing more at start-up).
    store.prepare_classes()
    service = SpamFilter(store, settings, chosen, adapter)
    if recorder is not None:
        recorder.start()
    return service


@contextmanager
def daemon_service(
    settings: Settings, adapter: str, metrics: tuple[str, int | None]
) -> Iterator[SpamFilter]:
    """The service of a long-running daemon (spamd, milter), never migrating, closed on exit.

    With a port in ``metrics`` (host, port), its service metrics are served over HTTP there
    for as long as it runs (``app.telemetry.exporter``)."""
    host, port = metrics
    registry = None
    stop: Callable[[], None] | None = None
    if port is not None:
        from prometheus_client import CollectorRegistry

        from app.telemetry.exporter import serve_metrics

        registry = CollectorRegistry(auto_describe=True)
    service = build_service(settings, migrate=False, adapter=adapter, registry=registry)
    settle()
    try:
        if registry is not None and port is not None:
            stop = serve_metrics(registry, host, port)
        yield service
    finally:
        service.close()
        if stop is not None:
            stop()


def settle() -> None:
    """Freeze what a long-running process has made so far (its modules, classes, settings
    and service) out of the garbage collector's full passes (``gc.freeze``), after
    collecting what is already garbage; objects made later are collected as before.

    They live as long as the process, and each full pass walked them all again (why: time in
    full passes under load, docs/benchmarks.md#measurements-behind-the-design).
    """
    gc.collect()
    gc.freeze()


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
        require_writable(engine)  # names the file that stops it, and the fix
        warning = exposure(engine)
        if warning is not None:
            log.warning("%s", warning)
        upgrade(engine)
        store = Store(engine, 0, settings.model.classes)
        store.prepare_classes()
        for name, messages in store.undeclared_classes().items():
            log.warning(
                "the database holds %d learned messages of class %s, which model.classes "
                "does not declare: declare it again, or run 'spamfilter classes remove %s'",
                messages,
                name,
                name,
            )
        return head_revision()
    finally:
        engine.dispose()


def build_class_admin(settings: Settings, name: str) -> ClassAdmin:
    """The class changes of ``spamfilter classes`` on the configured database, migrated
    first, over the declared classes and ``name`` (a class being renamed or removed may
    be declared no more). Its columns are never added for it: only what is stored changes."""
    from app.service.classes import ClassAdmin
    from app.storage.migrate import upgrade

    engine = make_engine(settings.database_url)
    require_writable(engine)
    upgrade(engine)
    declared = settings.model.classes
    store = Store(engine, 0, declared)
    store.prepare_classes()
    if name not in declared:
        with store.transaction(write=False) as tx:
            held = tx.class_holdings(name)
        if held.columns:
            store = Store(engine, 0, (*declared, name))
    return ClassAdmin(store, declared)
