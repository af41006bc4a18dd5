"""Keyword arguments as the commands' settings: the same keys as the CLI's ``key.sub=value`` and config
files. A section is a dict (``train=dict(lr=1e-4, batch_size=16)``), a top-level key a value
(``epochs=3``), and any setting may also come as a dotted string among the positional arguments
(``"train.lr=1e-4"``), read exactly as on the command line. A few sections take a plain value for their
main key: ``task="tagging"`` is ``task.name``, ``strategy="lora"`` is ``strategy.strategy``."""

from __future__ import annotations

import os
from collections.abc import Iterable

from warmstart.errors import WarmstartError

MAIN_KEY = {"task": "name", "strategy": "strategy"}


def settings(kwargs: dict, dotted: Iterable[str]) -> tuple[dict, list[str]]:
    """(nested settings, KEY=VALUE overrides) from keyword arguments (None values left out) and strings."""
    flags: dict = {}
    for key, value in kwargs.items():
        if value is None:
            continue
        if key in MAIN_KEY and not isinstance(value, dict):
            value = {MAIN_KEY[key]: value}
        flags[key] = _plain(value)
    overrides = []
    for item in dotted:
        if not isinstance(item, str) or "=" not in item:
            raise WarmstartError(
                f"the positional setting {item!r} is not KEY=VALUE", 'write settings like "train.lr=1e-4"'
            )
        overrides.append(item)
    return flags, overrides


def _plain(value):
    """Paths as text, inside sections too (the config reads strings)."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
