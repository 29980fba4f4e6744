"""``learn --jobs`` and ``classify --jobs``: the next messages of a bulk run read in other
processes while this one learns or classifies (``app.service.read_ahead``).

Nothing changes but the time: the messages are learned or classified here, in the order
found, and a message that other process could not read is read again here, so it fails (and
is reported) exactly as it would have.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Sequence
from contextlib import closing

from app.cli.bulk import Loaded, Loader, load
from app.cli.mailboxes import Found
from app.settings.schema import Settings


def processes_for(jobs: int | None, messages: int) -> int:
    """``--jobs`` when given, else what suits a run of ``messages``
    (``read_ahead.reading_processes``)."""
    if jobs is not None:
        return jobs
    from app.service.read_ahead import reading_processes

    return reading_processes(messages)


def ahead(settings: Settings, processes: int, *, legacy: bool) -> Loader:
    """A loader (see ``bulk.run_task``) whose messages come read by ``processes`` other
    processes, with the legacy digest as learn reads them (``legacy``), else as classify
    does; none: ``bulk.load``."""
    if processes < 1:
        return load

    def loader(found: Sequence[Found]) -> Generator[Loaded, None, None]:
        from app.service.read_ahead import read_ahead

        entries = ((entry, _raw(entry)) for entry in load(found))
        with closing(read_ahead(settings, entries, processes, legacy=legacy)) as reading:
            for entry, analysed in reading:
                yield entry if analysed is None else dataclasses.replace(entry, content=analysed)

    return loader


def _raw(entry: Loaded) -> bytes | None:
    return entry.content if entry.problem is None and isinstance(entry.content, bytes) else None
