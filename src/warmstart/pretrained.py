"""Load the encoder and tokenizer saved by a warmstart run, for finetuning or inspection."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from safetensors.torch import load_file

from warmstart.errors import WarmstartError
from warmstart.registry import MODELS, lookup
from warmstart.tokenization import Tokenizer


def resolve_checkpoint(path: str | Path) -> Path:
    """A model directory: the path itself if it holds weights, else RUN/final, RUN/best, or the last step."""
    path = Path(path)
    candidates = [path, path / "final", path / "best"]
    ckpts = sorted((path / "checkpoints").glob("step-*")) if (path / "checkpoints").is_dir() else []
    for c in candidates + ckpts[::-1]:
        if (c / "model.safetensors").is_file() and (c / "config.json").is_file():
            return c
    raise WarmstartError(
        f"no model found in {path}", "pass a run directory or a checkpoint directory from warmstart"
    )


def model_config(config_json: dict):
    arch = config_json.get("warmstart", {}).get("arch", config_json.get("model_type", "bert"))
    config_cls, model_cls = lookup(MODELS, "model", arch)
    names = {f.name for f in dataclasses.fields(config_cls)}
    return config_cls(**{k: v for k, v in config_json.items() if k in names}), model_cls


def load_encoder(path: str | Path, random_init: bool = False):
    """(encoder, tokenizer, config.json) from a run or checkpoint; ``random_init``: the untrained twin."""
    d = resolve_checkpoint(path)
    config_json = json.loads((d / "config.json").read_text())
    cfg, model_cls = model_config(config_json)
    encoder = model_cls(cfg)
    tokenizer = Tokenizer.load(d)
    if tokenizer.vocab_size != cfg.vocab_size:
        raise WarmstartError(
            f"the tokenizer in {d} has {tokenizer.vocab_size} tokens, the model {cfg.vocab_size}",
            "use the tokenizer the model was trained with",
        )
    if not random_init:
        state = load_file(str(d / "model.safetensors"))
        enc = {k[len("encoder.") :]: v for k, v in state.items() if k.startswith("encoder.")}
        missing, unexpected = encoder.load_state_dict(enc, strict=False)
        if missing:
            raise WarmstartError(
                f"the checkpoint {d} lacks encoder weights: {', '.join(missing[:5])}",
                "pass a checkpoint written by `warmstart pretrain`",
            )
    return encoder, tokenizer, config_json
