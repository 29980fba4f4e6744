"""Compare two result files of ``eval --out`` message by message: is B better than A?

Runs are paired by seed (a seed present in one file only is listed and left out), or, for two
files of ``eval --per-user``, by arm (global, separate, fallback: a model change that only
users meet shows in the fallback arm); within a run messages are paired by their path
relative to the corpus, so the pairing is exact whatever order the rows are in. Both runs
must have classified exactly the same messages with the same gold labels. For each common
seed (or arm), ``app.evaluation.paired_bootstrap`` gives 1-ROCA% (from the log-odds), hm% and
sm% (from each run's own verdicts, i.e. its default thresholds) of A and B, B - A and its
paired bootstrap interval; over several seeds also the mean B - A.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.evaluation import paired_bootstrap, report
from app.evaluation.metrics import SPAM
from app.evaluation.paired_bootstrap import METRICS, Interval, Side
from app.evaluation.resultfile import ResultFileError, Scored, load_runs, scored_messages
from app.evaluation.runner import SPAM_VERDICT
from app.evaluation.seeds import describe_seeds

HEADERS = {"roca_1_pct": "1-ROCA%", "hm_pct": "hm%", "sm_pct": "sm%"}
SHARED = ("corpus", "protocol", "folds", "order", "limit", "skip", "threshold")
EXAMPLES = 3  # paths named in a mismatch error
# What pairs two files' runs: a seed, or an arm of ``eval --per-user`` (its name).
Key = int | str | None


class CompareError(ResultFileError):
    """Two result files that cannot be compared message by message."""


@dataclass(frozen=True, slots=True)
class SeedComparison:
    """The paired comparison of one seed's runs."""

    seed: Key
    n: int
    intervals: dict[str, Interval]


@dataclass(frozen=True, slots=True)
class Comparison:
    """Every common seed of files A and B, and what was left out."""

    files: tuple[Path, Path]
    titles: tuple[str, str]
    differences: list[str]
    seeds: list[SeedComparison]
    only: tuple[list[Key], list[Key]]
    resamples: int
    bootstrap_seed: int
    unit: str = "seed"  # or "arm": what ``seeds`` are

    def mean_diff(self) -> dict[str, float] | None:
        """Mean B - A of every metric over the seeds (None for a single seed, and for arms,
        which are different models and not repeats of one)."""
        if len(self.seeds) < 2 or self.unit != "seed":
            return None
        return {
            name: statistics.fmean(s.intervals[name].diff for s in self.seeds) for name in METRICS
        }


def compare_files(
    path_a: Path, path_b: Path, resamples: int = 1000, bootstrap_seed: int = 1
) -> Comparison:
    """Compare every seed present in both files (raises CompareError, ResultFileError)."""
    runs_a, runs_b = _by_seed(path_a), _by_seed(path_b)
    unit, unit_b = _unit(runs_a), _unit(runs_b)
    if unit != unit_b:
        per_user, other = (path_a, path_b) if unit == "arm" else (path_b, path_a)
        raise CompareError(
            f"{per_user} holds the arms of 'eval --per-user' and {other} does not; "
            "compare two per-user runs, or two runs of one model"
        )
    common = [seed for seed in runs_a if seed in runs_b]
    if not common:
        raise CompareError(
            f"no {unit} in common: {path_a} has {_seed_list(runs_a)}, {path_b} has "
            f"{_seed_list(runs_b)}"
        )
    compared = []
    for seed in common:
        where = f"{unit} {seed}" if seed is not None else "the run"
        is_spam, side_a, side_b = pair_messages(
            scored_messages(runs_a[seed], f"{path_a} {where}"),
            scored_messages(runs_b[seed], f"{path_b} {where}"),
            where,
        )
        rng_seed = f"{bootstrap_seed}/{seed}"
        intervals = paired_bootstrap.paired_bootstrap(is_spam, side_a, side_b, resamples, rng_seed)
        compared.append(SeedComparison(seed, len(is_spam), intervals))
    first_a, first_b = next(iter(runs_a.values())), next(iter(runs_b.values()))
    return Comparison(
        files=(path_a, path_b),
        titles=(_title(runs_a), _title(runs_b)),
        differences=setting_differences(first_a, first_b),
        seeds=compared,
        only=([s for s in runs_a if s not in runs_b], [s for s in runs_b if s not in runs_a]),
        resamples=resamples,
        bootstrap_seed=bootstrap_seed,
        unit=unit,
    )


