"""eval: measure the real service on a labelled corpus, comparable with the peers' harness.

By default every run or fold gets a fresh SQLite database in a temporary folder, whatever
SPAMFILTER_DATABASE_URL says; ``--database-url`` (here or before the command) evaluates on
that database instead, and it must hold no model yet. The loops live in
``app.evaluation.runner``, the output formats in ``app.evaluation.report``.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from app.cli.context import EXIT_USAGE, CliState, build, fail, pass_state
from app.cli.progress import Bar, progress_bar, wanted
from app.evaluation import report, runner
from app.evaluation.corpus import INDEX_NAME, ORDERS, CorpusError, CorpusItem, load_corpus
from app.evaluation.runner import CV, PROTOCOLS, ModelFactory, ProgressFn, RunResult, Summary
from app.settings import Settings

_file = click.Path(dir_okay=False, writable=True, path_type=Path)


@click.command("eval")
@click.option(
    "--corpus",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder with an index file, or ham/ and spam/ folders.",
)
@click.option("--protocol", type=click.Choice(PROTOCOLS), default="online", show_default=True)
@click.option("--folds", type=click.IntRange(min=2), default=10, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True, help="Shuffle seed.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N of the order.")
@click.option("--order", type=click.Choice(ORDERS), default="auto", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--out", type=_file, help="Write the JSON result to this file.")
@click.option("--scores", type=_file, help="Write per-message scores (TSV) to this file.")
@click.option("--roc-plot", type=_file, help="Draw the ROC curve to this PNG file.")
@click.option("--database-url", help="Evaluate on this (empty) database, not a temporary one.")
@click.option("--quiet", "-q", is_flag=True, help="Do not show a progress bar.")
@pass_state
def evaluate(
    state: CliState,
    corpus: Path,
    protocol: str,
    folds: int,
    seed: int,
    limit: int | None,
    order: str,
    as_json: bool,
    out: Path | None,
    scores: Path | None,
    roc_plot: Path | None,
    database_url: str | None,
    quiet: bool,
) -> None:
    """Run the service over a corpus: online (TREC immediate feedback) or k-fold cv.

    Prints the peers' metrics (1-ROCA% from the log-odds; hm%, sm%, lam% from the spam
    verdicts), the unsure share, milliseconds per classify and learn call, and the settings.
    """
    if roc_plot is not None and importlib.util.find_spec("matplotlib") is None:
        raise fail("--roc-plot needs matplotlib (the 'plot' extra)", EXIT_USAGE)
    items = _load(corpus, order, seed, limit)
    if protocol == CV and folds > len(items):
        raise fail(f"--folds {folds} needs at least {folds} messages, got {len(items)}", EXIT_USAGE)
    settings = state.settings
    url = database_url or (settings.database_url if state.database_url_given else None)
    started = _now()
    with _models(settings, url) as (models, database):
        total = len(items) * (folds if protocol == CV else 1)
        with progress_bar(total, protocol, wanted(quiet)) as bar:
            result = runner.evaluate(protocol, items, models, folds, _progress(bar))
    summary = runner.summarise(result, settings.decision.spam_log_odds)
    effective = _effective_order(corpus, order)
    info = report.RunInfo(
        corpus=corpus.resolve().name,
        order=effective,
        seed=seed if effective == "shuffle" else None,
        limit=limit,
        database=database,
        started=started,
        finished=_now(),
    )
    doc = report.document(result, summary, info, settings)
    text = json.dumps(doc, indent=1)
    click.echo(text if as_json else report.table(doc))
    _write_files(result, summary, doc, corpus, out, scores, roc_plot)


def _write_files(
    result: RunResult,
    summary: Summary,
    doc: dict[str, Any],
    corpus: Path,
    out: Path | None,
    scores: Path | None,
    roc_plot: Path | None,
) -> None:
    if out is not None:
        out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    if scores is not None:
        report.write_scores(result, corpus, scores)
    if roc_plot is not None:
        _plot(result, summary, doc, roc_plot)


def _load(corpus: Path, order: str, seed: int, limit: int | None) -> list[CorpusItem]:
    try:
        items = load_corpus(corpus, order=order, seed=seed, limit=limit)
    except (CorpusError, OSError) as error:
        raise fail(f"corpus: {error}", EXIT_USAGE) from error
    if not items:
        raise fail(f"corpus: no messages in {corpus}", EXIT_USAGE)
    return items


@contextmanager
def _models(settings: Settings, url: str | None) -> Iterator[tuple[ModelFactory, str]]:
    """The model factory and a description of where the models live."""
    if url is not None:
        chosen = settings.model_copy(update={"database_url": url})
        service = build(chosen)
        try:
            runner.refuse_non_empty(service)
            dialect = service.database
        finally:
            service.close()
        yield runner.existing_database(chosen), f"{dialect} (--database-url)"
        return
    with tempfile.TemporaryDirectory(prefix="spamfilter-eval-") as workdir:
        yield runner.temporary_sqlite(settings, Path(workdir)), "sqlite (temporary file)"


def _progress(bar: Bar) -> ProgressFn:
    def update(done: int, total: int, phase: str) -> None:
        bar.update(done, total, phase)

    return update


def _effective_order(corpus: Path, order: str) -> str:
    if order == "auto":
        return "index" if (corpus / INDEX_NAME).is_file() else "shuffle"
    return order


def _plot(result: RunResult, summary: Summary, doc: dict[str, Any], path: Path) -> None:
    from app.evaluation.plot import plot_roc

    metrics = summary.metrics
    plot_roc(
        [row.item.label for row in result.rows],
        [row.log_odds for row in result.rows],
        path,
        f"{doc['corpus']} {result.protocol}: 1-ROCA% {metrics.roca_1_pct:.3f}",
        operating_point=(metrics.hm_pct, metrics.sm_pct),
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
