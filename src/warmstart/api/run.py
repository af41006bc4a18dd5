"""What ``warmstart.pretrain``, ``finetune`` and ``word2vec`` return: the run's directory, its metrics and
what the command returned, and ``load()`` for the model it trained."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class Run:
    """A run directory and its results. ``metrics``: a finetune's test metrics (the summary over seeds
    when there are several), a pretraining's last validation metrics, word2vec's evaluation."""

    path: Path
    command: str
    result: dict

    @property
    def metrics(self) -> dict:
        r = self.result
        if self.command == "finetune":
            if "summary" in r:
                return r["summary"]
            (only,) = r["runs"].values()
            return only["test_metrics"]["test"]
        if self.command == "word2vec":
            return {k: v for k, v in r.items() if k in ("analogy", "similarity", "train")}
        return r.get("metrics", {})

    def load(self):
        """The trained model (the best one of a finetune), as ``warmstart.load(run.path)``."""
        from warmstart.api.model import load

        return load(self.path)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v:.4g}" for k, v in self.metrics.items() if isinstance(v, int | float))
        return f"Run({self.command}, {str(self.path)!r}{', ' + shown if shown else ''})"
