"""export, import and backup: the learned data out of and into a database, and a live copy.

The file format is documented in ``app.service.transfer_format``. A summary goes to stderr
(stdout may be the export itself). A file that cannot be imported, an import or backup that
would lose or double data, and a backup of PostgreSQL exit 1 with one line naming the
problem (the group maps the service's errors), and leave the database unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import click

from app.cli.atomic import written
from app.cli.context import CliState, build, pass_state
from app.cli.progress import Bar, progress_bar, wanted
from app.service.transfer import ImportMode
from app.service.transfer_format import MAX_LINE, TextSink

_quiet = click.option("--quiet", "-q", is_flag=True, help="Do not show a progress bar.")


class _Counted:
    """A text sink that moves a progress bar on by one for every line written."""

    def __init__(self, out: TextSink, bar: Bar) -> None:
        self._out = out
        self._bar = bar

    def write(self, text: str) -> int:
        self._bar.advance(text.count("\n"))
        return self._out.write(text)


def _read(stream: IO[str], bar: Bar) -> Iterator[str]:
    """The lines of ``stream``, none read past one character over the format's longest line
    (the reader refuses such a line at once), moving the bar on by each line's UTF-8 bytes."""
    while line := stream.readline(MAX_LINE + 1):
        bar.advance(len(line.encode("utf-8", "surrogateescape")))
        yield line


@click.command("export")
@click.option("--user", "-u", metavar="USER", help="Export only this user's model.")
@click.option("--site", "site_only", is_flag=True, help="Export only the site-wide model.")
@click.option(
    "--output",
    "-o",
    default="-",
    show_default=True,
    metavar="FILE",
    help="Where to write (- for stdout). A file appears only once complete.",
)
@_quiet
@pass_state
def export_command(
    state: CliState, user: str | None, site_only: bool, output: str, quiet: bool
) -> None:
    """Write the learned models to a portable text file: the site-wide model and every
    user's (the default), one user's (--user), or the site-wide one only (--site)."""
    if user is not None and site_only:
        raise click.UsageError("--user and --site exclude each other")
    service = build(state.settings)
    started = time.perf_counter()
    show = wanted(quiet, stdout_busy=output == "-")
    with (
        written(output) as out,
        progress_bar(None, "export", show, unit="rows") as bar,
    ):
        counts = service.export(_Counted(out, bar), user=user, site_only=site_only)
    click.echo(
        f"exported {counts.scopes} model(s): {counts.tokens:,} tokens, {counts.learned:,} "
        f"learned messages in {time.perf_counter() - started:.1f} s",
        err=True,
    )


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--merge", "mode", flag_value="merge", help="Add the file's counts to the models it names."
)
@click.option("--replace", "mode", flag_value="replace", help="Replace the models the file names.")
@click.option("--user", "-u", metavar="USER", help="Import a one-model file as this user's.")
@click.option(
    "--force",
    is_flag=True,
    help="Merge even when learned messages of the file are in the database already "
    "(their counts are then in twice).",
)
@_quiet
@pass_state
def import_command(
    state: CliState, file: str, mode: str | None, user: str | None, force: bool, quiet: bool
) -> None:
    """Read an export file (- for stdin) into the database, all or nothing.

    Without --merge or --replace, each model the file holds must be empty in the database.
    Models the file does not name are left alone.
    """
    chosen: ImportMode = "merge" if mode == "merge" else "replace" if mode == "replace" else "new"
    service = build(state.settings)
    started = time.perf_counter()
    size = Path(file).stat().st_size if file != "-" and Path(file).is_file() else None
    with (
        click.open_file(file, "r", encoding="utf-8") as lines,
        progress_bar(size, "import", wanted(quiet), unit="B") as bar,
    ):
        result = service.import_models(_read(lines, bar), chosen, user=user, force=force)
    seconds = time.perf_counter() - started
    records = result.records
    click.echo(
        f"imported {records.scopes} model(s) ({result.mode}): {records.tokens:,} tokens, "
        f"{records.learned:,} learned messages in {seconds:.1f} s",
        err=True,
    )
    for name, vocabulary in result.vocabulary.items():
        click.echo(f"{name}: vocabulary {vocabulary:,} distinct tokens", err=True)
    if result.already_held:
        click.echo(
            f"{result.already_held} learned message(s) were in the database already: "
            "their counts are now in twice",
            err=True,
        )


@click.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite PATH if it exists.")
@pass_state
def backup(state: CliState, path: Path, force: bool) -> None:
    """Copy the live SQLite database to PATH, consistently, while it is in use.

    PostgreSQL: use 'pg_dump -Fc' (or 'spamfilter export').
    """
    service = build(state.settings)
    started = time.perf_counter()
    size = service.backup(path, overwrite=force)
    click.echo(f"backed up to {path}: {size:,} bytes in {time.perf_counter() - started:.1f} s")
