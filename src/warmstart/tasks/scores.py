"""Numeric labels that are scores: a classification run whose training labels are all numbers, some of them
not whole (1.344, "0.5", 2.0 written as a float), is a regression, as transformers' run_classification.py
decides from a float label column. Whole numbers (0, 1, 2) stay classes. Said on stderr; ``task.problem``
given, or a resumed run, keeps what it says."""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from typing import Any

WHOLE = re.compile(r"\s*[-+]?\d+\s*")


def score_example(records: list[dict]) -> Any:
    """The first label that is a number but not a whole one, if every label is a finite number; else None."""
    example = None
    for r in records:
        value = r.get("label")
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return None
        try:
            number = float(value)
        except ValueError:
            return None
        if not math.isfinite(number):
            return None
        whole = isinstance(value, int) or (isinstance(value, str) and WHOLE.fullmatch(value) is not None)
        if example is None and not whole:
            example = value
    return example


def scores_as_regression(cfg, task, train: list[dict], explicit: dict, resume):
    """``cfg`` with task.problem=regression (and ``task`` reading it) when a new classification run's
    training labels are scores (module docstring); otherwise ``cfg`` as it is."""
    if resume or task.name != "classification" or "problem" in explicit.get("task", {}):
        return cfg
    example = score_example(train) if train else None
    if example is None:
        return cfg
    print(
        f"the labels are numbers, not all whole (e.g. {example}): task.problem=regression (MSE); "
        "task.problem=single_label treats them as classes",
        file=sys.stderr,
    )
    task.cfg = dataclasses.replace(cfg.task, problem="regression")
    return dataclasses.replace(cfg, task=task.cfg)
