"""The ROC curve of a run as a PNG (matplotlib, imported only when a plot is asked for).

The false-positive axis (ham misclassification, hm%) is logarithmic: the useful part of a
spam filter's curve is below 1 % of ham lost, which a linear axis squeezes into one pixel.
Vertices with hm% = 0 are drawn at half the smallest non-zero rate (one ham in 2n).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from app.evaluation.metrics import DEFAULT_HAM_RATE_PCT, HAM, roc_points


def plot_roc(
    labels: Sequence[str],
    scores: Sequence[float],
    path: Path,
    title: str,
    operating_point: tuple[float, float] | None = None,
) -> None:
    """Write the ROC curve (hm% log scale vs spam caught %) of ``scores`` to ``path`` (PNG).

    ``operating_point`` is (hm%, sm%) of the filter's own verdicts, marked on the curve.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n_ham = sum(1 for label in labels if label == HAM)
    floor = 100.0 / (2 * n_ham) if n_ham else 0.01
    points = roc_points(labels, scores)
    xs = [max(100.0 * fp, floor) for fp, _ in points]
    ys = [100.0 * tp for _, tp in points]

    figure = Figure(figsize=(6.4, 4.8), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.plot(xs, ys, label="ROC (log-odds)")
    axes.axvline(DEFAULT_HAM_RATE_PCT, color="grey", linestyle=":", label="hm% = 0.1")
    if operating_point is not None:
        hm, sm = operating_point
        axes.plot([max(hm, floor)], [100.0 - sm], "o", color="red", label="verdicts")
    axes.set_xscale("log")
    axes.set_xlim(floor, 100.0)
    axes.set_ylim(0.0, 100.5)
    axes.set_xlabel("ham misclassified, hm% (log scale)")
    axes.set_ylabel("spam caught, 100 - sm%")
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(loc="lower right")
    figure.savefig(path, format="png")
