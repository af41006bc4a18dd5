"""Line plots by step side by side in one figure (e.g. pretraining loss | learning rate)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from warmstart.report.plots import ema, ema_factor, integer_ticks, rate_axis, save_png  # noqa: E402


@dataclass
class Panel:
    """One axes: ``series[name] = (steps, values)``. ``smooth``: the names of per-step series drawn raw and
    faint under their EMA (the factor is said in the title). ``rate``: the y axis is a learning rate.
    ``legend``: always drawn (True), never (False), or when there are several series (None)."""

    title: str
    ylabel: str
    series: dict[str, tuple[list, list]]
    smooth: tuple[str, ...] = field(default=())
    rate: bool = False
    legend: bool | None = None


def panel_plot(panels: list[Panel], xlabel: str, path: Path, title: str | None = None) -> Path:
    """``panels`` drawn left to right over integer step ticks; the PNG and its SVG and PDF."""
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.9), dpi=110, squeeze=False)
    for ax, panel in zip(axes[0], panels):
        _draw(ax, panel)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(panel.ylabel)
        ax.grid(alpha=0.3)
        integer_ticks(ax)
        if panel.rate:
            rate_axis(ax)
        named = len(ax.get_legend_handles_labels()[1])
        if named and (panel.legend or (panel.legend is None and named > 1)):
            ax.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=11)
    return save_png(fig, path, siblings=True)


def _draw(ax, panel: Panel) -> None:
    smoothed = [ys for name, (_, ys) in panel.series.items() if name in panel.smooth]
    factor = ema_factor(max((len(ys) for ys in smoothed), default=1))
    for name, (xs, ys) in panel.series.items():
        if name in panel.smooth:
            (raw,) = ax.plot(xs, ys, linewidth=0.8, alpha=0.3)
            ax.plot(xs, ema(ys, factor), linewidth=1.6, color=raw.get_color(), label=name)
        else:
            ax.plot(xs, ys, marker="o" if len(xs) < 30 else None, markersize=3, label=name)
    note = f" (EMA {factor:g}; raw values faint)" if smoothed else ""
    ax.set_title(panel.title + note, fontsize=10)
