"""The classification problem read from the labels, as transformers' run_classification.py reads it from
the label column's type, for a new run that does not set ``task.problem``:

- every training label a number, some of them not whole (1.344, "0.5", 2.5): **regression**; whole numbers
  (0, 1, 2) stay classes;
- any training label a list (JSON ``["a", "b"]``, a Parquet list column, an ``hf:`` sequence;
  ``data/labels.py``'s MultiLabel): **multi_label**;
- a label of a text column joined by ``task.label_separator`` (``long|fresh`` in a CSV): **multi_label**
  too, as a multitask member reads it (tasks/multitask_heads.py ``problem_of``).

Said on stderr. ``task.problem`` given, or a resumed run, keeps what it says.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from typing import Any

from warmstart.data.labels import MultiLabel, label_type


def score_example(records: list[dict]) -> Any:
    """The first label that is a number but not a whole one, if every label is a finite number; else None."""
    example = None
    for r in records:
        value = r.get("label")  # a number as data/labels.py counts one (label_type), and finite
        if isinstance(value, MultiLabel) or label_type(value) != "number" or not math.isfinite(float(value)):
            return None
        whole = isinstance(value, int) or (isinstance(value, str) and not any(c in value for c in ".eE"))
        if example is None and not whole:
            example = value
    return example


def problem_from_labels(cfg, task, train: list[dict], explicit: dict, resume):
    """``cfg`` with the task.problem the training labels call for (module docstring), ``task`` reading it;
    otherwise ``cfg`` as it is."""
    if resume or task.name != "classification" or "problem" in explicit.get("task", {}) or not train:
        return cfg
    listed = next((r["label"] for r in train if isinstance(r.get("label"), MultiLabel)), None)
    separator = cfg.task.label_separator
    joined = next(
        (r["label"] for r in train if isinstance(r.get("label"), str) and separator in r["label"]), None
    )
    if listed is not None:
        problem, why = "multi_label", f"the labels are lists (e.g. {list(listed.parts)})"
    elif joined is not None:
        problem, why = "multi_label", f"the labels are joined by '{separator}' (e.g. {joined})"
    elif (example := score_example(train)) is not None:
        problem, why = "regression", f"the labels are numbers, not all whole (e.g. {example})"
    else:
        return cfg
    other = "task.problem=single_label treats them as classes" if problem == "regression" or joined else ""
    print(f"{why}: task.problem={problem}" + (f"; {other}" if other else ""), file=sys.stderr)
    task.cfg = dataclasses.replace(cfg.task, problem=problem)
    return dataclasses.replace(cfg, task=task.cfg)
