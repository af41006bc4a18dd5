"""What a model card says about a run's files: names, never paths.

A card travels (to the hub, to a colleague), so it must not carry the exporting machine's directories: an
absolute path, a home directory or warmstart's cache means nothing elsewhere and tells strangers where things
lie. Every path a run's config.yaml records becomes its run or file name here (``/home/me/runs/pre`` ->
``pre``, ``.../runs/pre/final`` -> ``pre/final``, ``~/.cache/warmstart/inline/57e0.jsonl`` ->
``57e0.jsonl``); hub ids (``hf:imdb``, ``org/model``) and the packaged datasets' names stay as they are.
"""

from __future__ import annotations

import os
from pathlib import Path

from warmstart.data.inline import is_inline, label_of
from warmstart.data.named import NAMED

CHECKPOINTS = ("best", "final")


def exists(value: str) -> bool:
    """Path(value).exists(), False for a name the file system refuses (too long, a NUL byte)."""
    try:
        return Path(value).exists()
    except (OSError, ValueError):
        return False


def is_path(value: str) -> bool:
    """True for a string that names a file or directory: absolute, ``~``/``./``/``../`` in front, or a
    relative path with a separator that exists here. Hub ids (``org/name``) that are no local path are not."""
    if not value or "\n" in value or value.startswith("hf:"):
        return False
    if Path(value).is_absolute() or value.startswith(("~", "./", "../", ".\\", "..\\")):
        return True
    return ("/" in value or os.sep in value) and exists(value)


def _inner(name: str) -> bool:
    return name in CHECKPOINTS or name == "checkpoints" or name.startswith(("step-", "seed-"))


def shown(path: str | Path) -> str:
    """A path as a card names it: its last part, with the run's name in front for a checkpoint directory
    or one seed's run (``run/best``, ``run/seed-1/best``, ``run/checkpoints/step-00000012``)."""
    p = Path(str(path).rstrip("/\\")).expanduser()
    parts = [p.name or str(path)]
    while _inner(p.name) and p.parent.name:
        p = p.parent
        parts.insert(0, p.name)
    return "/".join(parts)


def public(value):
    """``value`` (a config.yaml as loaded: dicts, lists, strings...) with every path replaced by its name."""
    if isinstance(value, dict):
        return {k: public(v) for k, v in value.items()}
    if isinstance(value, list):
        return [public(v) for v in value]
    if isinstance(value, str) and is_path(value):
        return shown(value)
    return value


def dataset_name(value: str) -> tuple[str, str | None]:
    """(name, config) of a dataset as a card names it: ``hf:NAME[:CONFIG]`` -> the hub id (and its config),
    a packaged dataset by its name, a local file by its file name, data given from Python by its label
    ("data['train'] (DataFrame, 800 rows)")."""
    if is_inline(value):
        return label_of(value), None
    if value.startswith("hf:"):
        name, _, config = value.removeprefix("hf:").partition(":")
        return name, config or None
    if value in NAMED:
        return value, None
    return Path(value).name or value, None


def sources(config: dict) -> list[str]:
    """The data a run trained on, as its config.yaml names it: finetuning's data.dataset and any data.*_file
    of its own splits, pretraining's data.corpus; in order, each once."""
    data = config.get("data") or {}
    found = [data.get("dataset")] + [v for k, v in data.items() if k.endswith("_file")]
    found += list(data.get("corpus") or [])
    return list(dict.fromkeys(v for v in found if isinstance(v, str) and v))


def datasets(config: dict) -> list[str]:
    """The names (:func:`dataset_name`) of the data a run trained on, for the card's ``datasets``: data
    given from Python has no name a hub could link to, and is left out."""
    return list(dict.fromkeys(dataset_name(v)[0] for v in sources(config) if not is_inline(v)))


def test_source(config: dict) -> str | None:
    """The data the test split came from: data.test_file when the run was given one, else data.dataset."""
    data = config.get("data") or {}
    value = data.get("test_file") or data.get("dataset")
    return value if isinstance(value, str) and value else None
