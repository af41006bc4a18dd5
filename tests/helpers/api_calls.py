"""Calls of the Python API that would run but for one wrong argument: the rows of tests/api's tables of
wrong arguments (``bad(id, call, argument, kind)``; ``fx``: model (an encoder), pre (its run), tmp (an empty
working directory), file (a text file))."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

import warmstart

FAST = ["train.batch_size=16", "task.max_length=32", "train.progress=false"]
RECORDS = [{"text": "a warm film", "label": "pos"}, {"text": "a dull film", "label": "neg"}] * 4


@dataclass
class Bad:
    id: str
    call: Callable[[SimpleNamespace], object]  # fx: model (an encoder), pre (its run), tmp (empty dir)
    argument: str  # what the message names, as the caller wrote it
    kind: type[Exception] = ValueError  # TypeError: the wrong kind of value; ValueError: a wrong value


def bad(id: str, call: Callable[[SimpleNamespace], object], argument: str, kind: type = ValueError) -> Bad:
    return Bad(id, call, argument, kind)


def ft(fx: SimpleNamespace, **kwargs) -> object:
    """A finetune that would run, but for the one wrong argument in ``kwargs``."""
    given = {"init": fx.pre, "data": RECORDS, "out": fx.tmp / "ft", "steps": 1, **kwargs}
    return warmstart.finetune(*FAST, **given)


def pre(fx: SimpleNamespace, **kwargs) -> object:
    return warmstart.pretrain(
        "train.progress=false", out=fx.tmp / "pre", **{"texts": ["a text"] * 8, **kwargs}
    )


def tok(fx: SimpleNamespace, **kwargs) -> object:
    return warmstart.train_tokenizer(**{"texts": ["a text"] * 8, "out": fx.tmp / "tok", **kwargs})
