"""A run resumed from another working directory reads the relative paths its config.yaml recorded (data,
tokenizer, shards, init) from the directory it started in: config.yaml keeps that directory as ``workdir``
(``config.WORKDIR``, written when a run starts; ``config.layered`` drops it, as it is not a setting)."""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path
from typing import Any

from warmstart import config as C
from warmstart.data.globbed import is_pattern, matches

# the settings that name files or directories (a name from `warmstart data list` stays as it is)
PATH_KEYS = ("init", "data.dataset", "data.train_file", "data.validation_file", "data.test_file",
             "data.corpus", "data.shards", "data.tokenizer", "aux.corpus", "embeddings.vectors")  # fmt: skip


def recorded(settings: dict) -> dict:
    """A new run's config.yaml: its ``settings`` and the working directory it starts in."""
    return {**settings, C.WORKDIR: os.getcwd()}


def resumed_paths(run_dir: str | Path, settings: dict) -> dict:
    """A resumed run's ``settings`` with each relative path (``PATH_KEYS``) that is not found from here, but
    is from the run's ``workdir``, joined to it, said in one line; unchanged (and nothing said) when the run
    is resumed where it started or has no workdir (written before it was recorded)."""
    config = Path(run_dir) / "config.yaml"
    workdir = C.load_yaml(config).get(C.WORKDIR) if config.is_file() else None
    if not isinstance(workdir, str) or not os.path.isabs(workdir):
        return settings
    out, moved = copy.deepcopy(settings), []
    for key in PATH_KEYS:
        section, _, leaf = key.rpartition(".")
        node = out.get(section) if section else out
        if not isinstance(node, dict) or leaf not in node:
            continue
        value = node[leaf]
        items = value if isinstance(value, list) else [value]
        found = [_found_in(item, workdir) for item in items]
        if found != items:
            node[leaf] = found if isinstance(value, list) else found[0]
            moved.append(key)
    if moved:
        print(f"resume: {', '.join(moved)} read from {workdir}, where the run started", file=sys.stderr)
    return out


def _found_in(value: Any, workdir: str) -> Any:
    """``workdir/value`` when ``value`` is a relative path found there and not here, else ``value``."""
    if not isinstance(value, str) or not value or value.startswith("~") or os.path.isabs(value):
        return value
    there = os.path.join(workdir, value)
    if is_pattern(value):  # a file pattern: where its files are
        return there if not matches(value) and matches(value, workdir) else value
    return there if not os.path.lexists(value) and os.path.lexists(there) else value
