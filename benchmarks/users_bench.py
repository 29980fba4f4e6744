"""``spamfilter bench users``: what judging for a user costs beside judging site-wide.

The corpus holds a folder per user (``enron1/...``, ``enron2/...``: see
``app.evaluation.per_user``), whose streams are interleaved as ``eval --per-user`` does
(``--limit``: the first N of that stream). The first half of the stream is learned, each
message as its user's feedback, which trains the user's model and (``users.train_site``)
the site-wide one, on a SQLite file of its own. The second half, read and analysed once, is
then classified again and again, in rounds: each message as the site-wide model (no user),
then as its own user (the user's model with the site-wide fallback). Time is this process's CPU time
(``time.process_time``; SQLite works in process), so the figures move less with the load of
a shared machine than wall time would; compare them with each other, not with other runs.
With ``--postgres-url`` the model lives in a scratch schema of that PostgreSQL database and
the time is wall time, since the server works in processes of its own.
Reported: the median over rounds of the mean ms a classification, each way, and their ratio.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from app.bootstrap import build_service
from app.evaluation.corpus import load_corpus
from app.evaluation.per_user import interleave, users_by_item
from app.service import Analysed, SpamFilter
from app.settings.schema import Settings
from benchmarks.scratch_schema import scratch_schema
from benchmarks.speed_bench import split_halves

Progress = Callable[[str], None]
Clock = Callable[[], float]
# A message to judge: analysed once, and the user whose mail it is.
Judged = tuple[Analysed, str]


@dataclass(frozen=True, slots=True)
class UserCost:
    """ms a classification as the site-wide model and as the message's user (medians over
    rounds of the mean), the messages learned and classified each round, the users."""

    site_ms: float
    user_ms: float
    learned: int
    classified: int
    users: int

    @property
    def ratio(self) -> float:
        """A user's classification over a site-wide one."""
        return self.user_ms / self.site_ms


def run(
    corpus: Path,
    settings: Settings,
    rounds: int,
    limit: int | None,
    progress: Progress,
    postgres_url: str | None = None,
) -> UserCost:
    """The figures of the module docstring; with ``postgres_url``, on a scratch schema of
    that PostgreSQL database, timed in wall time (the server's work is in its own
    processes)."""
    items = load_corpus(corpus, order="auto", seed=1)
    users = users_by_item(items, corpus)
    split = split_halves(interleave(items, users)[:limit])
    clock = time.process_time if postgres_url is None else time.perf_counter
    with ExitStack() as stack:
        if postgres_url is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="spamfilter-users-"))
            url = f"sqlite:///{Path(folder) / 'users.db'}"
        else:
            url = stack.enter_context(scratch_schema(postgres_url))
        service = build_service(settings.model_copy(update={"database_url": url}))
        try:
            progress(f"learning {len(split.train):,} messages as their users' feedback")
            for user in sorted(set(users.values())):
                batch = [
                    (service.learn_analysis(item.path.read_bytes()), item.label)
                    for item in split.train
                    if users[item.path] == user
                ]
                for _ in service.learn_many(batch, user=user):
                    pass
            tests = [
                (service.analyse(item.path.read_bytes()), users[item.path]) for item in split.test
            ]
            site: list[float] = []
            own: list[float] = []
            for round_number in range(rounds):
                progress(f"round {round_number + 1} of {rounds}")
                site.append(_classify_all(service, tests, False, clock))
                own.append(_classify_all(service, tests, True, clock))
            learned = sum(label.messages for label in service.stats().labels.values())
        finally:
            service.close()
    per = 1000 / max(len(tests), 1)
    return UserCost(
        statistics.median(site) * per,
        statistics.median(own) * per,
        learned,
        len(tests),
        len(set(users.values())),
    )


def _classify_all(
    service: SpamFilter, messages: Sequence[Judged], as_user: bool, clock: Clock
) -> float:
    """Seconds of ``clock`` to classify every message once, as its user or site-wide."""
    started = clock()
    for analysed, user in messages:
        service.classify(analysed, user=user if as_user else None)
    return clock() - started
