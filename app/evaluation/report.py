"""The result of an evaluation run as JSON, a one-screen table, and a per-message TSV.

The JSON document uses the key names of the peers' ``result.json`` (``filter``, ``corpus``,
``protocol``, ``metrics``, ``timing`` with ``train_*`` for our learn calls, ``db_bytes``...),
so ``harness.py report`` can list our runs beside the other filters. Undefined numbers
(NaN, e.g. a rate of a class with no message) are written as ``null``. ``learn_outcomes``
counts the learn calls by outcome (``learned`` and ``skipped`` always present), and
``messages`` holds one row per classified message (see ``app.evaluation.resultfile``).
"""

from __future__ import annotations

import math
import os
import platform
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.evaluation.class_report import class_block, class_lines, has_classes
from app.evaluation.metrics import HAM, SPAM, verdict_share_pct
from app.evaluation.runner import CV, RunResult, Summary
from app.settings.schema import DecisionSettings, Settings

FILTER_NAME = "spamfilter"

COLUMNS: tuple[tuple[str, int, str, str], ...] = (
    # header, width, block, key
    ("n", 6, "metrics", "n"),
    ("1-ROCA%", 8, "metrics", "roca_1_pct"),
    ("hm%", 6, "metrics", "hm_pct"),
    ("sm%", 6, "metrics", "sm_pct"),
    ("s>ham%", 6, "metrics", "spam_judged_ham_pct"),
    ("sm%@hm.1", 8, "metrics", "sm_at_hm01_pct"),
    ("lam%", 6, "metrics", "lam_pct"),
    ("unsure%", 7, "metrics", "unsure_pct"),
    ("cls_ms", 7, "timing", "classify_ms_per_msg"),
    ("lrn_ms", 7, "timing", "train_ms_per_msg"),
    ("learned", 7, "learn_outcomes", "learned"),
    ("skipped", 7, "learn_outcomes", "skipped"),
    ("db_MB", 6, "", "db_mb"),
)
MESSAGE_COLUMNS = ("position", "label", "log_odds", "verdict", "path")
CLASS_COLUMNS = ("class", "predicted")  # added to the message rows of a run with classes
LEARNED = "learned"
SKIPPED = "skipped"


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
    skip: int = 0


def settings_used(settings: Settings) -> dict[str, Any]:
    """The settings that shape scores and verdicts (never the database URL or tokens)."""
    return {
        "scope": settings.scope,
        "model": settings.model.model_dump(),
        "decision": settings.decision.model_dump(),
        "tokenizer": settings.tokenizer.model_dump(),
        "max_message_bytes": settings.server.max_message_bytes,
        "training": {
            "mode": settings.training_mode,
            "margin": settings.training_margin,
            "novelty": settings.training_novelty,
        },
    }


def document(
    result: RunResult,
    summary: Summary,
    info: RunInfo,
    settings: Settings,
    corpus_root: Path | None = None,
) -> dict[str, Any]:
    """The machine-readable result of one run (times in seconds and ms per message).

    With ``corpus_root``, ``messages`` lists every message's row (paths relative to it).
    """
    decision = settings.decision
    doc = {
        "filter": FILTER_NAME,
        "corpus": info.corpus,
        "protocol": result.protocol,
        "folds": result.folds,
        "order": info.order,
        "seed": info.seed,
        "limit": info.limit,
        "skip": info.skip,
        "threshold": decision.spam_log_odds,
        "threshold_rule": (
            f"spam iff verdict is spam: log_odds {decision.spam_rule()} with at least "
            f"{decision.min_messages} learned messages of each label"
        ),
        "score_kind": "log_odds",
        "metrics": metrics_block(summary),
        "timing": timing(result),
        "learn_outcomes": {LEARNED: 0, SKIPPED: 0, **result.outcomes},
        "db_bytes": result.db_bytes,
        "failures": result.failures,
        "wall_s": round(result.wall_s, 1),
        "started": info.started,
        "finished": info.finished,
        "database": info.database,
        "settings": settings_used(settings),
        "host": _host(),
    }
    with_classes = has_classes(result.rows)
    if with_classes:
        doc["classes"] = class_block(result.rows)
    if corpus_root is not None:
        doc["messages"] = message_rows(result, corpus_root, with_classes)
    clean: dict[str, Any] = finite(doc)
    return clean


