"""``eval --per-user``: one site-wide model, separate models per user, or users with fallback.

A corpus whose index puts each user's mail in a folder of its own (``enron1/...``,
``enron2/...``) is one mail stream per user. The streams are interleaved into one stream,
each keeping its order and spread evenly over the whole (message i of a user with n
messages lands at i/n), and run online three times on fresh databases:

* ``global``: every message judged and learned by one site-wide model, as without users;
* ``separate``: each user's own model alone (``users.fallback_strength`` 0, feedback trains
  only the user's model);
* ``fallback``: each user's model with the site-wide model as prior, feedback training both
  (the configured ``users`` settings).

Each arm is summarised over the whole stream and per user.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.evaluation import report
from app.evaluation.class_report import class_block, class_lines, has_classes
from app.evaluation.corpus import CorpusItem
from app.evaluation.runner import (
    ModelFactory,
    ProgressFn,
    RunResult,
    Summary,
    no_progress,
    run_online,
    summarise,
)
from app.settings.schema import Settings

ARMS = ("global", "separate", "fallback")


@dataclass(frozen=True, slots=True)
class Arm:
    """One arm's run and its summaries: over every message, and per user."""

    name: str
    settings: Settings
    result: RunResult
    summary: Summary
    per_user: dict[str, Summary]


def users_by_item(items: Sequence[CorpusItem], root: Path) -> dict[Path, str]:
    """Each item's user: the first folder of its path under ``root``. ValueError when an item
    lies directly in ``root`` or fewer than two users are found."""
    base = root.resolve()
    users: dict[Path, str] = {}
    for item in items:
        parts = item.path.resolve().relative_to(base).parts
        if len(parts) < 2:
            raise ValueError(f"{item.path}: per-user evaluation needs a folder per user")
        users[item.path] = parts[0]
    if len(set(users.values())) < 2:
        raise ValueError("per-user evaluation needs mail of at least two users (folders)")
    return users


def interleave(items: Sequence[CorpusItem], users: dict[Path, str]) -> list[CorpusItem]:
    """One stream from each user's stream, each in its own order and spread evenly."""
    streams: dict[str, list[CorpusItem]] = {}
    for item in items:
        streams.setdefault(users[item.path], []).append(item)
    keyed = [
        ((index + 0.5) / len(stream), name, index, item)
        for name, stream in streams.items()
        for index, item in enumerate(stream)
    ]
    keyed.sort(key=lambda entry: entry[:3])
    return [item for *_, item in keyed]


def arm_settings(settings: Settings, arm: str) -> Settings:
    """The settings of ``arm``: ``separate`` turns the fallback and site training off."""
    if arm != "separate":
        return settings
    users = settings.users.model_copy(update={"fallback_strength": 0.0, "train_site": False})
    return settings.model_copy(update={"users": users})


def run_arms(
    items: Sequence[CorpusItem],
    root: Path,
    settings: Settings,
    models_for: Callable[[str, Settings], ModelFactory],
    progress: ProgressFn = no_progress,
    limit: int | None = None,
) -> list[Arm]:
    """Run every arm over the interleaved stream of ``items`` (its first ``limit``), each on
    fresh models from ``models_for(arm, settings)``."""
    users = users_by_item(items, root)
    stream = interleave(items, users)[:limit]
    arms = []
    for number, name in enumerate(ARMS):
        chosen = arm_settings(settings, name)

        def user_of(item: CorpusItem, arm: str = name) -> str | None:
            return None if arm == "global" else users[item.path]

        def step(done: int, total: int, _phase: str, arm: str = name, k: int = number) -> None:
            progress(k * total + done, len(ARMS) * total, arm)

        result = run_online(stream, models_for(name, chosen), step, user_of)
        per_user = {
            user: summarise(
                dataclasses.replace(
                    result, rows=[row for row in result.rows if users[row.item.path] == user]
                )
            )
            for user in sorted(set(users.values()))
        }
        arms.append(Arm(name, chosen, result, summarise(result), per_user))
    return arms


def table(arms: Sequence[Arm], corpus: str) -> str:
    """The arms side by side: over every message, then per user."""
    width = max(len(f"{arm.name} {user}") for arm in arms for user in arm.per_user) + 1
    head = report.header(("model", width))
    lines = [f"per-user models on {corpus}, online, users interleaved", head, "-" * len(head)]
    for arm in arms:
        values = {
            **report.metrics_block(arm.summary),
            **report.timing(arm.result),
            **arm.result.outcomes,
        }
        lines.append(report.format_row(values, (arm.name, width)))
    for arm in arms:
        for user, summary in arm.per_user.items():
            lines.append(
                report.format_row(report.metrics_block(summary), (f"{arm.name} {user}", width))
            )
    for arm in arms:
        if has_classes(arm.result.rows):
            junk = arm.settings.model.junk_classes
            lines += ["", f"{arm.name}, every user:"]
            lines += class_lines(class_block(arm.result.rows), junk)
    strength = arms[-1].settings.users.fallback_strength if arms else 0
    lines += [
        "",
        "global: one site-wide model; separate: a model per user, nothing shared; "
        f"fallback: a model per user with the site-wide one as prior (strength {strength:g})",
    ]
    return "\n".join(lines)


def _classes(arm: Arm) -> dict[str, Any]:
    """``{"classes": ...}``, the per-class figures over every user, when the run names more
    than two classes (``class_report``); else nothing."""
    rows = arm.result.rows
    return {"classes": class_block(rows)} if has_classes(rows) else {}


def document(
    arms: Sequence[Arm], corpus: str, corpus_root: Path, *, seed: int, limit: int | None = None
) -> dict[str, Any]:
    """The arms as JSON: metrics over every message and per user, with the settings that
    shaped them (``report.settings_used``, and the user settings), and each arm's messages
    (``report.message_rows``, paths relative to ``corpus_root``), so that ``eval --compare``
    can pair two runs' arms message by message and name what differs between them."""
    doc: dict[str, Any] = report.finite(
        {
            "corpus": corpus,
            "protocol": "online, users interleaved",
            "seed": seed,
            "limit": limit,
            "arms": {
                arm.name: {
                    "settings": report.settings_used(arm.settings),
                    "users_settings": arm.settings.users.model_dump(),
                    "metrics": report.metrics_block(arm.summary),
                    "timing": report.timing(arm.result),
                    "learn_outcomes": arm.result.outcomes,
                    "per_user": {
                        user: report.metrics_block(summary)
                        for user, summary in arm.per_user.items()
                    },
                    **_classes(arm),
                    "messages": report.message_rows(
                        arm.result, corpus_root, has_classes(arm.result.rows)
                    ),
                }
                for arm in arms
            },
        }
    )
    return doc
