"""A median line with a min-max band per series (spread over seeds), optionally on a log x axis."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from warmstart.report.plots import save_png  # noqa: E402


def band_plot(
    series: dict[str, tuple[list, list, list, list]],
    title: str,
    xlabel: str,
    ylabel: str,
    path: Path,
    logx: bool = False,
    levels: dict[str, float] | None = None,
    xticks: list[tuple[float, str]] | None = None,
) -> Path:
    """``series[name] = (xs, medians, mins, maxs)``; ``levels[name] = y``: a dashed horizontal line."""
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    for name, (xs, mid, lo, hi) in series.items():
        (line,) = ax.plot(xs, mid, marker="o" if len(xs) < 30 else None, markersize=4, label=name)
        ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.18, linewidth=0)
    for name, y in (levels or {}).items():
        ax.axhline(y, linestyle="--", color="0.4", linewidth=1, label=name)
    if logx:
        ax.set_xscale("log")
    if xticks:
        ax.set_xticks([x for x, _ in xticks])
        ax.set_xticklabels([label for _, label in xticks])
        ax.minorticks_off()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend()
    return save_png(fig, path)
