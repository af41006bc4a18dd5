"""What a search is (DIR/search.yaml): the model, the finetune settings, the space, the number of trials and
how each is run. Rerunning the same command resumes the search (and a larger ``--trials`` extends it);
another search on the same directory is refused before anything is touched.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from warmstart.config import load_yaml
from warmstart.errors import WarmstartError
from warmstart.study.spec import RESUME_FIX, dir_state

SPEC_FILE = "search.yaml"
PRUNERS = ("median", "halving", "none")
# what may change between the runs of one search: how many trials, who runs them, what is kept
FREE = {"trials", "workers", "keep_models", "final_seeds", "default"}
# finetune keys the search sets itself, and the option that sets them
CONTROLLED = {"init": "--init", "out": "--out", "seeds": "--repeats or a `seed` dimension"}


@dataclass
class SearchSpec:
    init: str
    flags: dict = dataclasses.field(default_factory=dict)  # finetune keys from the command's flags
    overrides: list[str] = dataclasses.field(default_factory=list)  # finetune KEY=VALUE settings
    space: str = "lectures"  # bert-grid, lectures, or a YAML file (study/search_space.py)
    trials: int = 16
    repeats: int = 1  # seeds per configuration: the trial's value is their mean
    pruner: str = "median"
    final_seeds: int = 3  # the best configuration (and the default recipe) again, on the test split
    sampler_seed: int = 0
    storage: str = ""  # an SQLAlchemy URL; "" is sqlite:///DIR/search.db
    study_name: str = "search"
    workers: int = 1
    keep_models: bool = False
    default: bool = True  # also run the default recipe, the line the search is measured against

    def __post_init__(self):
        self.init = str(Path(self.init).absolute()) if self.init and Path(self.init).exists() else self.init
        for name, least in (("trials", 1), ("repeats", 1), ("workers", 1), ("final_seeds", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                flag = name.replace("_", "-")
                raise WarmstartError(
                    f"--{flag} must be a whole number of at least {least}, got {value!r}",
                    f"e.g. --{flag} {max(least, 3)}",
                )
        if self.pruner not in PRUNERS:
            raise WarmstartError(f"unknown pruner {self.pruner!r}", f"use one of {', '.join(PRUNERS)}")
        for key in CONTROLLED:
            given = [o for o in self.overrides if o.split("=", 1)[0].strip() == key]
            if given or key in self.flags:
                raise WarmstartError(
                    f"{key} is set by the search ({CONTROLLED[key]})", f"drop {given[0] if given else key}"
                )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def storage_url(self, out: Path) -> str:
        return self.storage or f"sqlite:///{(out / 'search.db').absolute()}"


def check_search_dir(out: Path, spec: SearchSpec, overwrite: bool) -> str:
    """'new', 'resume' or 'replace' for search directory ``out``; refuses a mismatch before any write."""
    state = dir_state(out, overwrite, SPEC_FILE, "search")
    if state != "resume":
        return state
    old, new = load_yaml(out / SPEC_FILE), spec.to_dict()
    changed = [
        f"{k}: was {old.get(k)!r}, now {new[k]!r}" for k in new if k not in FREE and old.get(k) != new[k]
    ]
    if changed:
        raise WarmstartError(f"{out} holds a search with other settings ({'; '.join(changed)})", RESUME_FIX)
    return "resume"
