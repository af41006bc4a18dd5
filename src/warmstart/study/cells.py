"""One cell of a study: a model (pretrained, scratch, tfidf) at one label fraction and one seed.

A cell lives in DIR/cells/MODEL/frac-F/seed-S/. It is done when its cell.json exists: that file is written
atomically, last, so a cell interrupted half-way has none and is started again from scratch. Finetuned cells
run `warmstart finetune` into run/ (its config.yaml, metrics.jsonl with the validation curve,
test_metrics.json); the weights are deleted afterwards unless asked to keep them. Console output of the
cell goes to log.txt.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from warmstart.atomic import write_atomic
from warmstart.data.subsets import nested_subset
from warmstart.study.baseline import tfidf_baseline
from warmstart.study.frequent_tag import frequent_tag_baseline

CELL_FILE = "cell.json"
MAX_EVALS = 20  # small fractions train min_steps over few examples: cap their validation evaluations
WEIGHTS = ("checkpoints", "best", "final")


@dataclass(frozen=True)
class Cell:
    model: str
    fraction: float
    seed: int

    def path(self, root: Path) -> Path:
        return Path(root) / "cells" / self.model / f"frac-{self.fraction:g}" / f"seed-{self.seed}"

    def name(self) -> str:
        return f"{self.model} {self.fraction:.0%} seed {self.seed}"


def read_cell(cell_dir: Path) -> dict | None:
    """The cell's result, or None when it has not finished."""
    try:
        return json.loads((cell_dir / CELL_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def finish_cell(cell_dir: Path, result: dict) -> dict:
    write_atomic(cell_dir / CELL_FILE, lambda fh: fh.write(json.dumps(result, indent=2)), text=True)
    return result


def schedule(
    n_train: int,
    batch_size: int,
    evals_per_epoch: int,
    epochs: float,
    min_steps: int,
    max_evals: int = MAX_EVALS,
) -> dict:
    """Steps and evaluation interval of a finetuned cell with ``n_train`` examples (as `finetune` settles
    them from epochs, with at least ``min_steps`` steps and at most about ``max_evals`` evaluations)."""
    per_epoch = max(1, math.ceil(n_train / batch_size))
    steps = max(math.ceil(epochs * per_epoch), min_steps, 1)
    every = max(1, per_epoch // max(evals_per_epoch, 1), math.ceil(steps / max_evals))
    return {"steps": steps, "eval_every": every}


@contextlib.contextmanager
def fresh_cell(cell_dir: Path):
    """An empty cell directory whose console output goes to log.txt."""
    if cell_dir.exists():
        shutil.rmtree(cell_dir)
    cell_dir.mkdir(parents=True)
    with open(cell_dir / "log.txt", "w", encoding="utf-8") as log:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            yield


def run_baseline_cell(cell: Cell, root: Path, records: dict[str, list[dict]]) -> dict:
    """The task's baseline (TF-IDF + logistic regression for labeled text, the most frequent tag per word
    for tagging) on the same subset the finetuned cells of this fraction and seed use."""

    cell_dir, start = cell.path(root), time.perf_counter()
    subset = {**records, "train": nested_subset(records["train"], cell.fraction, cell.seed)}
    fit = frequent_tag_baseline if cell.model == "frequent_tag" else tfidf_baseline
    with fresh_cell(cell_dir):
        result = fit(subset)
    metric = "f1" if "f1" in result["test"] else "accuracy"
    return finish_cell(
        cell_dir,
        {
            "model": cell.model,
            "fraction": cell.fraction,
            "seed": cell.seed,
            "train_examples": len(subset["train"]),
            "metric": metric,
            "test": result["test"],
            "best_validation": result["validation"][metric],
            "validation": result["validation"],
            "C": result.get("C"),
            "seconds": round(time.perf_counter() - start, 2),
        },
    )
