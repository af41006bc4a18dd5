"""What a study is: the pretrained run, the dataset, fractions, seeds and finetune settings (DIR/study.yaml).

A study directory belongs to one spec. Rerunning the same command resumes it; another spec on the same
directory is refused before anything is touched (``--overwrite`` starts it again).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from warmstart.atomic import check_writable, write_atomic
from warmstart.config import load_yaml, parse_override
from warmstart.data.subsets import check_fraction
from warmstart.errors import WarmstartError
from warmstart.registry import TASKS as FINETUNE_TASKS
from warmstart.study.arms import STABILITY_KEYS

SPEC_FILE = "study.yaml"
# dataset kind -> (finetune task, baseline model): the tasks with a study baseline
TASKS = {t.kind: (t.name, t.study_baseline) for t in FINETUNE_TASKS.values() if t.study_baseline}
# finetune keys the study sets itself, and the option that sets them
CONTROLLED = {
    "init": "the RUN argument",
    "from_scratch": "the study (it runs both)",
    "out": "--out",
    "seeds": "--seeds",
    "epochs": "--epochs",
    "data.dataset": "--data",
    "data.train_fraction": "--fractions",
    "data.subset_seed": "--seeds",
    "train.seed": "--seeds",
    "task.name": "the dataset (labeled text: classification; tagged words: tagging)",
    "breakdown": "the study (cells report their score only)",
}
RESUME_FIX = "rerun the same command to resume it, pass --overwrite to start again, or choose another --out"


@dataclass
class StudySpec:
    run: str
    dataset: str
    fractions: list[float]
    seeds: list[int]
    epochs: float = 3.0
    min_steps: int = 100
    overrides: list[str] = dataclasses.field(default_factory=list)
    full_seeds: list[int] | None = None  # the seeds at fraction 1 (None: ``seeds``); all labels vary least
    max_evals: int = 20  # validation evaluations per cell, at most about (small fractions train many epochs)
    stability: bool = False  # the arms of study/arms.py instead of pretrained vs scratch
    long_epochs: float = 10.0  # a stability study's longer training
    reinit: int = 2  # a stability study's re-initialised top layers

    def __post_init__(self):
        self.run = str(Path(self.run).absolute())
        if not self.fractions:
            raise WarmstartError("no label fractions given", "e.g. --fractions 0.01,0.1,1")
        self.fractions = sorted({check_fraction(f, "each fraction") for f in self.fractions})
        if not self.seeds:
            raise WarmstartError("no seeds given", "e.g. --seeds 1,2,3")
        self.seeds = list(dict.fromkeys(int(s) for s in self.seeds))
        if self.full_seeds is not None:
            if not self.full_seeds:
                raise WarmstartError("no seeds given for fraction 1", "e.g. --full-seeds 1, or leave it out")
            self.full_seeds = list(dict.fromkeys(int(s) for s in self.full_seeds))
        if not self.epochs > 0:
            raise WarmstartError(f"epochs must be above 0, got {self.epochs}", "e.g. --epochs 3")
        if self.min_steps < 0:
            raise WarmstartError(f"min_steps must be 0 or more, got {self.min_steps}", "e.g. --min-steps 100")
        if self.max_evals < 1:
            raise WarmstartError(f"max_evals must be at least 1, got {self.max_evals}", "e.g. --max-evals 20")
        if self.stability and not self.long_epochs > self.epochs:
            raise WarmstartError(
                f"--long-epochs ({self.long_epochs:g}) must be above --epochs ({self.epochs:g})",
                "e.g. --epochs 3 --long-epochs 10",
            )
        if self.stability and self.reinit < 1:
            raise WarmstartError(f"--reinit must be at least 1, got {self.reinit}", "e.g. --reinit 2")
        self.overrides = list(self.overrides)
        check_overrides(self.overrides, STABILITY_KEYS if self.stability else ())

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def seeds_at(self, fraction: float) -> list[int]:
        return self.full_seeds if fraction == 1 and self.full_seeds is not None else self.seeds


def _numbers(text: str, cast, what: str, example: str) -> list:
    try:
        return [cast(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise WarmstartError(
            f"cannot read {what} '{text}'", f"write them comma-separated, e.g. {example}"
        ) from None


def parse_fractions(text: str) -> list[float]:
    """'0.01,0.1,1' -> [0.01, 0.1, 1.0] (each must be in (0, 1])."""
    return [check_fraction(f, "each fraction") for f in _numbers(text, float, "fractions", "0.01,0.1,1")]


def parse_seeds(text: str) -> list[int]:
    return _numbers(text, int, "seeds", "1,2,3")


def _keys(tree: dict, prefix: str = "") -> list[str]:
    out = []
    for k, v in tree.items():
        out += _keys(v, f"{prefix}{k}.") if isinstance(v, dict) else [f"{prefix}{k}"]
    return out


def check_overrides(overrides: list[str], arm_keys: tuple[str, ...] = ()) -> None:
    """Refuse overrides of what the study (or its arms) controls, and classification other than
    single-label."""
    for text in overrides:
        tree = parse_override(text)
        for key in _keys(tree):
            if key in CONTROLLED:
                raise WarmstartError(f"warmstart study sets {key} itself", f"use {CONTROLLED[key]} instead")
            if key in arm_keys:
                raise WarmstartError(
                    f"a stability study sets {key} in its arms", "leave it out (--reinit sets the re-init)"
                )
        task = tree.get("task", {}) if isinstance(tree.get("task"), dict) else {}
        if task.get("problem", "single_label") != "single_label":
            raise WarmstartError(
                f"warmstart study supports single-label classification only, not {task['problem']}",
                "leave task.problem at single_label",
            )


def _differences(old: dict, new: dict) -> list[str]:
    return [f"{k} {old.get(k)!r} -> {new.get(k)!r}" for k in new if old.get(k) != new.get(k)]


GROWS = ("seeds", "full_seeds", "fractions")  # settings a finished study can be extended in


def _cells(d: dict) -> set:
    """(fraction, seed) of every finetuning cell a study's settings ask for."""
    at_one = d["full_seeds"] if d.get("full_seeds") is not None else d["seeds"]
    return {(f, s) for f in d["fractions"] for s in (at_one if f == 1 else d["seeds"])}


