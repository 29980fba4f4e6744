"""Several seeds of one setup: the ``--seeds`` syntax, the aggregate, the document and table.

``parse_seeds("1-5")`` is ``[1, 2, 3, 4, 5]``; ``"1,3,7"`` and mixes such as ``"1-3,9"`` work
too. The aggregate gives, for every column of the run table (1-ROCA%, hm%, sm%, sm%@hm.1,
lam%, unsure%, classify and learn ms per message, learned and skipped counts, db_MB), the
mean over the seeds and the sample standard deviation (n - 1 in the denominator; null for a
single seed). A value missing from a run (null: undefined) is left out of its column.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from app.evaluation import report
from app.evaluation.class_report import pooled, pooled_lines

LEAD = 4  # width of the seed column


class SeedsError(ValueError):
    """A ``--seeds`` value that is not a list of seeds."""


def parse_seeds(text: str) -> list[int]:
    """Seeds from ``"A-B"`` ranges and single seeds joined by commas, in the order given."""
    seeds: list[int] = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not dash:
            seeds.append(_seed(first, text))
            continue
        low, high = _seed(first, text), _seed(last, text)
        if low > high:
            raise SeedsError(f"range {part.strip()!r} runs backwards; write {high}-{low}")
        seeds.extend(range(low, high + 1))
    repeated = sorted({seed for seed in seeds if seeds.count(seed) > 1})
    if repeated:
        raise SeedsError(f"seed {repeated[0]} is given twice in {text!r}")
    return seeds


def _seed(word: str, text: str) -> int:
    word = word.strip()
    if not (word.isascii() and word.isdigit()):
        what = "an empty item" if not word else repr(word)
        raise SeedsError(
            f"{what} in {text!r}: expected seeds such as 1-5 or 1,3,7 (whole numbers >= 0)"
        )
    return int(word)


def describe_seeds(seeds: Sequence[int]) -> str:
    """``1-5`` for a run of consecutive seeds, else ``1,3,7``."""
    if len(seeds) > 1 and list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(str(seed) for seed in seeds)


def aggregate(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean and sample standard deviation of every table column over the runs."""
    columns = [report.column_values(run) for run in runs]
    mean: dict[str, float | None] = {}
    sd: dict[str, float | None] = {}
    for _header, _width, _block, key in report.COLUMNS:
        values = [float(c[key]) for c in columns if c.get(key) is not None]
        mean[key] = statistics.fmean(values) if values else None
        sd[key] = statistics.stdev(values) if len(values) > 1 else None
    return {"n_runs": len(runs), "mean": mean, "sd": sd}


def document(runs: Sequence[dict[str, Any]], jobs: int = 1) -> dict[str, Any]:
    """The result of several seeds: what they share, the aggregate, then every run.

    ``jobs`` is how many seeds ran at a time (their per-message times then share the CPUs).
    """
    if not runs:
        raise ValueError("no runs to aggregate")
    first = runs[0]
    shared = ("filter", "corpus", "protocol", "folds", "order", "limit", "skip", "score_kind")
    return {
        **{key: first.get(key) for key in shared},
        "seeds": [run["seed"] for run in runs],
        "jobs": jobs,
        "aggregate": aggregate(runs),
        **({"classes": pooled([run["classes"] for run in runs])} if "classes" in first else {}),
        "runs": list(runs),
    }


def table(doc: dict[str, Any]) -> str:
    """One line per seed, the mean and the standard deviation, then the shared settings."""
    runs = doc["runs"]
    first = runs[0]
    head = report.header(("seed", LEAD))
    rule = "-" * len(head)
    lines = [report.title(first, seeds=describe_seeds(doc["seeds"])), head, rule]
    for run in runs:
        failures = " *" if run["failures"] else ""
        lines.append(report.format_row(report.column_values(run), (str(run["seed"]), LEAD)))
        lines[-1] += failures
    agg = doc["aggregate"]
    lines += [
        rule,
        report.format_row(agg["mean"], ("mean", LEAD)),
        report.format_row(agg["sd"], ("sd", LEAD)),
        "",
        *report.settings_lines(first),
        f"database   {first['database']}, a new one per seed; failures "
        f"{sum(run['failures'] for run in runs)}; wall {sum(run['wall_s'] for run in runs):.1f} s "
        "summed over the seeds",
        f"spread     sd is the sample standard deviation over {len(runs)} seeds (n - 1)",
    ]
    if doc.get("jobs", 1) > 1:
        lines.append(
            f"jobs       {doc['jobs']} seeds at a time: cls_ms and lrn_ms include contention"
        )
    if doc.get("classes"):
        lines += pooled_lines(doc["classes"], len(runs))
    return "\n".join(lines)
