"""Shared by the decoder and encoder-decoder model tests: presets at a real vocabulary, counts, inputs."""

import torch

from warmstart.config import from_dict, load_preset
from warmstart.registry import MODELS


def preset_model(name: str, vocab_size: int):
    """(our config, model class) of a preset at ``vocab_size``."""
    preset = load_preset(name)
    config_cls, model_cls = MODELS[preset["arch"]]
    return from_dict(config_cls, {**preset.get("model", {}), "vocab_size": vocab_size}), model_cls


def count(module) -> int:
    return sum(p.numel() for p in module.parameters())


def real_ids(tokenizer, texts: list[str], length: int) -> torch.Tensor:
    """(len(texts), length) ids of real text (each text's tokens, cut or repeated to ``length``)."""
    rows = []
    for t in texts:
        ids = tokenizer.encode(t)
        rows.append((ids * (length // max(len(ids), 1) + 1))[:length])
    return torch.tensor(rows)


def stepwise(decode, ids: torch.Tensor, cut: int, *args):
    """Decode ``ids[:, :cut]``, then one token, then the rest, through the cache; returns all states."""
    h1, past = decode(ids[:, :cut], *args)
    h2, past = decode(ids[:, cut : cut + 1], *args, past)
    h3, _ = decode(ids[:, cut + 1 :], *args, past)
    return torch.cat([h1, h2, h3], dim=1)
