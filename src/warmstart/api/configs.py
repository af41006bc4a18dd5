"""The config sections as typed dataclasses a Python user imports, completes in an IDE and passes where a
section dict is taken (``warmstart.finetune(train=warmstart.TrainConfig(lr=3e-5))``,
``config=warmstart.FinetuneConfig(...)``).

A dataclass instance counts for the fields that differ from its class's defaults, as if the user had
written only those in a dict: ``TrainConfig(lr=3e-5)`` sets ``train.lr`` and leaves every other key to the
command's own defaults (a finetune's batch size 32 and epochs-based steps, not TrainConfig's 1,000 steps).
A field set to its class default therefore reads as not given."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, ClassVar, Protocol, TypeAlias

from warmstart.commands.finetune import FinetuneConfig
from warmstart.data.options import FinetuneDataConfig as DataConfig
from warmstart.generation.decode import GenerationConfig
from warmstart.pretraining.config import PretrainConfig
from warmstart.tasks.base import TaskConfig
from warmstart.train.loop import TrainConfig
from warmstart.train.strategies import StrategyConfig

__all__ = [
    "DataConfig",
    "DataclassInstance",
    "FinetuneConfig",
    "GenerationConfig",
    "PretrainConfig",
    "StrategyConfig",
    "TaskConfig",
    "TrainConfig",
    "PathLike",
    "given",
    "is_config",
    "plain",
]

PathLike: TypeAlias = "str | os.PathLike[str]"  # a path as text or a pathlib.Path


class DataclassInstance(Protocol):
    """Any dataclass instance (the typed config sections)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


def is_config(value: object) -> bool:
    """Whether ``value`` is a dataclass instance (not a dataclass type)."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def given(config: Any) -> dict:
    """The fields of a dataclass instance that differ from its class's defaults, as a nested dict (nested
    sections likewise); paths as text. A field without a default always counts."""
    out: dict = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if is_config(value):
            inner = given(value)
            if inner:
                out[f.name] = inner
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        if default is dataclasses.MISSING or value != default:
            out[f.name] = os.fspath(value) if isinstance(value, os.PathLike) else value
    return out


def plain(value: Any) -> Any:
    """A section as the commands read it: a dataclass instance as its given fields, other values as they
    are."""
    return given(value) if is_config(value) else value
