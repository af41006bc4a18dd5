"""A median line with a min-max band per series (spread over seeds), optionally on a log x axis."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from warmstart.report.plots import integer_ticks, save_png  # noqa: E402


def band_plot(
    series: dict[str, tuple[list, list, list, list]],
    title: str,
    xlabel: str,
    ylabel: str,
    path: Path,
    logx: bool = False,
    levels: dict[str, float] | None = None,
    xticks: list[tuple[float, str]] | None = None,
    integer_x: bool = False,
    mark_best: bool = False,
    dashed: tuple[str, ...] = (),
) -> Path:
    """``series[name] = (xs, medians, mins, maxs)``: a median line with a min-max band, and min-max error
    bars at each point (a series of one point still shows its spread). ``levels[name] = y``: a baseline, as
    a dashed horizontal line. ``integer_x``: integer ticks (steps, counts). ``mark_best``: a star on each
    series' highest median, labelled with its x (the best step), inside the axes. ``dashed``: series drawn
    as dashed lines (baselines measured at each x, set apart from the models). The PNG, SVG and PDF."""
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    for name, (xs, mid, lo, hi) in series.items():
        if not xs:
            continue
        style = "--" if name in dashed else "-"
        marker = ("s" if name in dashed else "o") if len(xs) < 30 else None
        (line,) = ax.plot(xs, mid, style, marker=marker, markersize=4, label=name)
        colour = line.get_color()
        if len(xs) > 1:
            ax.fill_between(xs, lo, hi, color=colour, alpha=0.18, linewidth=0)
        if len(xs) < 30:
            below = [m - a for m, a in zip(mid, lo)]
            above = [b - m for m, b in zip(mid, hi)]
            ax.errorbar(xs, mid, yerr=[below, above], fmt="none", ecolor=colour, capsize=3, linewidth=1)
        if mark_best and name not in dashed:
            i = max(range(len(mid)), key=mid.__getitem__)
            ax.plot([xs[i]], [mid[i]], marker="*", markersize=13, color=colour, markeredgecolor="black")
            ax.annotate(f"best {xs[i]:,}", (xs[i], mid[i]), xytext=(4, 6), textcoords="offset points",
                        fontsize=8, color=colour)  # fmt: skip
    styles = ["--", ":", "-."]
    for k, (name, y) in enumerate((levels or {}).items()):
        ax.axhline(y, linestyle=styles[k % 3], color="0.35", linewidth=1.2, label=name)
    if logx:
        ax.set_xscale("log")
    if xticks:
        ax.set_xticks([x for x, _ in xticks])
        ax.set_xticklabels([label for _, label in xticks])
        ax.minorticks_off()
    elif integer_x:
        integer_ticks(ax)
    ax.margins(x=0.04, y=0.12)  # room for the star and its label inside the axes
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_png(fig, path, siblings=True)
