"""The result files ``eval --out`` writes and ``eval --compare`` reads.

A file holds one run (the document of ``app.evaluation.report``), several seeds of one
setup (``app.evaluation.seeds``: ``aggregate`` plus the per-seed documents under ``runs``),
or the arms of ``eval --per-user`` (``app.evaluation.per_user``: one run per arm under
``arms``, each read as a run named by its ``arm``).
Every run document carries ``messages``: ``columns`` (position, label, log_odds, verdict,
path relative to the corpus) and one ``rows`` entry per classified message.

``dumps`` indents the document like ``json.dumps(indent=1)`` but writes each message row on
one line, so a file stays readable and small: about 100 bytes per message with SpamAssassin
file names (6,046 messages x 5 seeds: about 3 MB).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.evaluation.report import MESSAGE_COLUMNS


class ResultFileError(ValueError):
    """A file is not a result written by ``eval --out``, or lacks what is asked of it."""


@dataclass(frozen=True, slots=True)
class Scored:
    """One message of a run: gold label, log-odds and verdict."""

    label: str
    log_odds: float
    verdict: str


def dumps(value: Any, depth: int = 0) -> str:
    """JSON text: objects and lists of containers indented by one space per level,
    lists of plain values (a message row, a list of seeds) on one line."""
    pad = " " * (depth + 1)
    if isinstance(value, dict) and value:
        items = [f"{pad}{json.dumps(key)}: {dumps(item, depth + 1)}" for key, item in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"
    if isinstance(value, list) and any(isinstance(item, dict | list) for item in value):
        items = [pad + dumps(item, depth + 1) for item in value]
        return "[\n" + ",\n".join(items) + "\n" + " " * depth + "]"
    return json.dumps(value, separators=(", ", ": "), allow_nan=False)


def load_runs(path: Path) -> list[dict[str, Any]]:
    """The run documents of a result file (one, or one per seed)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ResultFileError(f"{path}: not a readable JSON result file ({error})") from error
    if not isinstance(doc, dict) or not doc.keys() & {"runs", "metrics", "arms"}:
        raise ResultFileError(f"{path}: not a result file written by 'spamfilter eval --out'")
    if "arms" in doc:
        return _arm_runs(path, doc)
    runs = doc.get("runs", [doc])
    if not isinstance(runs, list) or not all(isinstance(run, dict) for run in runs):
        raise ResultFileError(f"{path}: 'runs' is not a list of run results")
    return runs


def _arm_runs(path: Path, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A per-user file's arms as runs: each arm's block with its name (``arm``) and the
    file's corpus and protocol."""
    arms = doc["arms"]
    if not isinstance(arms, dict) or not all(isinstance(arm, dict) for arm in arms.values()):
        raise ResultFileError(f"{path}: 'arms' is not a map of per-user arm results")
    shared = {key: doc.get(key) for key in ("corpus", "protocol", "seed", "limit")}
    return [{**shared, **arm, "arm": name} for name, arm in arms.items()]


def scored_messages(run: dict[str, Any], where: str) -> dict[str, Scored]:
    """The messages of one run by path; ``where`` names the run in error messages."""
    block = run.get("messages")
    if not isinstance(block, dict) or "rows" not in block:
        again = "eval --per-user --out" if "arm" in run else "eval --out"
        raise ResultFileError(
            f"{where}: no per-message rows; write the result again with '{again}'"
        )
    columns = block.get("columns", list(MESSAGE_COLUMNS))
    try:
        at = {name: columns.index(name) for name in ("label", "log_odds", "verdict", "path")}
    except ValueError as error:
        raise ResultFileError(f"{where}: message columns {columns} lack {error}") from error
    found: dict[str, Scored] = {}
    for row in block["rows"]:
        path = row[at["path"]]
        if path in found:
            raise ResultFileError(f"{where}: message {path} appears twice")
        log_odds = row[at["log_odds"]]
        if not isinstance(log_odds, int | float):
            raise ResultFileError(f"{where}: message {path} has no log-odds ({log_odds!r})")
        found[path] = Scored(row[at["label"]], float(log_odds), row[at["verdict"]])
    return found
