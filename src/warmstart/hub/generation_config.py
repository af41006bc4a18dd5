"""``generation_config.json`` of an exported model that writes text: transformers' ``generate`` and its
pipelines then decode as `warmstart generate` does by default (greedy, at most 50 new tokens, stopping at
the end-of-sequence token), where without it they stop at ``max_length`` 20, prompt included."""

from __future__ import annotations

import json
from pathlib import Path

from warmstart.generation.decode import GenerationConfig
from warmstart.hub.tokenizer import writes_text

_IDS = ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id")


def write_generation_config(d: Path, hf_config: dict) -> None:
    """Write ``d/generation_config.json`` when the export (its ``hf_config``) writes text; else nothing."""
    if not writes_text(hf_config):
        return
    ours = GenerationConfig()
    config = {
        "max_new_tokens": ours.max_new_tokens,
        "do_sample": ours.strategy == "sample",
        "num_beams": 1,
        **{k: hf_config[k] for k in _IDS if hf_config.get(k) is not None},
    }
    text = json.dumps(config, indent=2) + "\n"
    (d / "generation_config.json").write_text(text, encoding="utf-8")