def metrics_block(summary: Summary) -> dict[str, Any]:
    """The peers' metrics and what the three-way verdicts add."""
    return {
        **asdict(summary.metrics),
        "unsure_pct": summary.unsure_pct,
        "unsure": summary.unsure,
        "unsure_reasons": summary.unsure_reasons,
        # The three-way view: sm% counts unsure spam as missed; these keep the parts apart.
        "spam_judged_ham_pct": summary.verdict_pct(SPAM, "ham"),
        "spam_unsure_pct": summary.verdict_pct(SPAM, "unsure"),
        "ham_unsure_pct": summary.verdict_pct(HAM, "unsure"),
        "verdicts": summary.verdicts,
        "roca_1_pct_probability_scale": summary.roca_1_pct_probability_scale,
        "ties_at_probability_1": summary.ties_at_probability_1,
    }


def _host() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "system": platform.platform(terse=True),
    }


def message_rows(result: RunResult, corpus_root: Path, classes: bool = False) -> dict[str, Any]:
    """Every classified message as ``[position, label, log_odds, verdict, path]``, and with
    ``classes`` its corpus class and predicted class after them."""
    root = corpus_root.resolve()
    rows = [
        [row.position, row.item.label, row.log_odds, row.verdict, _relative(row.item.path, root)]
        + ([row.item.class_name, row.predicted] if classes else [])
        for row in result.rows
    ]
    columns = [*MESSAGE_COLUMNS, *(CLASS_COLUMNS if classes else ())]
    return {"columns": columns, "rows": rows}


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
    head = header()
    failures = " *" if doc["failures"] else ""
    lines = [
        title(doc),
        head,
        "-" * len(head),
        format_row(column_values(doc)) + failures,
        "",
        *settings_lines(doc),
        f"database   {doc['database']}; failures {doc['failures']}; wall {doc['wall_s']} s",
        f"unsure     {_reasons(doc['metrics']['unsure_reasons'])}",
        *three_way_line(doc["metrics"]),
        f"learning   {_reasons(doc['learn_outcomes'])} (learn calls by outcome)",
    ]
    if doc.get("classes"):
        junk = doc["settings"]["model"].get("junk_classes") or [SPAM]
        lines += class_lines(doc["classes"], junk)
    return "\n".join(lines)


def three_way_line(metrics: dict[str, Any]) -> list[str]:
    """Each label's share of ham / unsure / spam verdicts (none for an older result file)."""
    verdicts = metrics.get("verdicts")
    if not verdicts:
        return []

    def shares(label: str) -> str:
        counts = verdicts.get(label, {})
        return ", ".join(
            f"{v} {verdict_share_pct(counts, v):.2f}%" for v in ("ham", "unsure", "spam")
        )

    return [f"three-way  ham messages: {shares(HAM)}; spam messages: {shares(SPAM)}"]


def title(doc: dict[str, Any], seeds: str | None = None) -> str:
    """What was run: filter, corpus, protocol and order (``seeds`` replaces the one seed)."""
    return f"{doc['filter']} on {doc['corpus']}, {_protocol(doc)}, {_order(doc, seeds)}"


def header(lead: tuple[str, int] | None = None) -> str:
    """The column headers, after an optional ``(header, width)`` lead column."""
    heads = [h.rjust(w) for h, w, _, _ in COLUMNS]
    return " ".join([lead[0].ljust(lead[1]), *heads] if lead else heads)


def column_values(doc: dict[str, Any]) -> dict[str, Any]:
    """The value of every table column of a run, by key."""
    return {key: doc[block].get(key) if block else _db_mb(doc) for _h, _w, block, key in COLUMNS}


def format_row(values: dict[str, Any], lead: tuple[str, int] | None = None) -> str:
    """One table line of ``values`` (by column key; missing or None shown as ``-``)."""
    cells = [cell(values.get(key), width) for _h, width, _b, key in COLUMNS]
    return " ".join([lead[0].ljust(lead[1]), *cells] if lead else cells)


