"""``spamfilter-filter``: the per-message entry point, kept to a bare interpreter's start-up.

It imports only the standard library and the filter's own modules until a message needs the
direct path; then the service (SQLAlchemy, pydantic-settings), never click or FastAPI, and it
never runs the migrations. Timings are in docs/integration/pipe.md. Even a mistyped option
passes the message through (exit 3): a filter step must not lose mail over a typo.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from app.adapters.pipe.filter import PROGRAM, Classify, classifier, filter_message
from app.adapters.pipe.records import TYPE_CHECKING, NamedTuple
from app.adapters.pipe.report import ExitCode, FilterReport
from app.errors import ConfigurationError, describe

if TYPE_CHECKING:  # typing and pathlib cost a filter process 9 ms (records)
    import argparse
    from pathlib import Path
    from typing import BinaryIO, NoReturn, TextIO

EXIT_CODES = """\
exit status: 0 spam, 1 ham, 2 unsure, 3 error (the message is then written out unjudged).
X-Spam-* fields the message came with are removed, whatever the outcome.
settings: the TOML file of --config, else SPAMFILTER_CONFIG, else the first of
/etc/spamfilter/spamfilter.toml and ~/.config/spamfilter/spamfilter.toml; the
SPAMFILTER_* variables override it (SPAMFILTER_DATABASE_URL, ...). With
SPAMFILTER_FILTER_URL=http://HOST:PORT the running HTTP service classifies (falling back to
the database when it does not answer), SPAMFILTER_FILTER_TIMEOUT seconds (default 5)."""


class Options(NamedTuple):
    """The command line, read."""

    exit_zero: bool = False
    user: str | None = None
    config: Path | None = None


class UsageError(Exception):
    """A command line argparse cannot read."""


def parser() -> argparse.ArgumentParser:
    """The command line of ``spamfilter-filter``; a bad one raises UsageError."""
    import argparse  # only for a command line ``_plain_options`` does not read
    from pathlib import Path

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise UsageError(message)

    parse = _Parser(
        prog=PROGRAM,
        description="Read a message on stdin; write it to stdout with X-Spam headers added.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parse.add_argument(
        "-e",
        "--exit-zero",
        action="store_true",
        help="exit 0 for every verdict (spam, ham, unsure); 3 still means an error",
    )
    parse.add_argument(
        "-u",
        "--user",
        metavar="USER",
        help="judge with this mail user's model (address or login; default: the site-wide "
        "model); one that cannot name a model is an error (exit 3, passed through)",
    )
    parse.add_argument(
        "--config",
        type=Path,
        metavar="PATH",
        help="TOML settings file (one that does not exist is an error: exit 3, passed through)",
    )
    return parse


def run(
    stdin: BinaryIO,
    stdout: BinaryIO,
    stderr: TextIO,
    exit_zero: bool = False,
    classify: Classify | None = None,
    config: Path | None = None,
    user: str | None = None,
) -> int:
    """Filter one message from ``stdin`` to ``stdout``; the exit status.

    ``classify`` defaults to ``classifier``: the settings of the ``config`` file (else the
    one ``SPAMFILTER_CONFIG`` names or the usual places) under the process environment
    (``SPAMFILTER_*``), read when the message is classified, judging with ``user``'s model
    (None: the site-wide model).
    """
    try:
        raw = stdin.read()
    except OSError as error:
        stderr.write(f"{PROGRAM}: cannot read the message: {describe(error)}\n")
        return ExitCode.ERROR
    classify = classify or classifier(os.environ, stderr, config=config, user=user)
    filtered = filter_message(raw, classify, stderr)
    try:
        stdout.write(filtered.output)
        stdout.flush()
    except OSError as error:
        stderr.write(f"{PROGRAM}: cannot write the message: {describe(error)}\n")
        _discard(stdout)
        return ExitCode.ERROR
    if exit_zero and filtered.code is not ExitCode.ERROR:
        return 0
    return int(filtered.code)


def _discard(stream: BinaryIO) -> None:
    """Point ``stream``'s descriptor at /dev/null. What a failed write left in its buffer is
    written again when the interpreter flushes it on the way out; failing again there makes
    the exit status 120 instead of 3 (stdout is buffered unless PYTHONUNBUFFERED is set)."""
    try:
        descriptor = stream.fileno()
    except (OSError, ValueError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, descriptor)
    finally:
        os.close(null)


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point (``spamfilter-filter``)."""
    streams = (sys.stdin.buffer, sys.stdout.buffer, sys.stderr)
    try:
        args = read_options(sys.argv[1:] if argv is None else argv)
    except UsageError as error:
        return run(*streams, classify=_refuse(f"usage: {error} (see {PROGRAM} --help)"))
    return run(*streams, exit_zero=args.exit_zero, config=args.config, user=args.user)


def read_options(argv: Sequence[str]) -> Options:
    """``argv`` read as ``parser()`` reads it; UsageError for a bad one (``--help`` prints
    the help and exits)."""
    quick = _plain_options(argv)
    if quick is not None:
        return quick
    args = parser().parse_args(argv)
    return Options(args.exit_zero, args.user, args.config)


def _plain_options(argv: Sequence[str]) -> Options | None:
    """The usual command lines (``-e``, ``--exit-zero``, ``-u USER``, ``--user USER``,
    ``--user=USER``, ``--config PATH``, ``--config=PATH``), read without argparse: building
    its parser costs a filter process 6 ms of start-up (argparse, gettext, locale, shutil;
    docs/integration/pipe.md). None for anything else (help, an abbreviation, a value that
    starts with ``-``, an unknown option), which argparse reads."""
    exit_zero, user, config = False, None, None
    words = list(argv)
    while words:
        word = words.pop(0)
        if word in ("-e", "--exit-zero"):
            exit_zero = True
            continue
        name, equals, value = word.partition("=")
        if not equals:
            if word not in ("-u", "--user", "--config") or not words or words[0][:1] == "-":
                return None
            name, value = word, words.pop(0)
        elif name not in ("--user", "--config"):
            return None
        if name == "--config":
            from pathlib import Path  # in a process that reads settings: it imports pathlib

            config = Path(value)
        else:
            user = value
    return Options(exit_zero, user, config)


def _refuse(problem: str) -> Classify:
    def classify(_raw: bytes) -> FilterReport:
        raise ConfigurationError(problem)

    return classify
