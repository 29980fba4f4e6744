"""``spamfilter expire``: take old and rare tokens out of the models, or show what would go."""

from __future__ import annotations

import click

from app.cli.context import CliState, build, pass_state
from app.cli.progress import progress_bar, wanted
from app.service.upkeep import ExpiryReport


@click.command()
@click.option("--user", metavar="NAME", help="The user's own model (default: the site-wide one).")
@click.option("--all", "every", is_flag=True, help="The site-wide model and every user's model.")
@click.option("--dry-run", is_flag=True, help="Count what would go; change nothing.")
@click.option(
    "--max-tokens",
    type=click.IntRange(min=0),
    metavar="N",
    help="Keep at most N distinct tokens per model (default: SPAMFILTER_MAX_TOKENS; 0: no cap).",
)
@click.option(
    "--max-age-days",
    type=click.IntRange(min=0),
    metavar="D",
    help="Expire tokens not learned for D days (default: SPAMFILTER_MAX_TOKEN_AGE_DAYS; "
    "0: never by age).",
)
@click.option("--quiet", "-q", is_flag=True, help="Do not show a progress bar.")
@pass_state
def expire(
    state: CliState,
    user: str | None,
    every: bool,
    dry_run: bool,
    max_tokens: int | None,
    max_age_days: int | None,
    quiet: bool,
) -> None:
    """Expire tokens not learned for a while, then the rarest and oldest past the cap.

    Prints per model the tokens taken by age and by the cap, and the vocabulary before and
    after. Each model is expired in a transaction of its own.
    """
    if every and user:
        raise click.UsageError("--user and --all exclude each other")
    service = build(state.settings)
    verb = "would remove" if dry_run else "removed"
    with progress_bar(None, "expire", wanted(quiet, stdout_busy=True), unit="models") as bar:

        def done(report: ExpiryReport) -> None:
            bar.advance()
            click.echo(
                f"{report.scope}: {verb} {report.by_age:,} by age, {report.by_size:,} by size; "
                f"vocabulary {report.vocabulary:,} -> {report.after:,}"
            )

        service.expire(user, every, dry_run, max_tokens, max_age_days, done)
