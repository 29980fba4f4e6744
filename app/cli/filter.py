"""filter: the pipe filter as a ``spamfilter`` subcommand (same code as ``spamfilter-filter``).

It honours ``--database-url`` and the settings the group has read, and behaves as
``spamfilter-filter``: the message on stdin goes to stdout with X-Spam headers added, or
unchanged on an error; exit 0 spam, 1 ham, 2 unsure, 3 error. Mail servers should call
``spamfilter-filter`` instead: it starts without click and the command modules, and it
reads the settings per message, so even an invalid setting passes the message through, where
this command's group rejects it first (exit 2, nothing written). See docs/integration/pipe.md
(with the timings of both).
"""

from __future__ import annotations

import os
import sys

import click

from app.cli.context import CliState, pass_state, user_option


@click.command("filter")
@click.option(
    "--exit-zero",
    "-e",
    is_flag=True,
    help="Exit 0 for every verdict (spam, ham, unsure); 3 still means an error.",
)
@user_option("Judge with this mail user's model (default: the site-wide model).")
@pass_state
def filter_command(state: CliState, exit_zero: bool, user: str | None) -> None:
    """Add X-Spam headers to the message on stdin (exit 0 spam, 1 ham, 2 unsure, 3 error).

    The message is written to stdout with the headers at the top and every original byte
    after them; on any error it is written unchanged. With SPAMFILTER_FILTER_URL set to
    http://HOST:PORT the running HTTP service classifies it.
    """
    from app.adapters.pipe.filter import classifier
    from app.adapters.pipe.main import run

    classify = classifier(os.environ, sys.stderr, state.settings, user=user)
    code = run(sys.stdin.buffer, sys.stdout.buffer, sys.stderr, exit_zero, classify)
    raise click.exceptions.Exit(code)
