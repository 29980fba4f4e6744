"""learn, classify and forget: the commands that take messages found under PATH arguments.

Each is one service call per message (learn: one per batch, ``SpamFilter.learn_batch``
messages), run by ``app.cli.bulk``: a message that fails is reported and counted, and an
error of the whole run stops it (see there).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, BinaryIO

import click

from app.cli.bulk import Batches, Task, run_task
from app.cli.context import CliState, F, build, pass_state, user_option
from app.cli.mailboxes import Found, find_messages
from app.cli.progress import wanted
from app.cli.verdicts import classification_json, classification_line, show_classification
from app.domain.labels import LABELS, parse_class

if TYPE_CHECKING:
    from app.service import Analysed, SpamFilter

_paths = click.argument(
    "paths", nargs=-1, required=True, type=click.Path(exists=True, allow_dash=True)
)
_quiet = click.option("--quiet", "-q", is_flag=True, help="Do not show a progress bar.")
_recursive = click.option(
    "--recursive",
    "-r",
    is_flag=True,
    help="Walk the Maildir++ subfolders (.Sent, .Archive...) of a Maildir too. "
    "Junk and trash folders are skipped unless named.",
)


def _jobs(doing: str) -> Callable[[F], F]:
    """``--jobs``: processes that read the next messages while this one is ``doing``."""
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(0, 64),
        help=f"Processes that read the next messages while this one {doing} (default: 1 "
        "for 500 messages or more when there is a second core; 0: none). The result is the "
        "same.",
    )


_user = user_option(
    "Whose model: a mail user (address or login). Default: the site-wide model. "
    "A name that cannot be a user exits 64."
)


def _stdin() -> BinaryIO:
    return sys.stdin.buffer


def _find(state: CliState, paths: Sequence[str], recursive: bool) -> list[Found]:
    """The messages under ``paths``; each junk or trash folder skipped is one stderr line."""

    def on_skip(folder: str) -> None:
        click.echo(f"skipped folder {folder} (junk or trash; name it to include it)", err=True)

    max_bytes = state.settings.server.max_message_bytes
    return find_messages(paths, _stdin(), max_bytes, recursive=recursive, on_skip=on_skip)


def _service(state: CliState, user: str | None) -> SpamFilter:
    """The service; a ``--user`` that cannot name a model stops the command here (exit 64),
    before any message is read."""
    service = build(state.settings)
    service.models(user)
    return service


def _declared_class(ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """``--label``: one of the declared classes (``model.classes``), in lower case."""
    state = ctx.find_object(CliState)
    classes = LABELS if state is None else state.settings.model.classes
    try:
        return parse_class(value, classes)
    except ValueError:
        declared = ", ".join(repr(c) for c in classes)
        raise click.BadParameter(f"{value!r} is not one of {declared}.") from None


@click.command()
@click.option(
    "--label",
    "-l",
    required=True,
    callback=_declared_class,
    help=f"The class of every message given: {', '.join(LABELS)}, or another the site "
    "declares (model.classes).",
)
@_jobs("learns")
@_user
@_recursive
@_quiet
@_paths
@pass_state
def learn(
    state: CliState,
    label: str,
    jobs: int | None,
    user: str | None,
    recursive: bool,
    quiet: bool,
    paths: tuple[str, ...],
) -> None:
    """Learn messages as spam or ham (PATH: file, folder, Maildir, mbox, or - for stdin).

    --label names the class: ham, spam, or another the site declares (model.classes).

    A Maildir is its cur/ and new/ only; --recursive adds its subfolders. Folders named
    junk, spam, trash, deleted or bin are skipped (with a line on stderr) unless named.

    A message learned before is unchanged; learned before with the other label, its counts
    move to the new one (relabelled). Under thick training (the default), a message the
    model already judges right by a wide margin is skipped (the counts say why). A message
    that fails is reported on stderr and counted as failed, and the exit status is then 1;
    a database that is down stops it (75).

    With --user, the user's own model learns them (and the site-wide one, unless
    users.train_site is false).
    """
    from app.cli.ahead import ahead, processes_for

    found = _find(state, paths, recursive)
    service = _service(state, user)

    def prepare(message: bytes | Analysed) -> Analysed:
        return service.learn_analysis(message, user)

    def run(messages: Sequence[Analysed]) -> Iterator[list[str]]:
        learning = service.learn_many([(message, label) for message in messages], user)
        return ([result.outcome.value for result in done] for done in learning)

    names = ("learned", "relabelled", "unchanged", "skipped")
    task = Task(f"learn {label.lower()}", names, wanted(quiet), meanings=_learn_meanings(state))
    work = Batches(prepare, run, service.learn_batch)
    loader = ahead(state.settings, processes_for(jobs, len(found)), legacy=True)
    run_task(task, found, work, loader=loader)


def _learn_meanings(state: CliState) -> tuple[tuple[str, str], ...]:
    """Why learn skips a message: thick training (the service's ``_judge_new``)."""
    settings = state.settings
    skipped = (
        f"the model already judged them right by more than {settings.training_margin:g} nats "
        f"({settings.training_mode} training; set SPAMFILTER_TRAINING_MODE=everything "
        "to learn every message)"
    )
    return (("skipped", skipped),)


@click.command()
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object per line: thresholds, clues, counts."
)
@click.option(
    "--explain",
    is_flag=True,
    help="The detailed view for every message (the default for one message on a terminal).",
)
@_jobs("classifies")
@_user
@_recursive
@_quiet
@_paths
@pass_state
def classify(
    state: CliState,
    as_json: bool,
    explain: bool,
    jobs: int | None,
    user: str | None,
    recursive: bool,
    quiet: bool,
    paths: tuple[str, ...],
) -> None:
    """Print a verdict per message: verdict, log-odds (nats), P(spam), path.

    One message on a terminal (or --explain) gets the detailed view: the verdict and its
    thresholds, the score on SpamAssassin's scale, and a table of the clues that decided it
    (token, learned messages holding it per label, weight in nats).

    PATH is read as by learn: a Maildir is its cur/ and new/ only (--recursive adds its
    subfolders), and junk and trash folders are skipped unless named. From 500 messages on,
    another process reads the next ones while this one classifies (--jobs).

    Counts go to stderr at the end, and only when a message failed: stdout is the verdicts.
    """
    found = _find(state, paths, recursive)
    service = _service(state, user)

    detailed = explain or (len(found) == 1 and sys.stdout.isatty())
    settings = state.settings

    def work(name: str, message: bytes | Analysed) -> str:
        result = service.classify(message, user)
        if as_json:
            click.echo(json.dumps(classification_json(name, result, settings)))
        elif detailed:
            show_classification(name, result, settings)
        else:
            click.echo(classification_line(name, result))
        return "classified"

    def on_error(name: str, problem: str) -> None:
        if as_json:
            click.echo(json.dumps({"path": name, "error": problem}))

    from app.cli.ahead import ahead, processes_for

    show = wanted(quiet, stdout_busy=True)
    task = Task("classify", ("classified",), show, to_stderr=True, only_failures=True)
    # why: reading is ~40 % of a classify from a new process (docs/benchmarks.md,
    # "Measurements behind the design")
    loader = ahead(settings, processes_for(jobs, len(found)), legacy=False)
    run_task(task, found, work, on_error, loader=loader)


@click.command()
@_user
@_recursive
@_quiet
@_paths
@pass_state
def forget(
    state: CliState, user: str | None, recursive: bool, quiet: bool, paths: tuple[str, ...]
) -> None:
    """Remove learned messages from the model (their counts are restored exactly).

    PATH is read as by learn: a Maildir is its cur/ and new/ only (--recursive adds its
    subfolders), and junk and trash folders are skipped unless named.
    """
    found = _find(state, paths, recursive)
    service = _service(state, user)

    def work(_name: str, message: bytes | Analysed) -> str:
        return service.forget(message, user).outcome.value

    run_task(Task("forget", ("forgotten", "unknown"), wanted(quiet)), found, work)
