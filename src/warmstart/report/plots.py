"""PNG plots of run metrics (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from warmstart.atomic import write_atomic  # noqa: E402


def save_png(fig, path: Path) -> Path:
    """Write ``fig`` to ``path`` atomically (a crash never leaves half a PNG) and close it."""
    try:
        fig.tight_layout()
        write_atomic(path, lambda fh: fig.savefig(fh, format="png"))
    finally:
        plt.close(fig)
    return Path(path)


def line_plot(
    series: dict[str, tuple[list, list]], title: str, xlabel: str, ylabel: str, path: Path, logy: bool = False
) -> Path:
    """One line per name: ``series[name] = (xs, ys)``."""
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    for name, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="o" if len(xs) < 30 else None, markersize=3, label=name)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend()
    return save_png(fig, path)


def bar_plot(values: dict[str, list[float]], title: str, ylabel: str, path: Path) -> Path:
    """One bar per name at the median of its values, with a min-max whisker and the values as dots."""
    import statistics

    names = list(values)
    medians = [statistics.median(values[n]) for n in names]
    low = [m - min(values[n]) for m, n in zip(medians, names)]
    high = [max(values[n]) - m for m, n in zip(medians, names)]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    ax.bar(names, medians, yerr=[low, high], capsize=4, color="#8fb3d9")
    for i, n in enumerate(names):
        ax.plot([i] * len(values[n]), values[n], "k.", markersize=4)
    lo = min(min(v) for v in values.values())
    ax.set_ylim(max(0.0, lo - 0.05), max(max(v) for v in values.values()) + 0.02)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, axis="y")
    return save_png(fig, path)