def _extends(old: dict, new: dict) -> bool:
    """Whether ``new`` differs from ``old`` only by more seeds or fractions, keeping every old cell."""
    keys = {k for k in new if old.get(k) != new.get(k)}
    return bool(keys) and keys <= set(GROWS) and _cells(old) <= _cells(new)


def check_study_dir(out: Path, spec: StudySpec, overwrite: bool) -> str:
    """'new', 'resume', 'extend' (more seeds or fractions: the finished cells are kept) or 'replace' for
    study directory ``out``; refuses a mismatch before any write."""
    state = dir_state(out, overwrite, SPEC_FILE, "study")
    if state != "resume":
        return state
    before = {"full_seeds": None, "max_evals": 20, "stability": False, "long_epochs": 10.0, "reinit": 2}
    old = {**before, **load_yaml(out / SPEC_FILE)}  # studies written before these settings
    changed = _differences(old, spec.to_dict())
    if _extends(old, spec.to_dict()):
        return "extend"
    if changed:
        raise WarmstartError(f"{out} holds a study with another config ({'; '.join(changed)})", RESUME_FIX)
    return "resume"


def dir_state(out: Path, overwrite: bool, spec_file: str, what: str) -> str:
    """'new' (absent or empty), 'replace' (``overwrite``) or 'resume' (it holds ``spec_file``: the caller
    compares the specs) for the directory ``out`` of a study or a search; anything else is refused."""
    check_writable(out)
    if out.exists() and not out.is_dir():
        raise WarmstartError(f"{out} exists and is not a directory", "choose another --out")
    if not out.exists() or not any(out.iterdir()):
        return "new"
    if overwrite:
        return "replace"
    if not (out / spec_file).is_file():
        raise WarmstartError(
            f"{out} exists and is not a {what} directory (no {spec_file})",
            "choose another --out, or pass --overwrite to replace it",
        )
    return "resume"


def save_spec(out: Path, spec, spec_file: str = SPEC_FILE) -> None:
    """``spec.to_dict()`` as ``out/spec_file`` (YAML), written whole or not at all."""
    import yaml

    text = yaml.safe_dump(spec.to_dict(), sort_keys=False)
    write_atomic(out / spec_file, lambda fh: fh.write(text), text=True)
