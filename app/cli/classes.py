"""classes: the site's classes, and renaming or removing one (``app.service.classes``).

A class is declared in ``model.classes``; these commands change what the database holds of
one, in every model. Stop the services first, and start them again with the new list of
classes: they read and write the count columns of the classes they were started with.
"""

from __future__ import annotations

import click

from app.cli.context import CliState, pass_state

# Every model changes alike: a message learned by a user's model and the site-wide one
# counts once in each.
_OVER = "(over every model: the site-wide one and each user's)"


@click.group("classes")
def classes_group() -> None:
    """The classes messages are learned as: list, rename, remove."""


@classes_group.command("list")
@pass_state
def list_classes(state: CliState) -> None:
    """The declared classes, which are junk, and the site-wide model's messages in each."""
    from app.cli.context import build

    model = state.settings.model
    service = build(state.settings)
    stats = service.stats()
    click.echo(f"{'class':<16}{'junk':<6}{'messages':>12}")
    for name in model.classes:
        junk = "yes" if name in model.junk_classes else "no"
        click.echo(f"{name:<16}{junk:<6}{stats.labels[name].messages:>12,}")
    for name, messages in service.undeclared_classes().items():
        click.echo(
            f"the database holds {messages:,} learned messages of class {name}, which is not "
            f"declared: declare it again, or run 'spamfilter classes remove {name}'",
            err=True,
        )


@classes_group.command("rename")
@click.argument("old")
@click.argument("new")
@pass_state
def rename(state: CliState, old: str, new: str) -> None:
    """Rename class OLD to NEW in every model: its learned messages, totals and counts
    follow it. Then declare NEW instead of OLD (model.classes, model.junk_classes)."""
    from app.bootstrap import build_class_admin

    change = build_class_admin(state.settings, old).rename(old.lower(), new.lower())
    click.echo(f"renamed class {change.name} to {change.into}: {change.messages:,} learned "
               f"messages go with it {_OVER}")  # fmt: skip
    _advise(state, change.name, change.into)


@classes_group.command("remove")
@click.argument("name")
@click.option(
    "--into",
    metavar="CLASS",
    help="Move its learned messages to this declared class (default: forget them).",
)
@pass_state
def remove(state: CliState, name: str, into: str | None) -> None:
    """Remove class NAME from every model: its learned messages are forgotten (their counts
    taken out exactly, as 'spamfilter forget' does) or, with --into, moved to another class
    (as feedback with that class does). Then stop declaring it."""
    from app.bootstrap import build_class_admin

    name = name.lower()
    change = build_class_admin(state.settings, name).remove(name, into and into.lower())
    done = "forgotten" if change.into is None else f"moved to {change.into}"
    click.echo(f"removed class {name}: {change.messages:,} learned messages {done} {_OVER}")
    if change.orphan_rows:
        click.echo(f"{change.orphan_rows:,} token rows held counts of {name} alone without "
                   "a learned message (imported counts); they were deleted")  # fmt: skip
    _advise(state, name, None)


def _advise(state: CliState, gone: str, instead: str | None) -> None:
    """Tell the operator to change the declared classes to match, if they do not."""
    model = state.settings.model
    if gone in model.classes or (instead is not None and instead not in model.classes):
        wanted = [c for c in model.classes if c != gone]
        if instead is not None and instead not in wanted:
            wanted.append(instead)
        click.echo(f"now declare model.classes = {','.join(wanted)} (and junk_classes to "
                   "match), and restart the services", err=True)  # fmt: skip
