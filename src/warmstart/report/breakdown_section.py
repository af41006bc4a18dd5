"""The parts of a finetune run's report beyond its score: training loss and learning rate, the validation
curve with its best step, the majority-class baseline, per-class precision/recall/F1 and the confusion matrix
(from test_metrics.json's ``breakdown``, written by `warmstart finetune`)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from warmstart.report.band_plot import band_plot  # noqa: E402
from warmstart.report.html import Page  # noqa: E402
from warmstart.report.panel_plot import Panel, panel_plot  # noqa: E402
from warmstart.report.plots import save_png  # noqa: E402
from warmstart.report.quoting import label, quoted  # noqa: E402
from warmstart.tasks.breakdown import one_class_warning  # noqa: E402
from warmstart.train.logging import read_metrics, series  # noqa: E402

MATRIX_MAX = 20  # classes drawn in the confusion matrix; more: the table only
TABLE_MAX = 30


def training_plot(dirs: dict[str, Path], path: Path) -> Path:
    """Training loss (EMA over the raw values) and learning rate by step, one line per run or seed."""
    train = {name: read_metrics(d, "train") for name, d in dirs.items()}
    loss = {n: series(rows, "loss") for n, rows in train.items()}
    panels = [
        Panel("training loss", "loss", loss, smooth=tuple(loss), legend=True),
        Panel("learning rate", "learning rate", {n: series(rows, "lr") for n, rows in train.items()},
              rate=True, legend=False),  # the loss panel's legend names the colours
    ]  # fmt: skip
    return panel_plot(panels, "step", path)


def validation_plot(dirs: dict[str, Path], metric: str, majority: float | None, path: Path) -> Path:
    """The validation metric by step per seed, each seed's best step starred, the majority baseline dashed."""
    curves = {}
    for name, d in dirs.items():
        xs, ys = series(read_metrics(d, "validation"), metric)
        curves[name] = (xs, ys, ys, ys)
    levels = {"majority class": majority} if majority is not None and metric == "accuracy" else {}
    return band_plot(curves, f"validation {metric}", "step", metric, path, levels=levels, integer_x=True,
                     mark_best=True)  # fmt: skip


def confusion_plot(parts: dict, path: Path) -> Path:
    labels, matrix = [label(x) for x in parts["labels"]], parts["confusion"]
    n = len(labels)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 + 0.45 * n), max(3.4, 1.4 + 0.45 * n)), dpi=110)
    rows = [[v / max(sum(r), 1) for v in r] for r in matrix]  # each gold row as shares
    ax.imshow(rows, cmap="Blues", vmin=0, vmax=1)
    for i in range(n):
        for j in range(n):
            if matrix[i][j]:
                ax.text(j, i, f"{matrix[i][j]:,}", ha="center", va="center", fontsize=7,
                        color="white" if rows[i][j] > 0.5 else "black")  # fmt: skip
    ax.set_xticks(range(n), labels, rotation=90, fontsize=8)
    ax.set_yticks(range(n), labels, fontsize=8)
    ax.set(xlabel="predicted", ylabel="gold")
    ax.set_title("test confusion matrix (counts; shade: share of the gold row)", fontsize=10)
    return save_png(fig, path, siblings=True)


def breakdown_section(page: Page, parts: dict | None, path: Path) -> None:
    """Majority baseline, the one-class warning, per-class table and the confusion matrix."""
    if not parts:
        return
    page.heading("Where the model is right and wrong (test split)")
    m = parts["majority"]
    page.text(
        f"The model predicts {parts['predicted_classes']} of {len(parts['labels'])} classes. Majority-class "
        f"baseline (always {quoted(m['label'])}, the most frequent training label): accuracy "
        f"{m['accuracy']:.4f}."
    )
    warning = one_class_warning(parts)
    if warning:
        page.text(warning)
    per = sorted(parts["per_class"].items(), key=lambda kv: -kv[1]["support"])
    rows = [[label(k), f"{c['precision']:.4f}", f"{c['recall']:.4f}", f"{c['f1']:.4f}", f"{c['support']:,}"]
            for k, c in per[:TABLE_MAX]]  # fmt: skip
    note = f"The {TABLE_MAX} most frequent of {len(per)} classes." if len(per) > TABLE_MAX else None
    page.table(["class", "precision", "recall", "F1", "support"], rows, note)
    if len(parts["labels"]) <= MATRIX_MAX:
        page.image(confusion_plot(parts, path), "confusion matrix")
