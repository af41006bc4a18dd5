"""The bar chart of a weight change: one bar per group of weights (embeddings, layer 0, ..., the rest), its
relative change ||W_b - W_a||_F / ||W_a||_F on y; one series of bars per comparison (e.g. per seed), and for a
single comparison the sub-blocks of each layer (attention, feed-forward, norms) as markers."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from warmstart.analysis.weight_change import WeightChange  # noqa: E402
from warmstart.report.plots import save_png  # noqa: E402

YLABEL = r"relative change $\|W_B - W_A\|_F \,/\, \|W_A\|_F$"
MARKERS = {"attention": "^", "cross-attention": "v", "feed-forward": "s", "norms": "o", "forward": ">",
           "backward": "<"}  # fmt: skip


def _value(x: float | None) -> float:
    return float("nan") if x is None else x


def change_plot(series: dict[str, WeightChange], path: Path, title: str, siblings: bool = False) -> Path:
    """``series[label]`` drawn as bars over the groups of the first one, left (embeddings) to right; with
    ``siblings`` (the report's figure) also as PATH.svg and PATH.pdf."""
    names = [g.name for g in next(iter(series.values())).groups]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.8 * len(names) + 2), 4.2), dpi=110)
    width = 0.8 / len(series)
    for i, (label, change) in enumerate(series.items()):
        by_name = {g.name: g for g in change.groups}
        xs = [k + (i - (len(series) - 1) / 2) * width for k in range(len(names))]
        ys = [_value(by_name[n].relative) if n in by_name else float("nan") for n in names]
        bars = ax.bar(xs, ys, width=width * 0.95, label=label if len(series) > 1 else "whole group",
                      color=None if len(series) > 1 else "#8fb3d9")  # fmt: skip
        if len(series) == 1:
            ax.bar_label(bars, fmt="%.3g", fontsize=7, padding=2)
    if len(series) == 1:
        _sub_block_markers(ax, next(iter(series.values())), names)
    ax.set_xticks(range(len(names)))
    tilt = len(names) > 5
    ax.set_xticklabels(names, rotation=30 if tilt else 0, ha="right" if tilt else "center")
    ax.set_xlabel("group of weights (bottom of the model on the left)")
    ax.set_ylabel(YLABEL)
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    return save_png(fig, path, siblings=siblings)


def _sub_block_markers(ax, change: WeightChange, names: list[str]) -> None:
    where = {n: k for k, n in enumerate(names)}
    subs = sorted({s for g in change.groups for s in g.blocks}, key=lambda s: list(MARKERS).index(s)
                  if s in MARKERS else len(MARKERS))  # fmt: skip
    for sub in subs:
        pts = [(where[g.name], _value(g.blocks[sub])) for g in change.groups if sub in g.blocks]
        ax.plot([x for x, _ in pts], [y for _, y in pts], linestyle="none", marker=MARKERS.get(sub, "x"),
                markersize=5, label=sub)  # fmt: skip
