"""DIR/study.json: every cell, and per model x fraction the median, min and max over seeds."""

from __future__ import annotations

import json
from pathlib import Path

from warmstart.atomic import write_atomic
from warmstart.errors import WarmstartError
from warmstart.study.seeds import failed_seeds, spread

STUDY_FILE = "study.json"


def summarize(
    cells: list[dict], models: list[str], fractions: list[float], majority: float | None = None
) -> list[dict]:
    """One row per model x fraction (in that order) with every test metric's spread over seeds, and how
    many seeds failed (best validation accuracy at or below ``majority``, the validation majority share;
    finetuned models only: the baseline's fit is not a training run that collapsed)."""
    rows = []
    for model in models:
        for fraction in fractions:
            mine = sorted(
                (c for c in cells if c["model"] == model and c["fraction"] == fraction),
                key=lambda c: c["seed"],
            )
            if not mine:
                continue
            names = [k for k in mine[0]["test"] if k != "loss"]
            trained = not any("C" in c for c in mine)  # a classic baseline (its C) is fitted, not trained
            failed = failed_seeds({c["seed"]: c for c in mine}, majority) if trained else None
            rows.append(
                {
                    "model": model,
                    "fraction": fraction,
                    "train_examples": mine[0]["train_examples"],
                    "seeds": [c["seed"] for c in mine],
                    **{name: spread([c["test"][name] for c in mine]) for name in names},
                    **({"failed": len(failed), "failed_seeds": failed} if failed is not None else {}),
                }
            )
    return rows


def write_study(
    root: Path, spec: dict, dataset: dict, cells: list[dict], models: list[str], metric: str = "accuracy"
) -> dict:
    study = {
        "config": spec,
        "dataset": dataset,
        "metric": metric,
        "models": models,
        "fractions": spec["fractions"],
        "seeds": spec["seeds"],
        "table": summarize(cells, models, spec["fractions"], dataset.get("validation_majority")),
        "cells": cells,
    }
    write_atomic(Path(root) / STUDY_FILE, lambda fh: fh.write(json.dumps(study, indent=2)), text=True)
    return study


def read_study(root: Path) -> dict:
    path = Path(root) / STUDY_FILE
    if not path.is_file():
        raise WarmstartError(
            f"{root} has no {STUDY_FILE}: the study has not finished",
            "rerun the same `warmstart study` command to finish it",
        )
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise WarmstartError(
            f"{path} is not valid JSON", "rerun `warmstart study` to write it again"
        ) from None
