"""The spaces `warmstart search` draws finetuning settings from.

- ``bert-grid``: the BERT paper's grid (Devlin et al. 2019, appendix A.3), batch size {16, 32} x learning
  rate {5e-5, 3e-5, 2e-5} x epochs {2, 3, 4}: 18 configurations, searched exhaustively.
- ``lectures``: the lectures' ranges, "1-3 epochs, batch size 2-32, learning rate 2e-5 - 5e-5" and "use a
  small learning rate (e.g., 1e-5)": learning rate log-uniform in [1e-5, 5e-5], epochs 1 to 3, batch size
  one of 2, 4, 8, 16, 32; searched with TPE.
- a YAML file over any finetune config key, flat (``train.lr: ...``) or nested (``train: {lr: ...}``); each
  leaf is ``{type: float, low: 1e-5, high: 1e-4, log: true}``, ``{type: int, low: 1, high: 4}`` or
  ``{choices: [16, 32]}`` (a list alone is a choice too). ``seed`` is the run's seed as a dimension. A space
  of choices only is a grid (searched exhaustively, in a shuffled order); any range makes it TPE's.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warmstart.config import load_yaml
from warmstart.errors import WarmstartError

DISTRIBUTIONS = ("float", "int", "categorical")  # the YAML key `type` names one
SPEC_KEYS = {"type", "low", "high", "log", "choices", "step"}


@dataclass(frozen=True)
class Dim:
    """One dimension: a config key and the values it takes."""

    key: str
    distribution: str  # float, int, categorical (the YAML key `type`)
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple = ()

    def suggest(self, trial) -> Any:
        """This dimension's value for an Optuna trial."""
        if self.distribution == "categorical":
            return trial.suggest_categorical(self.key, list(self.choices))
        if self.distribution == "int":
            return trial.suggest_int(self.key, int(self.low), int(self.high), log=self.log)
        return trial.suggest_float(self.key, float(self.low), float(self.high), log=self.log)

    def optuna_distribution(self):
        """This dimension as an Optuna distribution."""
        import optuna

        d = optuna.distributions
        if self.distribution == "categorical":
            return d.CategoricalDistribution(list(self.choices))
        if self.distribution == "int":
            return d.IntDistribution(int(self.low), int(self.high), log=self.log)
        return d.FloatDistribution(float(self.low), float(self.high), log=self.log)

    def describe(self) -> str:
        if self.distribution == "categorical":
            return f"{self.key} in {{{', '.join(map(str, self.choices))}}}"
        return f"{self.key} {'log-' if self.log else ''}{self.distribution} in [{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class Space:
    name: str
    dims: tuple[Dim, ...]

    @property
    def grid(self) -> bool:
        """Choices only: every combination is tried once, exhaustively."""
        return all(d.distribution == "categorical" for d in self.dims)

    def points(self, seed: int = 0) -> list[dict]:
        """The grid's combinations in a shuffled order (``seed``), each a {key: value}."""
        combos = [
            dict(zip([d.key for d in self.dims], c))
            for c in itertools.product(*(d.choices for d in self.dims))
        ]
        random.Random(seed).shuffle(combos)
        return combos

    def example(self) -> dict:
        """One point of the space: each choice's first, each range's low end."""
        return {d.key: d.choices[0] if d.distribution == "categorical" else d.low for d in self.dims}

    def size(self) -> int | None:
        return math.prod(len(d.choices) for d in self.dims) if self.grid else None

    def describe(self) -> str:
        return f"{self.name}: " + ", ".join(d.describe() for d in self.dims)


NAMED = {
    "bert-grid": Space(
        "bert-grid",
        (
            Dim("train.batch_size", "categorical", choices=(16, 32)),
            Dim("train.lr", "categorical", choices=(5e-5, 3e-5, 2e-5)),
            Dim("epochs", "categorical", choices=(2, 3, 4)),
        ),
    ),
    "lectures": Space(
        "lectures",
        (
            Dim("train.lr", "float", low=1e-5, high=5e-5, log=True),
            Dim("epochs", "int", low=1, high=3),
            Dim("train.batch_size", "categorical", choices=(2, 4, 8, 16, 32)),
        ),
    ),
}


def open_space(name: str) -> Space:
    """A named space or a YAML file (module docstring); WarmstartError naming what is wrong."""
    if name in NAMED:
        return NAMED[name]
    path = Path(name)
    if path.suffix.lower() not in (".yaml", ".yml") and not path.exists():
        raise WarmstartError(
            f"unknown search space {name!r}", f"use one of {', '.join(NAMED)} or a YAML file of ranges"
        )
    tree = load_yaml(path)
    dims = tuple(_dim(key, spec, path) for key, spec in _leaves(tree, path))
    if not dims:
        raise WarmstartError(
            f"{path} holds no dimension", "e.g. `train.lr: {type: float, low: 1e-5, high: 1e-4}`"
        )
    return Space(path.name, dims)


def _leaves(tree: dict, path: Path, prefix: str = ""):
    """(dotted key, spec) for each leaf: a list, or a mapping of SPEC_KEYS; other mappings are sections."""
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, list) or (isinstance(value, dict) and value and set(value) <= SPEC_KEYS):
            yield dotted, value
        elif isinstance(value, dict) and value:
            yield from _leaves(value, path, f"{dotted}.")
        else:
            raise WarmstartError(
                f"{path}: {dotted} is {json.dumps(value)}, not a range or a list of choices",
                f"write e.g. `{dotted}: {{type: float, low: 1e-5, high: 1e-4}}` or `{dotted}: [16, 32]`",
            )


def _dim(key: str, spec, path: Path) -> Dim:
    where = f"{path}: {key}"
    if isinstance(spec, list):
        spec = {"choices": spec}
    distribution = spec.get("type", "categorical" if "choices" in spec else "float")
    if distribution not in DISTRIBUTIONS:
        raise WarmstartError(f"{where} has type {distribution!r}", f"use one of {', '.join(DISTRIBUTIONS)}")
    if distribution == "categorical":
        choices = spec.get("choices")
        if not isinstance(choices, list) or not choices:
            raise WarmstartError(f"{where} has no choices", f"e.g. `{key}: {{choices: [16, 32]}}`")
        if any(isinstance(c, dict | list) for c in choices):
            raise WarmstartError(
                f"{where}: each choice must be a number, a word or true/false", "fix the list"
            )
        return Dim(key, distribution, choices=tuple(choices))
    low, high, log = spec.get("low"), spec.get("high"), spec.get("log", False)
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high))
    if not numbers or not math.isfinite(low) or not math.isfinite(high) or not low < high:
        raise WarmstartError(
            f"{where} needs numbers low < high, got low={low!r}, high={high!r}",
            f"e.g. `{key}: {{low: 1, high: 4}}`",
        )
    if distribution == "int" and not (float(low).is_integer() and float(high).is_integer()):
        raise WarmstartError(f"{where}: an int range needs whole numbers", "e.g. low: 1, high: 4")
    if not isinstance(log, bool) or (log and low <= 0):
        raise WarmstartError(f"{where}: log needs true/false and low above 0", "e.g. low: 1e-5, log: true")
    return Dim(key, distribution, low=low, high=high, log=log)


def overrides(params: dict) -> list[str]:
    """A trial's {key: value} as finetune overrides (``seed`` becomes the run's one seed)."""
    out = []
    for key, value in params.items():
        if key == "seed":
            out.append(f"seeds=[{int(value)}]")
        else:
            out.append(f"{key}={json.dumps(value)}")
    return out
