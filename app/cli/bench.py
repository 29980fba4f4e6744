"""bench: measurements of the real service path, the calls every adapter makes.

``bench hostile`` builds every attack shape of ``app.evaluation.hostile`` at 1, 4, 16, 64,
256 KiB ... up to ``--max-size`` (default: the hard cap, ``server.max_message_bytes``) and
times ``SpamFilter.analyse`` (parse + tokenise) and ``classify`` on each, against a model
trained on a fresh SQLite database in a temporary folder (never the configured database).
Every other setting (tokenizer limits, scan bytes, the size cap) comes from the environment,
so an operator measures the limits they run with. With ``--check`` the exit status is 1
when a shape raises, takes ``--max-seconds`` or more, or grows its cost per KiB more than
``--max-flatness`` times: a gate for CI. The timing lives in ``app.evaluation.hostile_bench``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from app.cli.context import EXIT_PROCESSING, EXIT_USAGE, CliState, build, fail, pass_state
from app.evaluation.hostile import SHAPES
from app.evaluation.hostile_bench import (
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
) -> None:
    """Time every hostile message shape at growing sizes through analyse and classify."""
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
            )
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
