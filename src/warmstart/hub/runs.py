"""Which checkpoint of a run `warmstart export` writes, and what the run directory records about it.

A run directory holds ``best/`` (the model with the best validation metric), ``final/`` and
``checkpoints/step-NNNNNNNN/``. By default export takes the checkpoint warmstart itself uses for that run: for
a finetuned run ``best`` (what `warmstart predict` and `evaluate` load and ``test_metrics.json`` scores), else
``final`` (what `finetune --init` and the other pretrained-model commands load); ``--checkpoint best|final|
step-N`` picks one. A model directory (one holding ``model.safetensors``) is exported as it is.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path

from warmstart.checkpoints.head_view import head_view
from warmstart.checkpoints.resolve import available, checked, finetuned, pick, problem, read_config
from warmstart.config import load_yaml
from warmstart.errors import WarmstartError
from warmstart.train.rundir import CONFIG_FILE

STEP = re.compile(r"step-0*(\d+)")
SEED = re.compile(r"seed-\d+")
NAMED = ("best", "final")


@dataclass(frozen=True)
class Chosen:
    path: Path  # the model directory exported
    name: str  # best, final, step-00000012, or "" for a model directory given as such
    root: Path | None  # the run directory it belongs to (config.yaml, test_metrics.json), when known
    reason: str  # why this one, for the export's output line and the model card
    head: str = ""  # a multitask encoder's head exported (``path``: its view; checkpoints/head_view.py)
    origin: Path | None = None  # then the multitask checkpoint it is a head of

    def says(self) -> str:
        """E.g. "RUN/best (best: ...)"; a model directory given as such: just its path; a head of a multitask
        checkpoint: "RUN/best, head NAME (best: ...)"."""
        where = f"{self.origin}, head {self.head}" if self.head else str(self.path)
        return f"{where} ({self.name}: {self.reason})" if self.name else where

    @property
    def source(self) -> str:
        """What an export came from, as a command takes it: the checkpoint, or "CHECKPOINT --head NAME"."""
        return f"{self.origin} --head {self.head}" if self.head else str(self.path)

    def one_task(self, head: str | None) -> Chosen:
        """This checkpoint as one task's model: the view of head ``head`` of a multitask encoder, or itself
        when ``head`` is None; a multitask encoder without a head, or ``head`` of another model, is
        refused in one line (checkpoints/head_view.py)."""
        view = head_view(self.path, head, strict=True)
        return self if head is None else dataclasses.replace(self, path=view, head=head, origin=self.path)


def _best_info(d: Path) -> str:
    try:
        info = json.loads((d / "best.json").read_text(encoding="utf-8"))
        return f"step {info['step']}, validation {info['metric']} {float(info['value']):.4g}"
    except (OSError, ValueError, KeyError, TypeError):
        return "the best validation metric"


def _named(run: Path, name: str) -> Path:
    if name in NAMED:
        return run / name
    m = STEP.fullmatch(name)
    if m is None:
        raise WarmstartError(
            f"--checkpoint {name} is not a checkpoint name", f"use best, final or step-N ({available(run)})"
        )
    return run / "checkpoints" / f"step-{int(m.group(1)):08d}"


def choose(run: str | Path, checkpoint: str | None = None) -> Chosen:
    """The checkpoint of ``run`` to export: ``checkpoint`` (best, final, step-N) when given, else the one
    warmstart uses for the run (module docstring). Missing ones are refused naming those the run has, and so
    is one that cannot be loaded (a pickle is never loaded): checkpoints/resolve.py."""
    run = Path(run)
    if problem(run) is None:
        if checkpoint is not None:
            raise WarmstartError(
                f"{run} is a model directory, not a run: --checkpoint picks one inside a run directory",
                f"pass the run directory with --checkpoint {checkpoint}, or drop --checkpoint",
            )
        read_config(run)  # a damaged config.json fails here, in one clear line
        return Chosen(run, "", run_root(run), "")
    if not run.is_dir():
        raise WarmstartError(f"{run} is not a directory", "pass a run directory or a model directory")
    if checkpoint is not None:
        d = _named(run, checkpoint)
        if not d.exists():
            raise WarmstartError(
                f"{run} has no checkpoint {checkpoint}", f"pick one it has: {available(run)}"
            )
        checked(d, f" ({available(run)})")
        return Chosen(d, d.name, run, _reason(d, chosen=True))
    d, _ = pick(run, prefer="best")  # what predict (a finetune) or finetune --init (a pretraining) loads
    return Chosen(d, d.name, run, _reason(d, chosen=False))


def _reason(d: Path, chosen: bool) -> str:
    if d.name == "best":
        scored = "; predict, evaluate and test_metrics.json use it" if finetuned(d) else ""
        return f"{_best_info(d)}{scored}"
    if d.name == "final":
        if chosen:
            return "the model at the end of training" + (
                "; test_metrics.json scores best, not this one" if problem(d.parent / "best") is None else ""
            )
        if finetuned(d):
            return "the model at the end of training: the run has no best/"
        return "the model at the end of training, as `finetune --init` uses it"
    return "a step checkpoint" + ("" if chosen else ": the run has no best/ or final/ yet")


def config_file(root: Path | None) -> Path | None:
    """The config.yaml of the run directory ``root``: its own, or for one seed of several (ROOT/seed-N) the
    one of ROOT; None when there is none."""
    if root is None:
        return None
    for d in (root, root.parent) if SEED.fullmatch(root.name) else (root,):
        if (d / CONFIG_FILE).is_file():
            return d / CONFIG_FILE
    return None


def run_root(d: Path) -> Path | None:
    """The run directory a model directory belongs to (RUN/best, RUN/final, RUN/checkpoints/step-N), found
    by its config.yaml; None for a model directory of its own."""
    if d.name in NAMED:
        root = d.parent
    elif STEP.fullmatch(d.name) and d.parent.name == "checkpoints":
        root = d.parent.parent
    else:
        return None
    return root if config_file(root) is not None else None


def run_config(root: Path | None) -> dict:
    """The run's config.yaml as a dict ({} when there is none or it is not a mapping)."""
    path = config_file(root)
    data = load_yaml(path) if path is not None else {}
    return data if isinstance(data, dict) else {}
