"""Which model directory answers for a path: the path itself when it is a model directory, else the checkpoint
of a run directory that warmstart uses, said in one line on stderr when it is not the one asked for.

A run directory holds ``best/`` (the model with the best validation metric), ``final/`` and
``checkpoints/step-NNNNNNNN/``. A finetune's predictions come from ``best/``; everything else (and a
pretraining's predictions and vectors) from ``final/``. When that one is missing the other is used, else the
last step checkpoint, and a line says so ("runs/rt has no best/: predicting with runs/rt/final (the model at
the end of training, step 12)"). One that is there but cannot be loaded (no ``model.safetensors``, weights
only in a pickle, which is never loaded, or a damaged ``config.json``) is refused, not passed over.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from pathlib import Path

from warmstart.checkpoints.card import RunCard
from warmstart.errors import WarmstartError

# weights saved with pickle (torch.save): loading one can run code, so warmstart never does
PICKLED = ("pytorch_model*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl", "*.pickle")
STEP = re.compile(r"step-0*(\d+)")
_SAID: set[Path] = set()  # the fallbacks this process has said already


def read_config(d: Path) -> dict:
    """The config.json of a model directory as a dict; WarmstartError when it is not a JSON object."""
    try:
        data = json.loads((d / "config.json").read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise WarmstartError(
            f"{d / 'config.json'} is not valid JSON ({exc})", "use another checkpoint, or write it again"
        ) from None
    except OSError as exc:
        raise WarmstartError(
            f"cannot read {d / 'config.json'} ({exc.strerror})", "use another checkpoint"
        ) from None
    if not isinstance(data, dict):
        raise WarmstartError(f"{d / 'config.json'} does not hold a JSON object", "use another checkpoint")
    return data


def problem(d: Path) -> str | None:
    """Why ``d`` is not a model directory warmstart loads (None: it is one)."""
    if not (d / "model.safetensors").is_file():
        pickled = sorted(p.name for pattern in PICKLED for p in d.glob(pattern))
        if pickled:
            return f"has no model.safetensors, only {pickled[0]}: a pickle, which warmstart never loads"
        return "has no model.safetensors"
    if not (d / "config.json").is_file():
        return "has no config.json"
    return None


def checked(d: Path, others: str = "") -> Path:
    """``d`` when it is a model directory with a readable config.json, else one line saying what is wrong
    (``others``: the run's checkpoints to pass instead)."""
    what = problem(d)
    if what is not None:
        fix = f"pass another checkpoint{others}"
        if "pickle" in what:
            fix = f"convert it to model.safetensors (safetensors.torch.save_file), or {fix}"
        raise WarmstartError(f"{d} {what}", fix)
    read_config(d)
    return d


def _looks_like_model(path: Path) -> bool:
    """A directory meant as a model directory (weights or a config.json of its own), not a run directory."""
    own = (path / "config.json").exists() or (path / "model.safetensors").exists()
    return own or any(any(path.glob(pattern)) for pattern in PICKLED)


def steps(run: Path) -> list[Path]:
    """The complete step checkpoints of ``run``, oldest first."""
    found = run / "checkpoints"
    dirs = [p for p in found.glob("step-*") if STEP.fullmatch(p.name)] if found.is_dir() else []
    return sorted((p for p in dirs if problem(p) is None), key=lambda p: int(STEP.fullmatch(p.name)[1]))


def finetuned(d: Path) -> bool:
    return RunCard.read(read_config(d)).finetuned


def pick(path: str | Path, prefer: str = "final") -> tuple[Path, Path | None]:
    """(the model directory for ``path``, the checkpoint asked for when another one answers, else None); see
    the module docstring. ``prefer="best"``: best/ for a finetune, final/ for a pretraining (its best/ only
    had the lowest validation loss)."""
    path = Path(path)
    if _looks_like_model(path):
        return checked(path), None
    best, final = path / "best", path / "final"
    if prefer == "best":  # a pretraining run: final/, the model export and `finetune --init` take
        probe = next((d for d in (final, best) if problem(d) is None), None)
        prefer = "final" if probe is not None and not finetuned(probe) else prefer
    order = [final, best] if prefer == "final" else [best, final]
    for d in order:
        if d.exists():
            return checked(d, f" of the run ({available(path)})"), None if d == order[0] else order[0]
    found = steps(path)
    if found:
        return found[-1], order[0]
    if not path.exists():
        raise WarmstartError(f"no model found in {path}: it does not exist", _near(path))
    raise WarmstartError(
        f"no model found in {path}",
        f"pass a run directory or a checkpoint directory from warmstart (here: {available(path)})",
    )


def _near(path: Path) -> str:
    """What to pass instead of a path that does not exist: its parent's entries of close names."""
    parent = path.parent
    names = [p.name for p in parent.iterdir() if p.is_dir()] if parent.is_dir() else []
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(str(parent / n) for n in close) + "?"
    shown = "the current directory" if str(parent) == "." else parent
    where = f"{shown} holds no such folder" if parent.is_dir() else f"{parent} does not exist either"
    return f"pass a run directory or a checkpoint directory from warmstart ({where})"


def resolve_checkpoint(path: str | Path, prefer: str = "final", use: str = "using") -> Path:
    """The model directory for ``path`` (``pick``); when it is not the checkpoint asked for, one line on
    stderr says which one answers (``use``: the verb, "predicting with")."""
    d, wanted = pick(path, prefer)
    if wanted is not None and d not in _SAID:
        _SAID.add(d)
        print(f"{wanted.parent} has no {wanted.name}/: {use} {d} ({describe(d)})", file=sys.stderr)
    return d


def available(run: Path) -> str:
    """The checkpoints ``run`` has that load, e.g. "best, final, step-00000012"; the seeds of a run of
    several."""
    names = [n for n in ("best", "final") if problem(run / n) is None] + [p.name for p in steps(run)]
    seeds = sorted(p.name for p in run.glob("seed-*") if re.fullmatch(r"seed-\d+", p.name))
    if not names and seeds:  # a run of several seeds: each has its own checkpoints
        return f"none (it holds one run per seed: pass one of {', '.join(seeds[:4])})"
    return ", ".join(names) or "none"


def describe(d: Path) -> str:
    """What the checkpoint ``d`` is: "step 12, validation accuracy 0.8", "the model at the end of training,
    step 40", "step 6"."""
    if d.name == "best":
        try:
            info = json.loads((d / "best.json").read_text(encoding="utf-8"))
            value = f"{info['metric']} {float(info['value']):.4g}"
            return f"the best model: step {int(info['step'])}, validation {value}"
        except (OSError, ValueError, KeyError, TypeError):
            return "the best model on validation"
    if d.name == "final":
        step = _last_step(d.parent)
        return "the model at the end of training" + (f", step {step}" if step is not None else "")
    m = STEP.fullmatch(d.name)
    return f"step {int(m[1])}" if m else str(d)


def _last_step(run: Path) -> int | None:
    """The step of the run's last record in metrics.jsonl (read from its end), None when there is none."""
    try:
        with open(run / "metrics.jsonl", "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - 16384))
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            step = json.loads(line).get("step")
        except (ValueError, AttributeError):
            continue
        if isinstance(step, int) and not isinstance(step, bool):
            return step
    return None
