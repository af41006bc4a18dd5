"""``Model.evaluate(data, ...)``: a finetuned model's metrics on labeled data from Python, as `warmstart
evaluate` prints them and as transformers' ``Trainer.evaluate(eval_dataset)`` returns them for a dataset.

Data in memory (a DataFrame, a list of dicts, a dict of columns, a ``datasets.Dataset``) and a single file
are scored whole; a dataset name or a folder of splits gives its ``split`` (default test). The columns read
are the ones named, else those the run was finetuned with."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from warmstart.api import checks
from warmstart.api.data import as_source
from warmstart.data import inline
from warmstart.data.dataset import DataOptions

SPLITS = ("test", "validation", "train", "dev")  # dev: validation


def evaluate_model(model, data: Any, split: str | None, columns: dict[str, Any]) -> dict:
    """{"metrics", "examples", "dataset", "split", "breakdown" (single-label classifiers and taggers)}."""
    from warmstart.inference.evaluate import evaluate_run

    fn = "evaluate"
    split = {"dev": "validation"}.get(checks.word(fn, "split", split, SPLITS, none=True), split)
    for name, value in columns.items():
        checks.word(fn, name, value, none=True)
    source = as_source(data, "data", fn)
    whole = inline.is_inline(source) or (isinstance(data, str | os.PathLike) and Path(source).is_file())
    options = dataclasses.replace(DataOptions(), **columns)  # None: the run's own column
    if whole:  # in memory or one file: every row scored, as the split asked for (default test)
        return evaluate_run(str(model.path), None, split or "test", options, files={split or "test": source})
    return evaluate_run(str(model.path), source, split or "test", options, split_given=split is not None)