def pair_messages(
    a: dict[str, Scored], b: dict[str, Scored], where: str
) -> tuple[list[bool], Side, Side]:
    """Gold labels and both runs' answers, aligned by message path (sorted)."""
    only_a, only_b = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
    if only_a or only_b:
        raise CompareError(
            f"{where}: A and B did not classify the same messages ({len(a)} and {len(b)}; "
            f"{len(only_a)} only in A{_examples(only_a)}, {len(only_b)} only in B"
            f"{_examples(only_b)}); compare runs of the same corpus, order and --limit"
        )
    paths = sorted(a)
    relabelled = [path for path in paths if a[path].label != b[path].label]
    if relabelled:
        raise CompareError(
            f"{where}: {len(relabelled)} messages have different gold labels in A and B"
            f"{_examples(relabelled)}"
        )
    is_spam = [a[path].label == SPAM for path in paths]

    def side(run: dict[str, Scored]) -> Side:
        scored = [run[path] for path in paths]
        return Side([s.log_odds for s in scored], [s.verdict == SPAM_VERDICT for s in scored])

    return is_spam, side(a), side(b)


def setting_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """``key: A -> B`` for every setup value and setting that differs between two runs."""

    def flat(doc: dict[str, Any]) -> dict[str, Any]:
        values = {key: doc.get(key) for key in SHARED}
        values.update(_flatten(doc.get("settings") or {}, ""))
        values.update(_flatten(doc.get("users_settings") or {}, "users."))
        return values

    fa, fb = flat(a), flat(b)
    return [
        f"{key}: {fa.get(key)} -> {fb.get(key)}"
        for key in sorted(fa.keys() | fb.keys())
        if fa.get(key) != fb.get(key)
    ]


