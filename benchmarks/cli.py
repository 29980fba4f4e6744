"""bench: measurements of the real service path, the calls every adapter makes.

``bench hostile`` builds every attack shape of ``benchmarks.hostile`` at 1, 4, 16, 64,
256 KiB ... up to ``--max-size`` (default: the hard cap, ``server.max_message_bytes``) and
times ``SpamFilter.analyse`` (parse + tokenise) and ``classify`` on each, against a model
trained on a fresh SQLite database in a temporary folder (never the configured database).
Every other setting (tokenizer limits, scan bytes, the size cap) comes from the environment,
so an operator measures the limits they run with. With ``--check`` the exit status is 1
when a shape raises, takes ``--max-seconds`` or more, or grows its cost per KiB more than
``--max-flatness`` times: a gate for CI. The timing lives in ``benchmarks.hostile_bench``.

``bench speed`` measures today's figures against the speed issue's targets: bulk learn and
classify on fresh databases (beside bogofilter when it is installed), one message through a
new process, the classified half through one new ``spamfilter classify -q``, and HTTP
classify and feedback under load; ``--json`` / ``--out`` keep a run,
``--compare A.json B.json`` sets two runs side by side. The run is
``benchmarks.speed_run``, the figures ``benchmarks.speed_report``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from app.cli.context import EXIT_PROCESSING, EXIT_USAGE, CliState, build, fail, pass_state
from benchmarks.hostile import SHAPES
from benchmarks.hostile_bench import (
    FLATNESS_FROM,
    HEADER,
    MEMORY_NOTE,
    Bounds,
    Measurement,
    ShapeResult,
    Target,
    format_row,
    format_size,
    format_summary,
    parse_size,
    run_shape,
    sizes_up_to,
    to_json,
    training_messages,
)
from benchmarks.scratch_schema import is_postgres

if TYPE_CHECKING:
    from benchmarks.speed_run import Plan


class Size(click.ParamType[int, Any]):
    """A size in bytes: ``65536``, ``64K``, ``1M`` (powers of 1024)."""

    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            size = parse_size(str(value))
        except ValueError as error:
            self.fail(str(error), param, ctx)
        if size < 1:
            self.fail("a size must be at least 1 byte", param, ctx)
        return size


SKIPPABLE = ("http", "process", "bogofilter")
DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared/corpora/spamassassin"


@click.group()
def bench() -> None:
    """Benchmarks of the real service path."""


@bench.command()
@click.option(
    "--shape",
    "names",
    multiple=True,
    type=click.Choice([shape.name for shape in SHAPES]),
    help="Only this shape (repeatable; default: every shape).",
)
@click.option(
    "--max-size",
    type=Size(),
    help="Largest message, e.g. 1M (default: server.max_message_bytes, 25 MiB).",
)
@click.option(
    "--repeat",
    type=click.IntRange(1, 100),
    default=3,
    show_default=True,
    help="Calls per measurement; the best counts.",
)
@click.option(
    "--max-flatness",
    type=click.FloatRange(min=1.0),
    default=3.0,
    show_default=True,
    help="Bound on the growth of µs/KiB from 16 KiB to the worst larger size.",
)
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="Bound on one analyse call.",
)
@click.option("--no-memory", is_flag=True, help="Skip the tracemalloc run (faster).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--check", is_flag=True, help="Exit 1 when any shape breaks a bound.")
@click.option(
    "--holds",
    is_flag=True,
    help="Instead: connections that hold memory without finishing, against HTTP, spamd and "
    "the milter on loopback, beside honest clients (--check: exit 1 when one fails).",
)
@click.option(
    "--duration",
    type=click.FloatRange(min=1.0),
    default=60.0,
    show_default=True,
    help="With --holds: seconds to run.",
)
@click.option(
    "--holders",
    type=click.IntRange(1, 100),
    default=12,
    show_default=True,
    help="With --holds: connections per attack.",
)
@pass_state
def hostile(
    state: CliState,
    names: tuple[str, ...],
    max_size: int | None,
    repeat: int,
    max_flatness: float,
    max_seconds: float,
    no_memory: bool,
    as_json: bool,
    check: bool,
    holds: bool,
    duration: float,
    holders: int,
) -> None:
    """Time every hostile message shape at growing sizes through analyse and classify; or,
    with --holds, keep connections holding memory beside honest clients."""
    if holds:
        _holds(state, duration, holders, as_json, check)
        return
    cap = state.settings.server.max_message_bytes
    if max_size is not None and max_size > cap:
        raise fail(f"--max-size {format_size(max_size)} is over the cap {cap} bytes", EXIT_USAGE)
    shapes = [shape for shape in SHAPES if not names or shape.name in names]
    sizes = sizes_up_to(max_size or cap)
    bounds = Bounds(max_flatness=max_flatness, max_seconds=max_seconds)
    results: list[ShapeResult] = []
    if not as_json:
        click.echo(
            f"analyse (parse + tokenise) and classify, best of {repeat}; bounds: µs/KiB grows "
            f"at most {max_flatness:g}x from {format_size(FLATNESS_FROM)}, "
            f"every call under {max_seconds:g} s"
        )
        click.echo(MEMORY_NOTE)
        click.echo(HEADER)
    with tempfile.TemporaryDirectory(prefix="spamfilter-bench-") as workdir:
        service = build(
            state.settings.model_copy(
                update={
                    "database_url": f"sqlite:///{Path(workdir) / 'bench.db'}",
                    "training_mode": "everything",
                }
            ),
            recorded=False,
        )
        try:
            for raw, label in training_messages():
                service.learn(raw, label)
            target = Target(service.analyse, service.classify, max_bytes=cap)
            for shape in shapes:
                result = run_shape(
                    shape,
                    sizes,
                    target,
                    repeats=repeat,
                    bounds=bounds,
                    memory=not no_memory,
                    report=None if as_json else _printer(shape.name, bounds),
                )
                results.append(result)
                if not as_json:
                    click.echo(format_summary(result))
        finally:
            service.close()
    _finish(results, bounds, as_json, check)


def _holds(state: CliState, duration: float, holders: int, as_json: bool, check: bool) -> None:
    """``bench hostile --holds``: see ``benchmarks.hold_bench``."""
    import secrets

    from benchmarks.hold_bench import HoldPlan, format_holds, holds_json
    from benchmarks.hold_servers import measure_holds

    token = secrets.token_urlsafe(24)
    server = state.settings.server
    # An eighth of the budget each: a dozen holders would hold it all half again over.
    hold_bytes = min(server.max_buffered_bytes // 8, server.max_message_bytes - 1)
    plan = HoldPlan(duration, holders, hold_bytes, server.max_message_bytes, token)
    with tempfile.TemporaryDirectory(prefix="spamfilter-bench-") as workdir:
        settings = state.settings.model_copy(
            update={
                "database_url": f"sqlite:///{Path(workdir) / 'bench.db'}",
                "training_mode": "everything",
                "api_tokens": [token],
            }
        )
        service = build(settings, recorded=False)
        try:
            for raw, label in training_messages():
                service.learn(raw, label)
            report = measure_holds(service, settings, plan)
        finally:
            service.close()
    if as_json:
        click.echo(json.dumps(holds_json(report, plan), indent=1))
    else:
        click.echo("\n".join(format_holds(report, plan)))
    if check and not report.ok:
        raise fail("honest requests failed while connections held memory", EXIT_PROCESSING)


def _printer(name: str, bounds: Bounds) -> Callable[[Measurement], None]:
    def echo(measurement: Measurement) -> None:
        click.echo(format_row(name, measurement, bounds))

    return echo


def _finish(results: list[ShapeResult], bounds: Bounds, as_json: bool, check: bool) -> None:
    failed = [result.name for result in results if not result.ok]
    if as_json:
        click.echo(json.dumps(to_json(results, bounds), indent=1))
    elif failed:
        click.echo(f"{len(failed)} of {len(results)} shapes out of bounds: {', '.join(failed)}")
    else:
        click.echo(f"all {len(results)} shapes within bounds")
    if check and failed:
        raise fail(f"hostile shapes out of bounds: {', '.join(failed)}", EXIT_PROCESSING)


@bench.command()
@click.option(
    "--corpus",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder with an index file, or ham/ and spam/ folders "
    "(default: ../shared/corpora/spamassassin beside the project, if there).",
)
@click.option("--seed", type=int, default=1, show_default=True, help="Shuffle seed.")
@click.option("--limit", type=click.IntRange(min=2), help="Only the first N of the order.")
@click.option(
    "--database-url",
    metavar="URL",
    help="Also measure on this PostgreSQL database, in a schema of its own that is dropped "
    "afterwards (default: the group's --database-url when it is postgresql://).",
)
@click.option(
    "--skip",
    multiple=True,
    type=click.Choice(SKIPPABLE),
    help="Leave out a slow part (repeatable).",
)
@click.option(
    "--runs",
    type=click.IntRange(1, 1000),
    default=20,
    show_default=True,
    help="New processes per command.",
)
@click.option("--connections", type=click.IntRange(1, 1024), default=16, show_default=True)
@click.option(
    "--duration",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Seconds of HTTP load per endpoint.",
)
@click.option(
    "--requests",
    "max_requests",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="At most this many requests per endpoint.",
)
@click.option(
    "--warmup",
    type=click.IntRange(min=0),
    default=200,
    show_default=True,
    help="Classify requests sent to a new server before measuring.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    multiple=True,
    help="Server worker processes (repeatable; default: 1 and 2).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole result as JSON.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the JSON result to this file.",
)
@click.option(
    "--compare",
    nargs=2,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Compare two saved results (A.json B.json) instead of measuring.",
)
@pass_state
def speed(state: CliState, /, **options: Any) -> None:
    """Speed against the targets: bulk learn/classify beside bogofilter, new processes, HTTP."""
    from app.evaluation.corpus import CorpusError
    from benchmarks.bench_servers import BenchError
    from benchmarks.speed_report import table
    from benchmarks.speed_run import run as run_speed

    if options["compare"] is not None:
        path_a, path_b = options["compare"]
        _compare_speed(path_a, path_b, options["as_json"])
        return
    plan = _speed_plan(state, options)
    quiet = options["as_json"]
    try:
        doc = run_speed(plan, lambda line: None if quiet else click.echo(line, err=True))
    except (CorpusError, BenchError) as error:
        raise fail(str(error), EXIT_USAGE) from error
    text = json.dumps(doc, indent=1)
    if options["out"] is not None:
        options["out"].write_text(text + "\n", encoding="utf-8")
    click.echo(text if options["as_json"] else table(doc))


def _speed_plan(state: CliState, options: dict[str, Any]) -> Plan:
    from benchmarks.speed_run import Plan

    corpus = options["corpus"] or (DEFAULT_CORPUS if DEFAULT_CORPUS.is_dir() else None)
    if corpus is None:
        raise fail("--corpus is required (no ../shared/corpora/spamassassin)", EXIT_USAGE)
    url = options["database_url"]
    if url is None and state.database_url_given and is_postgres(state.settings.database_url):
        url = state.settings.database_url
    if url is not None and not is_postgres(url):
        raise fail(
            "--database-url must be postgresql://...; SQLite is always measured "
            "on a temporary file",
            EXIT_USAGE,
        )
    return Plan(
        corpus=corpus,
        settings=state.settings,
        config=state.config_file,
        seed=options["seed"],
        limit=options["limit"],
        postgres_url=url,
        skip=frozenset(options["skip"]),
        runs=options["runs"],
        connections=options["connections"],
        duration=options["duration"],
        max_requests=options["max_requests"],
        warmup=options["warmup"],
        workers=tuple(options["workers"]) or (1, 2),
    )


def _compare_speed(path_a: Path, path_b: Path, as_json: bool) -> None:
    from benchmarks.speed_report import compare, compare_json

    try:
        docs = [json.loads(path.read_text(encoding="utf-8")) for path in (path_a, path_b)]
        if any(doc.get("bench") != "speed" for doc in docs):
            raise ValueError("not a bench speed result")
    except ValueError as error:
        raise fail(f"compare: {error}", EXIT_USAGE) from error
    if as_json:
        click.echo(json.dumps(compare_json(*docs), indent=1))
    else:
        click.echo(compare(*docs))


@bench.command()
@click.option(
    "--corpus",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder with ham/ and spam/ folders "
    "(default: ../shared/corpora/spamassassin beside the project, if there).",
)
@click.option("--limit", type=click.IntRange(min=4), default=600, show_default=True)
@click.option(
    "--repeat",
    type=click.IntRange(1, 100),
    default=5,
    show_default=True,
    help="Timed passes over the messages per process; the best counts.",
)
@click.option(
    "--rounds",
    type=click.IntRange(1, 100),
    default=3,
    show_default=True,
    help="Rounds of processes (all pure, each module alone compiled, as built); the best counts.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def compiled(corpus: Path | None, limit: int, repeat: int, rounds: int, as_json: bool) -> None:
    """What each module compiled by mypyc gains over its pure source, and a whole classify."""
    from app.compiled import CANDIDATES, is_compiled
    from benchmarks.compiled_bench import Plan, measure, table

    folder = corpus or (DEFAULT_CORPUS if DEFAULT_CORPUS.is_dir() else None)
    if folder is None:
        raise fail("--corpus is required (no ../shared/corpora/spamassassin)", EXIT_USAGE)
    built = [module for module in CANDIDATES if is_compiled(module)]
    if not built:
        raise fail(
            "this build is pure Python: reinstall with a C compiler "
            "(SPAMFILTER_COMPILE=candidates pip install -e . measures every candidate)",
            EXIT_USAGE,
        )
    plan = Plan(folder, limit, repeat, rounds)
    doc = measure(plan, built, lambda line: None if as_json else click.echo(line, err=True))
    click.echo(json.dumps(doc, indent=1) if as_json else table(doc))


@bench.command("classes")
@click.option(
    "--corpus",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    required=True,
    help="Folder with an index file, or ham/ and spam/ folders.",
)
@click.option(
    "--classes",
    "counts",
    type=click.IntRange(2, 20),
    multiple=True,
    help="Sites with this many classes (repeatable; default: 2 and 10).",
)
@click.option("--rounds", type=click.IntRange(1, 100), default=5, show_default=True)
@click.option("--limit", type=click.IntRange(min=2), help="Only the first N messages.")
@pass_state
def classes_command(
    state: CliState, corpus: Path, counts: tuple[int, ...], rounds: int, limit: int | None
) -> None:
    """What declaring more classes costs a classification (SQLite, back to back)."""
    from benchmarks.classes_bench import run as run_classes

    costs = run_classes(
        corpus, state.settings, counts or (2, 10), rounds, limit, lambda s: click.echo(s, err=True)
    )
    click.echo(f"{'classes':>8}{'ms/classify':>14}{'vs first':>10}{'database':>14}{'learned':>10}")
    for cost in costs:
        ratio = cost.ms_per_classify / costs[0].ms_per_classify
        size = f"{cost.database_bytes / 2**20:.1f} MiB"
        click.echo(
            f"{cost.classes:>8}{cost.ms_per_classify:>14.3f}{ratio:>9.2f}x{size:>14}"
            f"{cost.learned:>10,}"
        )
    click.echo(f"classified {costs[0].classified:,} messages each round")


@bench.command("users")
@click.option(
    "--corpus",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    required=True,
    help="Folder with a folder of mail per user (../shared/corpora/enron).",
)
@click.option("--rounds", type=click.IntRange(1, 100), default=5, show_default=True)
@click.option(
    "--limit", type=click.IntRange(min=4), help="Only the first N of the users' interleaved mail."
)
@click.option(
    "--postgres-url",
    help="Measure on PostgreSQL: a scratch schema of this database (wall time), not SQLite.",
)
@pass_state
def users_command(
    state: CliState, corpus: Path, rounds: int, limit: int | None, postgres_url: str | None
) -> None:
    """What a user's classification costs beside a site-wide one (SQLite: CPU time)."""
    from benchmarks.users_bench import run as run_users

    def progress(line: str) -> None:
        click.echo(line, err=True)

    try:
        cost = run_users(corpus, state.settings, rounds, limit, progress, postgres_url)
    except ValueError as error:  # not a folder per user
        raise fail(str(error), EXIT_USAGE) from error
    click.echo(f"{'judged as':<12}{'ms/classify':>12}")
    click.echo(f"{'site-wide':<12}{cost.site_ms:>12.3f}")
    click.echo(f"{'its user':<12}{cost.user_ms:>12.3f}")
    click.echo(f"a user's classify costs {cost.ratio:.2f}x a site-wide one")
    click.echo(
        f"{cost.users} users learned {cost.learned:,} messages; "
        f"classified {cost.classified:,} each round each way"
    )
