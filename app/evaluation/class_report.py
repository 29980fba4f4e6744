"""The per-class part of an evaluation result, for a corpus or model with more than two
classes: what each corpus class was learned as, the confusion matrix, per-class precision,
recall and F1, macro-F1, and each corpus class's share of ham / unsure / spam verdicts.

The confusion matrix has the corpus classes as rows and the predicted (most likely) classes
as columns, so it shows where every corpus class went even when the model does not declare
it. Precision, recall and F1 compare the class each message was learned as with the
predicted one; they equal the corpus classes' when the model declares them all. A message
that failed (no prediction) is left out of both; the run's ``failures`` counts it.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from app.evaluation.metrics import verdict_share_pct
from app.evaluation.multiclass import class_scores, confusion, macro_f1_pct
from app.evaluation.runner import Row

VERDICTS = ("ham", "unsure", "spam")
_CLASS_WIDTH = 10
_COUNT_WIDTH = 8


def has_classes(rows: Sequence[Row]) -> bool:
    """True when the rows name more than two classes (in the corpus, learned or predicted)."""
    names = {row.item.class_name for row in rows} | {row.item.taught for row in rows}
    names |= {row.predicted for row in rows if row.predicted}
    return len(names) > 2


def class_block(rows: Sequence[Row]) -> dict[str, Any]:
    """The per-class figures of a run as plain JSON values (percentages, NaN kept)."""
    judged = [row for row in rows if row.predicted]
    matrix = confusion([r.item.class_name for r in judged], [r.predicted for r in judged])
    scores = class_scores([r.item.taught for r in judged], [r.predicted for r in judged])
    verdicts: dict[str, Counter[str]] = {}
    for row in rows:
        verdicts.setdefault(row.item.class_name, Counter())[row.verdict] += 1
    return {
        "corpus": dict(sorted(Counter(row.item.class_name for row in rows).items())),
        "learned_as": dict(sorted({row.item.class_name: row.item.taught for row in rows}.items())),
        "confusion": {
            "rows": list(matrix.rows),
            "columns": list(matrix.columns),
            "counts": [list(line) for line in matrix.counts],
        },
        "per_class": {name: asdict(score) for name, score in scores.items()},
        "macro_f1_pct": macro_f1_pct(scores),
        "verdicts": {name: dict(sorted(c.items())) for name, c in sorted(verdicts.items())},
    }


def class_lines(block: dict[str, Any], junk: Sequence[str]) -> list[str]:
    """The per-class figures as table lines (``-`` for an undefined rate)."""
    taught = block["learned_as"]
    learned = ", ".join(
        f"{name} {count}" + (f" learned as {taught[name]}" if taught[name] != name else "")
        for name, count in block["corpus"].items()
    )
    lines = [f"classes    {learned}; junk: {', '.join(junk)}"]
    lines += matrix_lines(block["confusion"])
    for name, score in block["per_class"].items():
        lead = "per class  " if name == next(iter(block["per_class"])) else " " * 11
        lines.append(
            f"{lead}{name.ljust(_CLASS_WIDTH)} precision {_pct(score['precision_pct'])}, "
            f"recall {_pct(score['recall_pct'])}, F1 {_pct(score['f1_pct'])}"
        )
    lines.append(f"macro-F1   {_pct(block['macro_f1_pct'])}")
    return lines + verdict_lines(block["verdicts"])


def matrix_lines(matrix: dict[str, Any]) -> list[str]:
    """The confusion matrix, corpus classes down and predicted classes across, each column as
    wide as its name needs."""
    corner = "corpus \\ predicted"
    lead = max(len(corner), *(len(name) for name in matrix["rows"])) + 2
    widths = [max(_COUNT_WIDTH, len(name) + 2) for name in matrix["columns"]]
    heads = "".join(c.rjust(w) for c, w in zip(matrix["columns"], widths, strict=True))
    lines = ["confusion  " + corner.ljust(lead) + heads]
    for name, counts in zip(matrix["rows"], matrix["counts"], strict=True):
        cells = "".join(str(n).rjust(w) for n, w in zip(counts, widths, strict=True))
        lines.append(" " * 11 + name.ljust(lead) + cells)
    return lines


def verdict_lines(verdicts: dict[str, dict[str, int]], note: str = "") -> list[str]:
    """Each corpus class's shares of ham / unsure / spam verdicts, one line a class."""
    lines = []
    for number, (name, counts) in enumerate(verdicts.items()):
        lead = "by class   " if number == 0 else " " * 11
        shares = ", ".join(f"{v} {_pct(verdict_share_pct(counts, v))}" for v in VERDICTS)
        lines.append(f"{lead}{name.ljust(_CLASS_WIDTH)} {shares}{note}")
    return lines


def _pct(value: float | None) -> str:
    if value is None or value != value:  # None in a JSON file, NaN in memory
        return "-"
    return f"{value:.2f}%"


def pooled(blocks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The class blocks of several seeds: macro-F1's mean and sample standard deviation (n - 1;
    None for one seed) and the verdicts of each corpus class summed over the seeds."""
    scores = [b["macro_f1_pct"] for b in blocks if b.get("macro_f1_pct") is not None]
    verdicts: dict[str, Counter[str]] = {}
    for block in blocks:
        for name, counts in block["verdicts"].items():
            verdicts.setdefault(name, Counter()).update(counts)
    return {
        "macro_f1_pct": {
            "mean": statistics.fmean(scores) if scores else None,
            "sd": statistics.stdev(scores) if len(scores) > 1 else None,
        },
        "verdicts": {name: dict(sorted(c.items())) for name, c in sorted(verdicts.items())},
    }


def pooled_lines(block: dict[str, Any], seeds: int) -> list[str]:
    """The pooled class figures of ``seeds`` seeds as table lines."""
    macro = block["macro_f1_pct"]
    spread = "" if macro["sd"] is None else f" (sd {macro['sd']:.2f})"
    lines = [f"macro-F1   {_pct(macro['mean'])} mean over {seeds} seeds{spread}"]
    return lines + verdict_lines(block["verdicts"], " (all seeds)")
