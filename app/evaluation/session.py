"""One evaluation run from a plan and a seed, and several seeds one after the other or in
worker processes.

A ``Plan`` is everything but the seed (corpus, protocol, order, settings); it pickles, so a
worker process can run a seed on its own. ``run_fresh`` gives every run a new SQLite database
in a temporary folder of its own, removed afterwards, so runs never share a model.
"""

from __future__ import annotations

import multiprocessing
import tempfile
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.evaluation import report, runner
from app.evaluation.classes import Classes
from app.evaluation.corpus import CorpusItem, effective_order, load_corpus
from app.evaluation.runner import ModelFactory, ProgressFn, RunResult, Summary
from app.settings.schema import Settings

TEMPORARY_DATABASE = "sqlite (temporary file)"


@dataclass(frozen=True, slots=True)
class Plan:
    """What to evaluate, and how, for any seed."""

    corpus: Path
    protocol: str
    folds: int
    order: str
    limit: int | None
    settings: Settings
    skip: int = 0
    from_names: tuple[str, ...] = ()  # file-name prefixes that name a class of their own

    @property
    def effective_order(self) -> str:
        """``index`` or ``shuffle``: what ``auto`` means for this corpus."""
        return effective_order(self.corpus, self.order)


@dataclass(frozen=True, slots=True)
class Done:
    """A finished run: the loop's rows and totals, its metrics, and its result document."""

    result: RunResult
    summary: Summary
    doc: dict[str, Any]


def load_items(plan: Plan, seed: int) -> list[CorpusItem]:
    """The plan's corpus in the order of ``seed`` (raises CorpusError, OSError)."""
    model = plan.settings.model
    classes = Classes(model.classes, model.junk_classes)
    return load_corpus(plan.corpus, plan.order, seed, plan.limit, classes, plan.from_names)


def run(
    plan: Plan,
    seed: int,
    items: Sequence[CorpusItem],
    models: ModelFactory,
    database: str,
    progress: ProgressFn = runner.no_progress,
) -> Done:
    """Evaluate ``items`` on ``models``; the document includes every message's row."""
    started = _now()
    result = runner.after(
        runner.evaluate(plan.protocol, items, models, plan.folds, progress), plan.skip
    )
    summary = runner.summarise(result)
    effective = plan.effective_order
    info = report.RunInfo(
        corpus=plan.corpus.resolve().name,
        order=effective,
        seed=seed if effective == "shuffle" else None,
        limit=plan.limit,
        skip=plan.skip,
        database=database,
        started=started,
        finished=_now(),
    )
    doc = report.document(result, summary, info, plan.settings, plan.corpus)
    return Done(result, summary, doc)


def run_fresh(plan: Plan, seed: int, progress: ProgressFn = runner.no_progress) -> dict[str, Any]:
    """The result document of one seed, on a new temporary SQLite database."""
    items = load_items(plan, seed)
    with tempfile.TemporaryDirectory(prefix="spamfilter-eval-") as workdir:
        models = runner.temporary_sqlite(plan.settings, Path(workdir))
        return run(plan, seed, items, models, TEMPORARY_DATABASE, progress).doc


def run_seeds(
    plan: Plan, seeds: Sequence[int], jobs: int = 1, progress: ProgressFn = runner.no_progress
) -> list[dict[str, Any]]:
    """The result documents of ``seeds``, in that order, each on a fresh database.

    ``jobs`` > 1 runs that many seeds at a time in worker processes (started afresh, not
    forked); progress then counts finished seeds, else messages over all seeds.
    """
    if jobs > 1 and len(seeds) > 1:
        return _in_workers(plan, seeds, min(jobs, len(seeds)), progress)
    docs = []
    for index, seed in enumerate(seeds):
        docs.append(run_fresh(plan, seed, _overall(progress, index, len(seeds), seed)))
    return docs


def _overall(progress: ProgressFn, index: int, count: int, seed: int) -> ProgressFn:
    """Per-seed progress as progress over ``count`` seeds of the same size."""

    def update(done: int, total: int, phase: str) -> None:
        progress(index * total + done, count * total, f"seed {seed} {phase}")

    return update


def _in_workers(
    plan: Plan, seeds: Sequence[int], jobs: int, progress: ProgressFn
) -> list[dict[str, Any]]:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        futures = {pool.submit(run_fresh, plan, seed): seed for seed in seeds}
        progress(0, len(seeds), f"{len(seeds)} seeds, {jobs} at a time")
        for done, future in enumerate(as_completed(futures), start=1):
            if future.exception() is not None:
                for pending in futures:  # the first failure stops the seeds not started yet
                    pending.cancel()
                future.result()
            progress(done, len(seeds), f"seed {futures[future]} done")
        return [future.result() for future in futures]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
