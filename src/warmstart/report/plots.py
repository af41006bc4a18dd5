"""PNG plots of run metrics (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


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
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
