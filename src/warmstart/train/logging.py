"""Run logs: metrics as JSON lines, passed on to the run's trackers (TensorBoard, MLflow, W&B), plus the
console progress bar."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tqdm.auto import tqdm

from warmstart.atomic import write_atomic


class RunLogger:
    """Appends ``{"step", "split", ...}`` records to RUN/metrics.jsonl, and each numeric value to the run's
    ``trackers`` (train/trackers/run.py) as the scalar ``split/key`` at ``step``.

    On resume from step ``s`` the records after ``s`` (written by the interrupted run) are dropped from the
    JSONL file (the trackers drop or skip theirs: TensorBoard's ``purge_step``), so the logs read as one
    uninterrupted run.
    """

    def __init__(self, run_dir: Path, resume_step: int | None = None, trackers=None):
        self.path = Path(run_dir) / "metrics.jsonl"
        if resume_step is not None and self.path.exists():  # rewritten atomically: a kill loses nothing
            kept = [r for r in self.path.read_text().splitlines() if _step(r) <= resume_step]
            write_atomic(self.path, lambda f: f.write("".join(r + "\n" for r in kept)), text=True)
        self.trackers = trackers
        self.file = open(self.path, "a", encoding="utf-8")

    def log(self, step: int, split: str, values: dict) -> None:
        record = {"step": step, "split": split, "time": round(time.time(), 3), **values}
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        scalars = {f"{split}/{k}": float(v) for k, v in values.items() if isinstance(v, int | float)}
        if self.trackers is not None and scalars:
            self.trackers.scalars(step, scalars)

    def close(self) -> None:
        """Close the JSONL file; the trackers are ended by the run that opened them (fit, or finetune)."""
        self.file.close()


def _step(line: str) -> float:
    """The step of a JSONL record; a torn line (a kill mid-write) sorts after every step."""
    try:
        return json.loads(line)["step"]
    except (ValueError, KeyError, TypeError):
        return float("inf")


def read_metrics(run_dir: Path, split: str | None = None) -> list[dict]:
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        return []
    rows = [json.loads(r) for r in path.read_text().splitlines() if r]
    return [r for r in rows if split is None or r["split"] == split]


def series(rows: list[dict], key: str) -> tuple[list, list]:
    """(steps, values) of ``key`` in the metric rows that have it: one curve to plot."""
    rows = [r for r in rows if key in r]
    return [r["step"] for r in rows], [r[key] for r in rows]


def progress(total: int, initial: int, desc: str, enabled: bool = True) -> tqdm:
    return tqdm(
        total=total,
        initial=initial,
        desc=desc,
        unit="step",
        dynamic_ncols=True,
        file=sys.stderr,
        disable=not enabled,
        smoothing=0.1,
    )
