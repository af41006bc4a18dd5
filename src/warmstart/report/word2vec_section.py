"""Report section of a word2vec run: training figures, the analogy and similarity tables (word2vec's own
table helpers, from the run's metrics.json) and the projection plot (the run's, or drawn again)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from warmstart.errors import WarmstartError
from warmstart.report.html import Page
from warmstart.report.run_report import fmt, plot_path
from warmstart.word2vec import evaluate as ev
from warmstart.word2vec import plot
from warmstart.word2vec.io import load_vectors


def word2vec_section(page: Page, run_dir: Path, out: Path) -> None:

    m = json.loads((run_dir / "metrics.json").read_text())
    t = m.get("train", {})
    page.heading("Word vectors")
    page.text(", ".join(f"{k} {fmt(v)}" for k, v in t.items() if isinstance(v, int | float)) + ".")
    if "analogy" in m:
        a = m["analogy"]
        sections = [ev.Section(s["name"], s["correct"], s["incorrect"], s["oov"]) for s in a["sections"]]
        result = ev.AnalogyResult(a["path"], a["restrict"], sections, a.get("malformed", 0))
        page.markdown_table(ev.analogy_table(result))
    if m.get("similarity"):
        sims = [_similarity(ev, r) for r in m["similarity"].values()]
        page.markdown_table(ev.similarity_table(sims))
    picture = run_dir / "projection.png"
    if not picture.is_file():
        picture = _projection(run_dir, plot_path(out, "projection"))
    if picture:
        page.image(picture, "PCA projection of word pairs")


def _similarity(ev, r: dict):
    nan = float("nan")
    return ev.SimilarityResult(
        r["dataset"],
        r["path"],
        r["spearman"] if r["spearman"] is not None else nan,
        r["pearson"] if r["pearson"] is not None else nan,
        r["pairs"],
        r["oov"],
    )


def _projection(run_dir: Path, path: Path) -> Path | None:

    try:
        plot.projection_png(load_vectors(run_dir), plot.COUNTRY_CAPITAL + plot.COMPARATIVES, path)
    except WarmstartError as exc:
        warnings.warn(f"no projection plot: {exc}", stacklevel=2)
        return None
    return path
