"""Line plots side by side in one PNG (e.g. pretraining loss | learning rate)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from warmstart.report.plots import save_png  # noqa: E402


def panel_plot(panels: list[tuple[str, str, dict[str, tuple[list, list]]]], xlabel: str, path: Path) -> Path:
    """``panels = [(title, ylabel, {name: (xs, ys)}), ...]``, drawn left to right."""
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.8), dpi=110, squeeze=False)
    for ax, (title, ylabel, series) in zip(axes[0], panels):
        for name, (xs, ys) in series.items():
            ax.plot(xs, ys, marker="o" if len(xs) < 30 else None, markersize=3, label=name)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if len(series) > 1:
            ax.legend()
    return save_png(fig, path)
