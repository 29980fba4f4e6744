"""eval: measure the real service on a labelled corpus, comparable with the peers' harness.

By default every run or fold gets a fresh SQLite database in a temporary folder, whatever
SPAMFILTER_DATABASE_URL says; ``--database-url`` (here or before the command) evaluates on
that database instead, and it must hold no model yet. ``--seeds 1-5`` repeats the run once
per shuffle seed, each on a database of its own, and adds the mean and standard deviation;
``--compare A.json B.json`` reads two ``--out`` files and tests B - A with a paired
bootstrap. The loops live in ``app.evaluation.runner`` and ``app.evaluation.session``, the
output formats in ``app.evaluation.report``, ``seeds`` and ``compare``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from app.cli.context import EXIT_USAGE, CliState, build, fail, pass_state
from app.cli.progress import Bar, progress_bar, wanted
from app.evaluation import compare, decisive, per_user, report, runner, seeds, session
from app.evaluation.classes import parse_class_names
from app.evaluation.corpus import ORDERS, CorpusError, CorpusItem
from app.evaluation.resultfile import ResultFileError, dumps, load_runs, scored_messages
from app.evaluation.runner import CV, PROTOCOLS, ModelFactory, ProgressFn
from app.evaluation.session import Done, Plan
from app.settings.schema import Settings

_file = click.Path(dir_okay=False, writable=True, path_type=Path)
_result_file = click.Path(exists=True, dir_okay=False, path_type=Path)
DEFAULT_SEED = 1
COMPARE_OPTIONS = {"compare", "resamples", "bootstrap_seed", "as_json", "out", "quiet", "decisive"}


class SeedList(click.ParamType[list[int], Any]):
    """``--seeds``: ranges and single seeds, ``1-5`` or ``1,3,7``."""

    name = "SEEDS"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> list[int]:
        if isinstance(value, list):
            return value
        try:
            return seeds.parse_seeds(str(value))
        except seeds.SeedsError as error:
            self.fail(str(error), param, ctx)


class ClassNames(click.ParamType[tuple[str, ...], Any]):
    """``--classes-from-names``: ``easy_ham,hard_ham``."""

    name = "CLASSES"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, ...]:
        if isinstance(value, tuple):
            return value
        if not value:
            return ()
        try:
            return parse_class_names(str(value))
        except ValueError as error:
            self.fail(str(error), param, ctx)


@dataclass(frozen=True, slots=True)
class _Options:
    corpus: Path | None
    protocol: str
    folds: int
    seed: int | None
    seeds: list[int] | None
    jobs: int
    limit: int | None
    skip: int
    order: str
    as_json: bool
    out: Path | None
    scores: Path | None
    roc_plot: Path | None
    database_url: str | None
    compare: tuple[Path, Path] | None
    resamples: int
    bootstrap_seed: int
    per_user: bool
    classes_from_names: tuple[str, ...]
    decisive: int | None
    quiet: bool


@click.command("eval")
@click.option(
    "--corpus",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder with an index file, or ham/ and spam/ folders (required unless --compare).",
)
@click.option("--protocol", type=click.Choice(PROTOCOLS), default="online", show_default=True)
@click.option("--folds", type=click.IntRange(min=2), default=10, show_default=True)
@click.option("--seed", type=int, help=f"Shuffle seed.  [default: {DEFAULT_SEED}]")
@click.option(
    "--seeds",
    type=SeedList(),
    help="Run once per shuffle seed (1-5 or 1,3,7), each on a new temporary database, and "
    "add the mean and standard deviation.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With --seeds: run this many seeds at a time, each in a process of its own.",
)
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N of the order.")
@click.option(
    "--skip",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Online: learn the first N messages as usual, but judge only the messages after "
    "them (learn a month, judge the next).",
)
@click.option("--order", type=click.Choice(ORDERS), default="auto", show_default=True)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the result as JSON (what --out writes)."
)
@click.option(
    "--out", type=_file, help="Write the JSON result, with every message's score, to this file."
)
@click.option("--scores", type=_file, help="Write per-message scores (TSV) to this file.")
@click.option("--roc-plot", type=_file, help="Draw the ROC curve to this PNG file.")
@click.option("--database-url", help="Evaluate on this (empty) database, not a temporary one.")
@click.option(
    "--compare",
    nargs=2,
    type=_result_file,
    metavar="A.json B.json",
    help="Compare two --out files message by message (paired bootstrap); runs nothing.",
)
@click.option(
    "--bootstrap",
    "resamples",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="With --compare: bootstrap resamples.",
)
@click.option(
    "--bootstrap-seed", type=int, default=1, show_default=True, help="With --compare: RNG seed."
)
@click.option(
    "--per-user",
    is_flag=True,
    help="Compare one site-wide model, separate models per user and users with the "
    "site-wide fallback; each first folder under the corpus is one user's mail.",
)
@click.option(
    "--classes-from-names",
    type=ClassNames(),
    default="",
    help="Comma-separated class names: a message whose file name starts with one of them is "
    "of that class (easy_ham,hard_ham: the SpamAssassin corpus as three classes). A class "
    "the model does not declare is learned as its folder's ham or spam.",
)
@click.option(
    "--decisive",
    type=click.IntRange(min=1),
    metavar="N",
    help="Also list the N messages with the largest share of 1-ROCA% (mislabelled mail "
    "shows up here); with --compare, of each file.",
)
@click.option("--quiet", "-q", is_flag=True, help="Do not show a progress bar.")
@pass_state
def evaluate(state: CliState, /, **options: Any) -> None:
    """Run the service over a corpus: online (TREC immediate feedback) or k-fold cv.

    Prints the peers' metrics (1-ROCA% from the log-odds; hm%, sm%, lam% from the spam
    verdicts), the unsure share, milliseconds per classify and learn call, how many learn
    calls changed the model (learned) or were left out by thick training (skipped), and the
    settings. With --seeds, one line per seed plus their mean and standard deviation.
    With --compare A.json B.json, 1-ROCA%, hm% and sm% of both and B - A with a 95% paired
    bootstrap interval, per seed found in both files.
    """
    opts = _Options(**options)
    _check_combination(click.get_current_context(), opts)
    if opts.compare:
        _compare(opts)
        return
    plan = _plan(state.settings, opts)
    if opts.per_user:
        _run_per_user(plan, opts)
    elif opts.seeds:
        _run_seeds(state, plan, opts)
    else:
        _run_one(state, plan, opts)


def _check_combination(ctx: click.Context, opts: _Options) -> None:
    """Refuse options that do not apply together, naming them."""
    given = {
        name
        for name in ctx.params
        if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)
    }
    _check_decisive(opts)
    if opts.compare:
        extra = sorted(given - COMPARE_OPTIONS)
        if extra:
            message = f"--compare reads result files and runs nothing; drop {_flags(ctx, extra)}"
            raise fail(message, EXIT_USAGE)
        return
    if opts.corpus is None:
        raise fail("--corpus is required (or --compare A.json B.json)", EXIT_USAGE)
    if opts.skip and opts.protocol != "online":
        raise fail("--skip goes with --protocol online", EXIT_USAGE)
    if opts.skip and opts.limit is not None and opts.skip >= opts.limit:
        raise fail(
            f"--skip {opts.skip} leaves nothing of --limit {opts.limit} to judge", EXIT_USAGE
        )
    if given & {"resamples", "bootstrap_seed"}:
        raise fail("--bootstrap and --bootstrap-seed go with --compare", EXIT_USAGE)
    if opts.seeds is None and "jobs" in given:
        raise fail("--jobs goes with --seeds", EXIT_USAGE)
    if opts.seeds is not None:
        _check_seeds(ctx, opts, given)
    if opts.per_user:
        single = sorted(given & {"protocol", "folds", "skip", "scores", "roc_plot", "database_url"})
        if single or opts.seeds is not None:
            names = _flags(ctx, single) if single else "--seeds"
            raise fail(f"--per-user runs online on temporary databases; drop {names}", EXIT_USAGE)


def _check_decisive(opts: _Options) -> None:
    if opts.decisive is None:
        return
    if opts.as_json:
        raise fail("--decisive prints a table; drop --json (--out keeps every score)", EXIT_USAGE)
    if opts.seeds is not None or opts.per_user:
        raise fail("--decisive goes with one run or with --compare", EXIT_USAGE)


def _check_seeds(ctx: click.Context, opts: _Options, given: set[str]) -> None:
    if opts.seed is not None:
        raise fail("--seeds and --seed are mutually exclusive", EXIT_USAGE)
    single = sorted(given & {"scores", "roc_plot", "database_url"})
    if single:
        raise fail(
            f"{_flags(ctx, single)}: one run only; with --seeds, --out holds every "
            "message's score and each seed gets a new temporary database",
            EXIT_USAGE,
        )


def _flags(ctx: click.Context, names: list[str]) -> str:
    by_name = {param.name: param for param in ctx.command.params}
    return ", ".join(by_name[name].opts[0] for name in names)


def _plan(settings: Settings, opts: _Options) -> Plan:
    assert opts.corpus is not None  # checked by _check_combination
    if opts.roc_plot is not None and importlib.util.find_spec("matplotlib") is None:
        raise fail(
            "--roc-plot needs matplotlib (the 'eval' extra: pip install -e '.[eval]')", EXIT_USAGE
        )
    plan = Plan(
        opts.corpus,
        opts.protocol,
        opts.folds,
        opts.order,
        opts.limit,
        settings,
        opts.skip,
        opts.classes_from_names,
    )
    if opts.seeds and plan.effective_order != "shuffle":
        raise fail(
            f"--seeds shuffles the corpus, but {opts.corpus} is read in index order; "
            "add --order shuffle",
            EXIT_USAGE,
        )
    return plan


def _load(plan: Plan, seed: int) -> list[CorpusItem]:
    try:
        items = session.load_items(plan, seed)
    except (CorpusError, OSError) as error:
        raise fail(f"corpus: {error}", EXIT_USAGE) from error
    if not items:
        raise fail(f"corpus: no messages in {plan.corpus}", EXIT_USAGE)
    if plan.protocol == CV and plan.folds > len(items):
        raise fail(
            f"--folds {plan.folds} needs at least {plan.folds} messages, got {len(items)}",
            EXIT_USAGE,
        )
    if plan.skip >= len(items):
        raise fail(
            f"--skip {plan.skip} leaves none of the {len(items)} messages to judge", EXIT_USAGE
        )
    return items


def _run_one(state: CliState, plan: Plan, opts: _Options) -> None:
    seed = DEFAULT_SEED if opts.seed is None else opts.seed
    items = _load(plan, seed)
    settings = plan.settings
    url = opts.database_url or (settings.database_url if state.database_url_given else None)
    with _models(settings, url) as (models, database):
        total = len(items) * (plan.folds if plan.protocol == CV else 1)
        with progress_bar(total, plan.protocol, wanted(opts.quiet)) as bar:
            done = session.run(plan, seed, items, models, database, _progress(bar))
    click.echo(dumps(done.doc) if opts.as_json else report.table(done.doc))
    if opts.decisive is not None:
        _echo_decisive(done.doc, "this run", opts.decisive)
    _write_files(done, opts)


def _echo_decisive(run: dict[str, Any], title: str, count: int) -> None:
    try:
        messages = scored_messages(run, title)
    except ResultFileError as error:
        raise fail(f"--decisive: {error}", EXIT_USAGE) from error
    click.echo(decisive.table(title, decisive.decisive(messages, count)))


def _run_seeds(state: CliState, plan: Plan, opts: _Options) -> None:
    assert opts.seeds is not None
    if state.database_url_given:
        raise fail(
            "--seeds gives each seed a new temporary database; drop --database-url", EXIT_USAGE
        )
    items = _load(plan, opts.seeds[0])
    total = len(items) * (plan.folds if plan.protocol == CV else 1) * len(opts.seeds)
    with progress_bar(total, plan.protocol, wanted(opts.quiet)) as bar:
        runs = session.run_seeds(plan, opts.seeds, opts.jobs, _progress(bar))
    doc = seeds.document(runs, min(opts.jobs, len(opts.seeds)))
    click.echo(dumps(doc) if opts.as_json else seeds.table(doc))
    if opts.out is not None:
        opts.out.write_text(dumps(doc) + "\n", encoding="utf-8")


def _run_per_user(plan: Plan, opts: _Options) -> None:
    seed = DEFAULT_SEED if opts.seed is None else opts.seed
    items = _load(dataclasses.replace(plan, limit=None), seed)
    corpus = plan.corpus.resolve().name
    with tempfile.TemporaryDirectory(prefix="spamfilter-eval-") as workdir:

        def models(arm: str, settings: Settings) -> ModelFactory:
            return runner.temporary_sqlite(settings, Path(workdir) / arm)

        total = len(items) if plan.limit is None else min(plan.limit, len(items))
        with progress_bar(total * len(per_user.ARMS), "per-user", wanted(opts.quiet)) as bar:
            try:
                arms = per_user.run_arms(
                    items, plan.corpus, plan.settings, models, _progress(bar), plan.limit
                )
            except ValueError as error:
                raise fail(f"corpus: {error}", EXIT_USAGE) from error
    doc = per_user.document(arms, corpus, plan.corpus, seed=seed, limit=plan.limit)
    click.echo(dumps(doc) if opts.as_json else per_user.table(arms, corpus))
    if opts.out is not None:
        opts.out.write_text(dumps(doc) + "\n", encoding="utf-8")


def _compare(opts: _Options) -> None:
    assert opts.compare is not None
    path_a, path_b = opts.compare
    try:
        result = compare.compare_files(path_a, path_b, opts.resamples, opts.bootstrap_seed)
    except ResultFileError as error:
        raise fail(f"compare: {error}", EXIT_USAGE) from error
    doc = compare.document(result)
    click.echo(dumps(doc) if opts.as_json else compare.text(result))
    if opts.decisive is not None:
        for name, path in zip("AB", opts.compare, strict=True):
            for run in load_runs(path):
                seed = run.get("seed")
                title = f"{name} {path.name}" + ("" if seed is None else f", seed {seed}")
                title += f", arm {run['arm']}" if "arm" in run else ""
                _echo_decisive(run, title, opts.decisive)
    if opts.out is not None:
        opts.out.write_text(dumps(doc) + "\n", encoding="utf-8")


def _write_files(done: Done, opts: _Options) -> None:
    if opts.out is not None:
        opts.out.write_text(dumps(done.doc) + "\n", encoding="utf-8")
    if opts.scores is not None:
        assert opts.corpus is not None
        report.write_scores(done.result, opts.corpus, opts.scores)
    if opts.roc_plot is not None:
        _plot(done, opts.roc_plot)


@contextmanager
def _models(settings: Settings, url: str | None) -> Iterator[tuple[ModelFactory, str]]:
    """The model factory and a description of where the models live."""
    if url is not None:
        chosen = settings.model_copy(update={"database_url": url})
        service = build(chosen, recorded=False)
        try:
            runner.refuse_non_empty(service)
            dialect = service.database
        finally:
            service.close()
        yield runner.existing_database(chosen), f"{dialect} (--database-url)"
        return
    with tempfile.TemporaryDirectory(prefix="spamfilter-eval-") as workdir:
        yield runner.temporary_sqlite(settings, Path(workdir)), session.TEMPORARY_DATABASE


def _progress(bar: Bar) -> ProgressFn:
    def update(done: int, total: int, phase: str) -> None:
        bar.update(done, total, phase)

    return update


def _plot(done: Done, path: Path) -> None:
    from app.evaluation.plot import plot_roc

    metrics = done.summary.metrics
    plot_roc(
        [row.item.label for row in done.result.rows],
        [row.log_odds for row in done.result.rows],
        path,
        f"{done.doc['corpus']} {done.result.protocol}: 1-ROCA% {metrics.roca_1_pct:.3f}",
        operating_point=(metrics.hm_pct, metrics.sm_pct),
    )
