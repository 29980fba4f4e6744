"""The result of an evaluation run as JSON, a one-screen table, and a per-message TSV.

The JSON document uses the key names of the peers' ``result.json`` (``filter``, ``corpus``,
``protocol``, ``metrics``, ``timing`` with ``train_*`` for our learn calls, ``db_bytes``...),
so ``harness.py report`` can list our runs beside the other filters. Undefined numbers
(NaN, e.g. a rate of a class with no message) are written as ``null``.
"""

from __future__ import annotations

import math
import os
import platform
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.evaluation.runner import CV, RunResult, Summary
from app.settings import Settings

FILTER_NAME = "spamfilter"

COLUMNS: tuple[tuple[str, int, str, str], ...] = (
    # header, width, block, key
    ("n", 6, "metrics", "n"),
    ("1-ROCA%", 8, "metrics", "roca_1_pct"),
    ("hm%", 6, "metrics", "hm_pct"),
    ("sm%", 6, "metrics", "sm_pct"),
    ("sm%@hm.1", 8, "metrics", "sm_at_hm01_pct"),
    ("lam%", 6, "metrics", "lam_pct"),
    ("unsure%", 7, "metrics", "unsure_pct"),
    ("cls_ms", 7, "timing", "classify_ms_per_msg"),
    ("lrn_ms", 7, "timing", "train_ms_per_msg"),
    ("db_MB", 6, "", "db_mb"),
)


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What was evaluated and how: corpus, effective order, database, wall-clock stamps."""

    corpus: str
    order: str
    seed: int | None
    limit: int | None
    database: str
    started: str
    finished: str


def settings_used(settings: Settings) -> dict[str, Any]:
    """The settings that shape scores and verdicts (never the database URL or tokens)."""
    return {
        "scope": settings.scope,
        "model": settings.model.model_dump(),
        "decision": settings.decision.model_dump(),
        "tokenizer": settings.tokenizer.model_dump(),
        "max_message_bytes": settings.server.max_message_bytes,
    }


def document(
    result: RunResult, summary: Summary, info: RunInfo, settings: Settings
) -> dict[str, Any]:
    """The machine-readable result of one run (times in seconds and ms per message)."""
    decision = settings.decision
    metrics = {
        **asdict(summary.metrics),
        "unsure_pct": summary.unsure_pct,
        "unsure": summary.unsure,
        "unsure_reasons": summary.unsure_reasons,
        "roca_1_pct_probability_scale": summary.roca_1_pct_probability_scale,
        "ties_at_probability_1": summary.ties_at_probability_1,
    }
    doc = {
        "filter": FILTER_NAME,
        "corpus": info.corpus,
        "protocol": result.protocol,
        "folds": result.folds,
        "order": info.order,
        "seed": info.seed,
        "limit": info.limit,
        "threshold": decision.spam_log_odds,
        "threshold_rule": (
            f"spam iff verdict is spam: log_odds > {decision.spam_log_odds} with at least "
            f"{decision.min_messages} learned messages of each label"
        ),
        "score_kind": "log_odds",
        "metrics": metrics,
        "timing": timing(result),
        "db_bytes": result.db_bytes,
        "failures": result.failures,
        "wall_s": round(result.wall_s, 1),
        "started": info.started,
        "finished": info.finished,
        "database": info.database,
        "settings": settings_used(settings),
        "host": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "system": platform.platform(terse=True),
        },
    }
    finite: dict[str, Any] = _finite(doc)
    return finite


def timing(result: RunResult) -> dict[str, Any]:
    """Seconds in classify and learn calls and milliseconds per call (peers' key names)."""

    def per_call(seconds: float, calls: int) -> float:
        return round(1000 * seconds / calls, 3) if calls else math.nan

    return {
        "classify_s": round(result.classify_s, 3),
        "classify_ms_per_msg": per_call(result.classify_s, result.n_classified),
        "train_s": round(result.learn_s, 3),
        "train_ms_per_msg": per_call(result.learn_s, result.n_learned),
        "n_classified": result.n_classified,
        "n_trained": result.n_learned,
        "includes": (
            "classify: read + parse + tokenise + score; train: learn"
            if result.protocol != CV
            else "classify and train: read + parse + tokenise + the service call"
        ),
    }


def table(doc: dict[str, Any]) -> str:
    """A fixed-width table in the peers' style, then the settings that produced it."""
    head = " ".join(h.rjust(w) for h, w, _, _ in COLUMNS)
    cells = []
    for _header, width, block, key in COLUMNS:
        value = doc[block][key] if block else _db_mb(doc)
        cells.append(_cell(value, width))
    failures = " *" if doc["failures"] else ""
    lines = [
        f"{doc['filter']} on {doc['corpus']}, {_protocol(doc)}, {_order(doc)}",
        head,
        "-" * len(head),
        " ".join(cells) + failures,
        "",
        *settings_lines(doc),
    ]
    return "\n".join(lines)


def settings_lines(doc: dict[str, Any]) -> list[str]:
    """The model, decision and tokenizer settings of a run, one group per line."""
    s = doc["settings"]
    model, decision, tok = s["model"], s["decision"], s["tokenizer"]
    timing_block = doc["timing"]
    return [
        f"model      {model['kind']}, counting {model['counting']}, alpha {model['alpha']}",
        f"verdicts   ham if log-odds < {decision['ham_log_odds']}, spam if > "
        f"{decision['spam_log_odds']} (nats), else unsure; "
        f"unsure until {decision['min_messages']} learned messages per label",
        f"tokenizer  max_token_length {tok['max_token_length']}, "
        f"max_tokens {tok['max_tokens']}, scan_bytes {tok['scan_bytes']}",
        f"database   {doc['database']}; failures {doc['failures']}; wall {doc['wall_s']} s",
        f"timing     {timing_block['includes']}",
        f"unsure     {_reasons(doc['metrics']['unsure_reasons'])}",
    ]


def write_scores(result: RunResult, corpus_root: Path, path: Path) -> None:
    """One TSV row per message in presentation order (log-odds in nats, times in ms)."""
    root = corpus_root.resolve()
    with path.open("w", encoding="utf-8") as out:
        out.write("i\tlabel\tlog_odds\tverdict\tclassify_ms\tlearn_ms\tpath\n")
        for row in result.rows:
            learn_ms = "" if row.learn_s is None else f"{1000 * row.learn_s:.3f}"
            out.write(
                f"{row.position}\t{row.item.label}\t{row.log_odds!r}\t{row.verdict}\t"
                f"{1000 * row.classify_s:.3f}\t{learn_ms}\t{_relative(row.item.path, root)}\n"
            )


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def _protocol(doc: dict[str, Any]) -> str:
    if doc["protocol"] == CV:
        return f"{doc['folds']}-fold cross-validation"
    return "online (classify, then learn the gold label)"


def _order(doc: dict[str, Any]) -> str:
    seed = f" seed {doc['seed']}" if doc["seed"] is not None else ""
    limit = f", first {doc['limit']}" if doc["limit"] else ""
    return f"order {doc['order']}{seed}{limit}"


def _reasons(reasons: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in reasons.items()) or "none"


def _db_mb(doc: dict[str, Any]) -> float | None:
    size = doc["db_bytes"]
    return None if size is None else size / 1e6


def _cell(value: object, width: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        text = "-"
    elif isinstance(value, float):
        text = _number(value)
    else:
        text = str(value)
    return text.rjust(width)


def _number(value: float) -> str:
    """Peers' precision: 3 decimals below 10, fewer as the number grows."""
    if abs(value) >= 1000:
        return f"{value:.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    if abs(value) >= 10:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by None (strict JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value