def settings_lines(doc: dict[str, Any]) -> list[str]:
    """The model, decision, tokenizer and training settings of a run, one group per line."""
    s = doc["settings"]
    model, decision, tok = s["model"], s["decision"], s["tokenizer"]
    training = s.get("training") or {}
    mode, margin = training.get("mode", "everything"), training.get("margin")
    novelty = training.get("novelty")
    new = f", and any message with {novelty:.0%} of its tokens new" if novelty else ""
    top = f", top_tokens {model['top_tokens']}" if "top_tokens" in model else ""
    if top and model.get("top_per_kind"):
        top += " per kind (body words; header/URL/MIME tokens)"
    if model.get("top_tokens") and model.get("normalise_length"):
        top += f", length-normalised (floor {model['length_floor']})"
    if model.get("distinct_min_messages"):
        top += f", identical learned counts once (from {model['distinct_min_messages']} messages)"
    return [
        f"model      {model['kind']}, counting {model['counting']}, alpha {model['alpha']}{top}",
        f"verdicts   ham if log-odds < {decision['ham_log_odds']}, spam if "
        f"{_spam_rule(decision)} (nats), else unsure; "
        f"unsure until {decision['min_messages']} learned messages per label",
        f"tokenizer  max_token_length {tok['max_token_length']}, "
        f"max_tokens {tok['max_tokens']}, scan_bytes {tok['scan_bytes']}",
        f"training   {mode}" + (f", margin {margin} nats{new}" if mode != "everything" else ""),
        f"timing     {doc['timing']['includes']}",
    ]


def write_scores(result: RunResult, corpus_root: Path, path: Path) -> None:
    """One TSV row per message in presentation order (log-odds in nats, times in ms); a run
    with more than two classes adds each message's corpus class and predicted class."""
    root = corpus_root.resolve()
    classes = has_classes(result.rows)
    with path.open("w", encoding="utf-8") as out:
        extra = "".join(f"\t{name}" for name in CLASS_COLUMNS) if classes else ""
        out.write(f"i\tlabel\tlog_odds\tverdict\tclassify_ms\tlearn_ms\tpath{extra}\n")
        for row in result.rows:
            learn_ms = "" if row.learn_s is None else f"{1000 * row.learn_s:.3f}"
            named = f"\t{row.item.class_name}\t{row.predicted}" if classes else ""
            out.write(
                f"{row.position}\t{row.item.label}\t{row.log_odds!r}\t{row.verdict}\t"
                f"{1000 * row.classify_s:.3f}\t{learn_ms}\t{_relative(row.item.path, root)}"
                f"{named}\n"
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


def _order(doc: dict[str, Any], seeds: str | None = None) -> str:
    seed = f" seed {doc['seed']}" if doc["seed"] is not None else ""
    if seeds is not None:
        seed = f" seeds {seeds}"
    limit = f", first {doc['limit']}" if doc["limit"] else ""
    # .get: result files written before --skip existed have no such key.
    skip = f", judged after the first {doc['skip']}" if doc.get("skip") else ""
    return f"order {doc['order']}{seed}{limit}{skip}"


def _reasons(reasons: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in reasons.items()) or "none"


def _db_mb(doc: dict[str, Any]) -> float | None:
    size = doc["db_bytes"]
    return None if size is None else size / 1e6


def cell(value: object, width: int) -> str:
    """``value`` right-aligned in ``width``: ``-`` for None/NaN, numbers at peers' precision."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        text = "-"
    elif isinstance(value, float):
        text = number(value)
    else:
        text = str(value)
    return text.rjust(width)


def number(value: float) -> str:
    """Peers' precision: 3 decimals below 10, fewer as the number grows."""
    if abs(value) >= 1000:
        return f"{value:.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    if abs(value) >= 10:
        return f"{value:.2f}"
    return f"{value:.3f}"


def finite(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by None (strict JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


def _spam_rule(decision: dict[str, Any]) -> str:
    """The spam cut-off of a result file's settings in words (files written before the
    cut-off was calibrated have a fixed one)."""
    known = {key: decision[key] for key in DecisionSettings.model_fields if key in decision}
    known.setdefault("calibrate", False)
    return DecisionSettings(**known).spam_rule()
