"""A transformers model directory where warmstart wants one of its own (``finetune --init``, ``predict``,
``embed``, ``warmstart.load``...): imported once, as ``warmstart import DIR --out ...`` would, into the cache
(``imported/NAME-KEY``, the key a hash of the directory's path and its files' sizes and times, so an edited
model is imported again), said in one line, and that copy used."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from warmstart.hub.convert import import_hf
from warmstart.hub.hub_model import hub_snapshot, is_hub_id
from warmstart.paths import cache_dir
from warmstart.tokenization.leftovers import clear_swaps

_SAID: set[Path] = set()  # the imports this process has named already
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


def is_transformers_dir(path: str | Path) -> bool:
    """A directory whose config.json names a ``model_type`` and has no warmstart run card."""
    config = Path(path) / "config.json"
    if not config.is_file():
        return False
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False  # the loader says what is wrong with it
    return isinstance(data, dict) and "model_type" in data and "warmstart" not in data


def warmstart_dir(path: str | Path | None) -> str | None:
    """``path`` itself, unless it is a transformers model directory, or a hub model id (hub/hub_model.py):
    then its import in the cache."""
    if path and is_hub_id(str(path)):
        path = hub_snapshot(str(path))
    if not path or not is_transformers_dir(path):
        return None if path is None else str(path)
    src = Path(path).resolve()
    key = hashlib.sha256(str(src).encode())
    for name in ("config.json", *WEIGHTS):
        if (src / name).is_file():
            st = (src / name).stat()
            key.update(f"{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    out = cache_dir() / "imported" / f"{src.name}-{key.hexdigest()[:12]}"
    clear_swaps(out.parent)  # what imports killed outright left, of this model or of its older versions
    if (out / "config.json").is_file():
        if out not in _SAID:
            print(f"{path} is a transformers model: using its import in {out}", file=sys.stderr)
        _SAID.add(out)
        return str(out)
    print(f"{path} is a transformers model: importing it into {out} (`warmstart import`)", file=sys.stderr)
    import_hf(src, out, overwrite=out.exists())  # a directory left by an import that was cut short
    _SAID.add(out)
    return str(out)
