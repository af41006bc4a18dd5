"""How a sentence-transformers model turns token states into a sentence vector, as its directory declares
it: ``modules.json`` lists a Pooling module (its ``config.json`` picks cls, mean or max over the tokens)
and, often, a Normalize module (unit length). all-MiniLM-L6-v2 declares mean pooling and normalization; a
user who pooled its [CLS] state would get other vectors than every sentence-transformers user does. hub/
records the declaration at import; inference/encode.py pools as it says."""

from __future__ import annotations

import json
from pathlib import Path

MODES = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_max_tokens": "max",
}


def declared(directory: str | Path | None) -> dict | None:
    """{"pooling", "normalize", "max_length"} declared by a sentence-transformers directory, or None."""
    if not directory:
        return None
    d = Path(directory)
    try:
        modules = json.loads((d / "modules.json").read_text(encoding="utf-8"))
        kinds = {str(m.get("type", "")).rsplit(".", 1)[-1]: m for m in modules if isinstance(m, dict)}
        pooling = kinds.get("Pooling")
        if pooling is None:
            return None
        config = json.loads(
            (d / pooling.get("path", "1_Pooling") / "config.json").read_text(encoding="utf-8")
        )
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    modes = [name for key, name in MODES.items() if config.get(key)]
    if len(modes) != 1:
        return None  # several modes concatenated, or mean_sqrt_len: not a pooling warmstart reproduces
    out = {"pooling": modes[0], "normalize": "Normalize" in kinds}
    try:
        out["max_length"] = int(json.loads((d / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return out
