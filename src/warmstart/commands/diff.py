"""`warmstart diff RUN_A RUN_B`: how far the weights of B moved from those of A, layer by layer.

The relative change ||W_B - W_A||_F / ||W_A||_F of the embeddings, of each layer (and its attention,
feed-forward and norms) and of the other modules (:mod:`warmstart.checkpoints.weight_change`), as a table with
a bar per row, as JSON, and as a bar chart. RUN_A and RUN_B are run, model or transformers directories of one
architecture (:mod:`warmstart.report.weight_change_section` says which checkpoint of a run is read).
"""

from __future__ import annotations

from pathlib import Path

from warmstart.analysis.weight_change import WeightChange
from warmstart.atomic import check_writable
from warmstart.errors import WarmstartError
from warmstart.report.weight_change_section import blocks_of, compare_runs, fmt_change, modules
from warmstart.report.weight_plot import change_plot

BAR = 30  # characters of the longest bar
EIGHTHS = " ▏▎▍▌▋▊▉"


def diff(a: str | Path, b: str | Path, plot: str | Path | None = None) -> dict:
    """{"a", "b" (the model directories read), "groups", "only_a", "only_b", "skipped", "table", "plot"}."""
    if plot is not None:
        if Path(plot).suffix.lower() != ".png":
            raise WarmstartError(f"the plot is a PNG file, got {plot}", "pass --plot FILE.png")
        check_writable(plot)
    dir_a, dir_b, change = compare_runs(a, b)
    result = {"a": str(dir_a), "b": str(dir_b), **change.as_dict()}
    result["table"] = text_table(change, dir_a, dir_b)
    if plot is not None:
        Path(plot).parent.mkdir(parents=True, exist_ok=True)
        title = f"weight change: {label(dir_a)} -> {label(dir_b)}"
        result["plot"] = str(change_plot({f"{label(dir_a)} -> {label(dir_b)}": change}, Path(plot), title))
    return result


def label(d: Path) -> str:
    """A model directory's name for a title: RUN for RUN/best and RUN/final, else the directory's own."""
    return f"{d.parent.name}/{d.name}" if d.name in ("best", "final") else d.name


def bar(x: float | None, top: float) -> str:
    if x is None or top <= 0:
        return ""
    eighths = round(x / top * BAR * 8)
    return "█" * (eighths // 8) + (EIGHTHS[eighths % 8] if eighths % 8 else "")


def text_table(change: WeightChange, dir_a: Path, dir_b: Path) -> str:
    """The table `warmstart diff` prints: group, parameters, relative change, sub-blocks, bar."""
    subs = blocks_of(change)
    header = ["group", "parameters", "relative change", *subs, ""]
    top = max((g.relative for g in change.groups if g.relative is not None), default=0.0)
    rows = [
        [g.name, f"{g.params:,}", fmt_change(g.relative),
         *[fmt_change(g.blocks[s]) if s in g.blocks else "" for s in subs], bar(g.relative, top)]
        for g in change.groups
    ]  # fmt: skip
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [f"A: {dir_a}", f"B: {dir_b}", "relative change = ||W_B - W_A||_F / ||W_A||_F per group", ""]
    for r in [header, *rows]:
        cells = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r[:-1], widths))]
        lines.append("  ".join([*cells, r[-1]]).rstrip())
    lines += ["", f"not compared: only in A {modules(change.only_a)}; only in B {modules(change.only_b)}"]
    return "\n".join(lines)
