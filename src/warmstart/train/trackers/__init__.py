"""Experiment trackers (``train.report_to``): which ones a run reports to, and whether they are installed.

TensorBoard, MLflow and Weights & Biases receive what RUN/metrics.jsonl receives, the resolved config at the
start and the test metrics and the run's files at the end (run.py fans out to one backend per name). This
module stays light: a backend's library is imported only when a run opens it, so ``import warmstart`` does
not pay for MLflow or W&B."""

from __future__ import annotations

import importlib.util

from warmstart.errors import WarmstartError

NAMES = ("tensorboard", "mlflow", "wandb")
_INSTALL = {
    "tensorboard": "pip install tensorboard",
    "mlflow": "pip install 'warmstart[mlflow]'",
    "wandb": "pip install 'warmstart[wandb]'",
}


def chosen(report_to: list[str]) -> list[str]:
    """The trackers named, once each, in order; ``none`` (or an empty list) names none."""
    return [name for name in dict.fromkeys(report_to) if name != "none"]


def valid(report_to: list[str]) -> bool:
    """Known names only, and ``none`` alone (``[none, mlflow]`` says two things)."""
    names = set(report_to)
    return names <= {*NAMES, "none"} and not ("none" in names and len(names) > 1)


def check_installed(report_to: list[str]) -> None:
    """Refuse, in one line, a tracker whose package is missing: called before a run starts."""
    for name in chosen(report_to):
        if importlib.util.find_spec(name) is None:  # also None when sys.modules[name] is None
            raise WarmstartError(f"train.report_to names {name} but {name} is not installed", _INSTALL[name])
