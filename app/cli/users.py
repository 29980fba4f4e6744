"""stats and user: what a model holds, the users with a model of their own, deleting one.

``stats --json`` prints the object ``GET /v1/stats`` answers, and ``user list --json`` the
one of ``GET /v1/users`` (both made by ``app.service.accounts``), so a script can read
either. ``user delete`` removes a user's own model, in one transaction, after asking on a
terminal (``--yes`` skips the question; without a terminal ``--yes`` is required).
"""

from __future__ import annotations

import json
import sys

import click

from app.cli.context import EXIT_USAGE, CliState, build, fail, pass_state, user_option


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@user_option("Show this user's own model (default: the site-wide model).")
@pass_state
def stats(state: CliState, as_json: bool, user: str | None) -> None:
    """Learned messages and tokens per label, and the vocabulary size."""
    from app.service.accounts import stats_document

    doc = stats_document(build(state.settings).stats(user))
    if as_json:
        click.echo(json.dumps(doc, indent=1))
        return
    click.echo(f"database    {doc['database']}")
    click.echo(f"scope       {doc['scope']}")
    if doc["user"] is not None:
        click.echo(f"user        {doc['user']}")
    width = max(8, *(len(name) + 1 for name in doc["labels"]))
    click.echo(f"{'label':<{width}}{'messages':>12}{'tokens':>14}")
    for name, counts in doc["labels"].items():
        click.echo(f"{name:<{width}}{counts['messages']:>12,}{counts['tokens']:>14,}")
    click.echo(f"vocabulary  {doc['vocabulary']:,} distinct tokens")
    click.echo(
        f"spam above  {doc['spam_cutoff']:g} nats of log-odds "
        f"({doc['ham_scored']:,} ham scored before learning)"
    )


@click.group("user")
def user_group() -> None:
    """Per-user models: list them, delete one."""


@user_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the users as JSON.")
@pass_state
def list_users(state: CliState, as_json: bool) -> None:
    """Every user with a model of their own: learned messages per label, vocabulary."""
    from app.service.accounts import user_document

    users = build(state.settings).users()
    if as_json:
        click.echo(json.dumps({"users": [user_document(u) for u in users]}, indent=1))
        return
    if not users:
        click.echo("no user has a model of their own", err=True)
        return
    labels = list(users[0].messages)
    click.echo(f"{'user':<32}" + "".join(f"{label:>10}" for label in labels) + f"{'tokens':>12}")
    for summary in users:
        counts = "".join(f"{summary.messages[label]:>10,}" for label in labels)
        click.echo(f"{summary.user:<32}{counts}{summary.vocabulary:>12,}")


@user_group.command("delete")
@click.argument("user")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print what was deleted as JSON.")
@pass_state
def delete_user(state: CliState, user: str, yes: bool, as_json: bool) -> None:
    """Delete USER's own model: counts, totals and learned-message records.

    The site-wide model is untouched, including what USER's feedback trained into it
    (users.train_site). A user without a model exits 1.
    """
    service = build(state.settings)
    models = service.models(user)  # a name that cannot be a user exits 64 here
    if not yes:
        if not _on_terminal():
            raise fail(
                "user delete asks for confirmation: give --yes to run it unattended", EXIT_USAGE
            )
        held = service.stats(user)
        learned = sum(summary.messages for summary in held.labels.values())
        question = (
            f"Delete the model of {models.user} ({learned:,} learned messages, "
            f"{held.vocabulary:,} tokens)? The site-wide model keeps what it learned from them."
        )
        click.confirm(question, abort=True, err=True)
    deleted = service.delete_user(user)
    if as_json:
        from app.service.accounts import deleted_document

        click.echo(json.dumps(deleted_document(deleted), indent=1))
        return
    click.echo(
        f"deleted the model of {deleted.user}: {deleted.messages:,} learned messages, "
        f"{deleted.tokens:,} tokens"
    )


def _on_terminal() -> bool:
    """True when a person can answer a question on stdin."""
    return sys.stdin.isatty()
