"""``Trackers``: one run's trackers (``train.report_to``), fed by the run logger and closed by the run.

The fit loop opens them (``start``) once it knows where the run resumes from; every record of metrics.jsonl
then reaches each as ``split/key`` scalars at its step (``scalars``). ``finish`` logs the test metrics as
``test/<metric>`` and the run's files (config.yaml, metrics.jsonl, test_metrics.json, PNGs) and ends them;
a failed or interrupted run ends them as failed (``close``), and a later ``--resume`` continues the same
tracker runs by the ids kept in RUN/trackers.json. A finetune run keeps them open across fit and the test
scoring by passing its own ``Trackers`` to ``fit``. Under torchrun only the first process reports."""

from __future__ import annotations

import atexit
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from warmstart.atomic import write_atomic
from warmstart.config import load_yaml
from warmstart.train import distributed as ddp
from warmstart.train.resume import flat
from warmstart.train.trackers import check_installed, chosen
from warmstart.train.trackers.mlflow import MLflow
from warmstart.train.trackers.tensorboard import TensorBoard
from warmstart.train.trackers.wandb import WandB

STATE_FILE = "trackers.json"
CONFIG_FILE = "config.yaml"
OPEN = {"tensorboard": TensorBoard, "mlflow": MLflow, "wandb": WandB}  # each imports its library when opened


@dataclass
class TrackedRun:
    """What a backend needs to open its run: where, under what name, and the resolved config."""

    dir: Path
    name: str  # the run directory's name; one seed of several: PARENT/seed-N
    group: str | None  # several seeds: the parent run's name
    config: dict  # the resolved config, nested
    resume_step: int | None  # None: a fresh run; else the step it resumes from (-1: from the start)

    @property
    def params(self) -> dict:
        """The config as flat dotted keys (``train.lr``)."""
        return flat(self.config)

    @property
    def config_text(self) -> str:
        return yaml.safe_dump(self.config, sort_keys=False)


class Trackers:
    """The trackers ``report_to`` names for the run in ``run_dir``; nothing until ``start``."""

    def __init__(self, run_dir: str | Path, report_to: list[str]):
        self.run_dir, self.names = Path(run_dir), chosen(report_to)
        self.backends: list = []
        self.step = 0

    def start(self, train_cfg, resume_step: int | None) -> None:
        """Open (or, resuming, continue) each tracker's run and log the config; the first process only."""
        if not self.names or not ddp.is_main():
            return
        check_installed(self.names)
        run = self._tracked(train_cfg, resume_step)
        saved = self._saved()
        try:
            for name in self.names:
                self.backends.append(OPEN[name](run, saved.get(name)))
        except BaseException:  # one would not open (W&B without a login...): those opened end too
            self.close(False)
            raise
        state = {**saved, **{b.name: b.state for b in self.backends if b.state}}
        if state != saved:
            text = json.dumps(state, indent=2) + "\n"
            write_atomic(self.run_dir / STATE_FILE, lambda f: f.write(text), text=True)
        atexit.register(self.close, False)  # a run that dies before finish still ends its tracker runs

    def scalars(self, step: int, values: dict[str, float]) -> None:
        self.step = max(self.step, step)
        for backend in self.backends:
            backend.scalars(step, values)

    def finish(self, step: int | None = None, test: dict | None = None) -> None:
        """Log ``test`` (a finetune run's test metrics) as ``test/<metric>`` and the run's files, then end
        each tracker's run as finished."""
        if not self.backends:
            return
        step = self.step if step is None else step
        scores = {f"test/{k}": float(v) for k, v in (test or {}).items() if _number(v)}
        for backend in self.backends:
            backend.finish(step, scores, self._files())
        self.close(True)

    def close(self, ok: bool = False) -> None:
        """End each tracker's run (as failed unless ``ok``); once."""
        backends, self.backends = self.backends, []
        for backend in backends:
            backend.close(ok)
        if backends:
            atexit.unregister(self.close)

    def _tracked(self, train_cfg, resume_step: int | None) -> TrackedRun:
        home = next((p for p in (self.run_dir, *self.run_dir.parents) if (p / CONFIG_FILE).is_file()), None)
        config = load_yaml(home / CONFIG_FILE) if home is not None else {}
        config["train"] = dataclasses.asdict(train_cfg)  # as trained: a seed's own train.seed, settled steps
        seed_of = home is not None and home != self.run_dir
        name = f"{home.name}/{self.run_dir.name}" if seed_of else self.run_dir.name
        return TrackedRun(self.run_dir, name, home.name if seed_of else None, config, resume_step)

    def _saved(self) -> dict:
        path = self.run_dir / STATE_FILE
        try:
            saved = json.loads(path.read_text()) if path.is_file() else {}
        except ValueError:
            saved = {}
        return saved if isinstance(saved, dict) else {}

    def _files(self) -> list[Path]:
        """The run's files worth keeping beside its metrics (weights excepted)."""
        d = self.run_dir
        config = next((p / CONFIG_FILE for p in (d, *d.parents) if (p / CONFIG_FILE).is_file()), None)
        named = [config, d / "metrics.jsonl", d / "test_metrics.json", d / "best" / "best.json"]
        return [p for p in named if p is not None and p.is_file()] + sorted(d.glob("*.png"))


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
