"""Plots of run metrics (matplotlib, no display needed), and what every report figure shares: titles wrapped
to fit the canvas, annotations kept inside their axes, integer step ticks, learning rates as 1e-4, an EMA of
per-step curves, and the SVG and PDF written beside the PNG."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Annotation  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

from warmstart.atomic import write_atomic  # noqa: E402

SIBLINGS = ("svg", "pdf")  # written beside a report figure's PNG, same stem
# text stays text in the PDF (TrueType, not Type 3: what publishers ask for); no dates, so reruns match
RC = {"pdf.fonttype": 42, "svg.hashsalt": "warmstart"}
METADATA = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}


def save_png(fig, path: Path, siblings: bool = False) -> Path:
    """Write ``fig`` to ``path`` atomically (a crash never leaves half a PNG) and close it; with
    ``siblings``, the same figure as PATH.svg and PATH.pdf too. Titles are wrapped to fit the canvas first
    and offset annotations moved back inside their axes."""
    path = Path(path)
    try:
        fit_titles(fig)
        fig.tight_layout()
        if fit_titles(fig):  # the axes moved: a title may now reach the edge
            fig.tight_layout()
        keep_annotations_inside(fig)
        with matplotlib.rc_context(RC):
            write_atomic(path, lambda fh: fig.savefig(fh, format="png"))
            for ext in SIBLINGS if siblings else ():
                write_atomic(path.with_suffix(f".{ext}"), _writer(fig, ext))
    finally:
        plt.close(fig)
    return path


def _writer(fig, ext: str):
    return lambda fh: fig.savefig(fh, format=ext, metadata=METADATA[ext])


def fit_titles(fig) -> bool:
    """Wrap each axes title (narrower than its column of the grid, and than twice the room from its axes'
    centre to the nearer canvas edge) and each figure text (narrower than the figure) onto more lines until
    it fits: a title is never clipped by the canvas edge. True when a title was wrapped."""
    renderer = fig.canvas.get_renderer()
    full = fig.bbox.width * 0.96
    texts = [(t, full) for t in fig.texts]
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        cols = spec.get_gridspec().ncols if spec is not None else 1
        ax.apply_aspect()  # an image's axes shrink to its aspect: the title centres on what is left
        box = ax.get_position()  # in figure fractions
        centre = (box.x0 + box.x1) / 2
        texts.append((ax.title, min(full / cols, 2 * min(centre, 1 - centre) * full)))
    wrapped = False
    for text, width in texts:
        words = " ".join(text.get_text().split())
        chars = len(words)
        while words and text.get_window_extent(renderer).width > width and chars > 10:
            chars = max(10, int(chars * min(0.9, width / text.get_window_extent(renderer).width)))
            text.set_text("\n".join(textwrap.wrap(words, chars)))
            wrapped = True
    return wrapped


def keep_annotations_inside(fig) -> None:
    """Flip an annotation placed at an offset from its point (e.g. "best 20" beside a star) to the other
    side of the point where it would cross its axes' edge."""
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        for t in ax.texts:
            if not isinstance(t, Annotation) or t.anncoords != "offset points" or not t.get_text():
                continue
            b = t.get_window_extent(renderer)
            dx, dy = t.xyann
            if b.x1 > box.x1:
                t.set_horizontalalignment("right")
                dx = -abs(dx)
            elif b.x0 < box.x0:
                t.set_horizontalalignment("left")
                dx = abs(dx)
            if b.y1 > box.y1:
                t.set_verticalalignment("top")
                dy = -abs(dy)
            if b.y0 < box.y0:
                t.set_verticalalignment("bottom")
                dy = abs(dy)
            t.xyann = (dx, dy)


def integer_ticks(ax) -> None:
    """Whole-number ticks on the x axis (steps, counts): no 2.5."""
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def short_number(v: float, _pos=None) -> str:
    """A learning rate as people write it: 1e-4, 2.5e-4, 0 (not 0.00010)."""
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else str(v)
    mantissa, exponent = f"{v:.2e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def rate_axis(ax) -> None:
    """The y axis of a learning-rate plot in short scientific notation, no offset text."""
    ax.yaxis.set_major_formatter(FuncFormatter(short_number))


def ema_factor(points: int) -> float:
    """The smoothing factor for a curve of ``points`` values: about a tenth of it averaged, 0.6 to 0.95."""
    return round(min(0.95, max(0.6, 1 - 10 / max(points, 1))), 2)


def ema(ys: list[float], factor: float) -> list[float]:
    """Exponential moving average with bias correction (as TensorBoard draws it): the first values are not
    pulled toward zero. A value that is not finite is skipped (its point is NaN)."""
    out, s, n = [], 0.0, 0
    for y in ys:
        if y is None or not math.isfinite(y):
            out.append(float("nan"))
            continue
        n += 1
        s = factor * s + (1 - factor) * y
        out.append(s / (1 - factor**n))
    return out


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