def _flatten(value: dict[str, Any], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, dict):
            out.update(_flatten(item, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = item
    return out


def _by_seed(path: Path) -> dict[Key, dict[str, Any]]:
    """A file's runs by seed, or by arm for a per-user file."""
    runs: dict[Key, dict[str, Any]] = {}
    for run in load_runs(path):
        seed = run["arm"] if "arm" in run else run.get("seed")
        if seed in runs:
            raise ResultFileError(f"{path}: {_unit(runs)} {seed} appears twice")
        runs[seed] = run
    return runs


def _unit(runs: dict[Key, dict[str, Any]]) -> str:
    return "arm" if any("arm" in run for run in runs.values()) else "seed"


def _seed_list(runs: dict[Key, Any]) -> str:
    return f"{_unit(runs)}s " + ", ".join(str(seed) for seed in runs)


def _title(runs: dict[Key, dict[str, Any]]) -> str:
    first = next(iter(runs.values()))
    if _unit(runs) == "arm":
        return f"per-user models on {first.get('corpus')}, {first.get('protocol')}"
    seeds = [seed for seed in runs if isinstance(seed, int)]
    return report.title(first, seeds=describe_seeds(seeds) if len(seeds) > 1 else None)


def _examples(paths: Sequence[str]) -> str:
    if not paths:
        return ""
    more = ", ..." if len(paths) > EXAMPLES else ""
    return f" ({', '.join(paths[:EXAMPLES])}{more})"


def document(comparison: Comparison) -> dict[str, Any]:
    """The comparison as JSON-ready data (undefined numbers as null)."""
    c = comparison
    doc = {
        "a": {"file": str(c.files[0]), "setup": c.titles[0]},
        "b": {"file": str(c.files[1]), "setup": c.titles[1]},
        "differences": c.differences,
        "bootstrap": {
            "resamples": c.resamples,
            "seed": c.bootstrap_seed,
            "confidence_pct": paired_bootstrap.CONFIDENCE_PCT,
            "method": "paired: the same messages drawn with replacement for A and B; "
            "percentile interval of B - A; lower is better for every metric",
        },
        "unit": c.unit,
        f"{c.unit}s": [
            {
                c.unit: s.seed,
                "n": s.n,
                "metrics": {
                    name: {**_interval_fields(interval), "verdict": interval.verdict}
                    for name, interval in s.intervals.items()
                },
            }
            for s in c.seeds
        ],
        "mean_diff": c.mean_diff(),
        "only_in_a": c.only[0],
        "only_in_b": c.only[1],
    }
    clean: dict[str, Any] = report.finite(doc)
    return clean


def _interval_fields(interval: Interval) -> dict[str, Any]:
    return {
        "a": interval.a,
        "b": interval.b,
        "diff": interval.diff,
        "low": interval.low,
        "high": interval.high,
        "resamples": interval.resamples,
    }


def text(comparison: Comparison) -> str:
    """A fixed-width report: one line per seed and metric, then the mean over seeds."""
    c = comparison
    lines = [
        f"A  {c.files[0]}: {c.titles[0]}",
        f"B  {c.files[1]}: {c.titles[1]}",
        "differs    " + ("; ".join(c.differences) or "no setting or setup value"),
        f"bootstrap  {c.resamples} paired resamples of the messages (bootstrap seed "
        f"{c.bootstrap_seed}); percentile interval of B - A; lower is better",
    ]
    width = _lead_width(c)
    head = _head(c.unit, width)
    lines += ["", head, "-" * len(head)]
    for s in c.seeds:
        for k, (name, interval) in enumerate(s.intervals.items()):
            lead = str(s.seed if s.seed is not None else "-") if k == 0 else ""
            lines.append(f"{lead:<{width}}{HEADERS[name]:<9}{s.n:>6}{_line(interval)}")
    lines += _tail(c, width)
    return "\n".join(lines)


def _lead_width(c: Comparison) -> int:
    """The first column's width: 5, or an arm's name and a space."""
    return max(5, *(len(str(s.seed)) + 1 for s in c.seeds))


def _head(unit: str, width: int) -> str:
    return (
        f"{unit:<{width}}{'metric':<9}{'n':>6}{'A':>9}{'B':>9}{'B - A':>9}  "
        f"{'95% interval':<20} does the interval exclude 0?"
    )


def _line(interval: Interval) -> str:
    values = f"{_num(interval.a):>9}{_num(interval.b):>9}{_signed(interval.diff):>9}"
    span = f"[{_signed(interval.low)}, {_signed(interval.high)}]"
    return f"{values}  {span:<20} {interval.verdict}"


def _tail(c: Comparison, width: int) -> list[str]:
    lines = []
    mean = c.mean_diff()
    if mean is not None:
        lines.append("-" * len(_head(c.unit, width)))
        for name in METRICS:
            verdicts = [s.intervals[name].verdict for s in c.seeds]
            tally = ", ".join(
                f"{verdict} {verdicts.count(verdict)}"
                for verdict in (
                    paired_bootstrap.B_BETTER,
                    paired_bootstrap.B_WORSE,
                    paired_bootstrap.NO_DIFFERENCE,
                )
                if verdict in verdicts
            )
            lead = f"{'mean':<{width}}{HEADERS[name]:<9}{'':>24}"
            lines.append(f"{lead}{_signed(mean[name]):>9}  over {len(c.seeds)} seeds: {tally}")
    for label, seeds in zip("AB", c.only, strict=True):
        if seeds:
            lines.append(f"left out: {c.unit}s only in {label}: {', '.join(map(str, seeds))}")
    return lines


def _num(value: float) -> str:
    return "-" if value != value else report.number(value)


def _signed(value: float) -> str:
    return "-" if value != value else f"{value:+.3f}"
