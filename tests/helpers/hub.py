"""For the `warmstart import` / `warmstart export` tests: transformers model directories, a warmstart model
directory's pretraining unit loaded strictly, right-padded batches of real text, and a tiny ELECTRA."""

import dataclasses
import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from warmstart.checkpoints.build import PretrainConfig
from warmstart.checkpoints.load import model_config
from warmstart.registry import OBJECTIVES
from warmstart.tokenization.tokenizer import Tokenizer

SHAPE = dict(hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=64)


def hf_dir(path: Path, model, tokenizer_dir) -> Path:
    """A transformers model directory: save_pretrained plus a real tokenizer."""
    model.save_pretrained(path)
    Tokenizer.load(tokenizer_dir).save(path)
    return path


def load_unit(d: Path):
    """The pretraining unit of a warmstart model directory, loaded strictly (every name the unit's)."""
    config = json.loads((d / "config.json").read_text())
    cfg, model_cls = model_config(config)
    unit_cls = OBJECTIVES[config["warmstart"]["objective"]]
    defaults = [PretrainConfig.__dataclass_fields__[s].default_factory() for s in unit_cls.sections]
    recorded = config["warmstart"]  # the sections that shape the unit (ELECTRA's generator)
    sections = [dataclasses.replace(d, **recorded.get(s, {})) for d, s in zip(defaults, unit_cls.sections)]
    unit = unit_cls(model_cls(cfg), *sections)
    unit.load_state_dict(load_file(str(d / "model.safetensors")), strict=True)
    return unit.eval()


def batch(tok, texts, width=40, pairs=False):
    """Right-padded ids of real text (row 2 shorter), their mask and segment ids."""
    ids, types = tok.encode_pairs(texts, [t[::-1] for t in texts] if pairs else None, max_length=width)
    ids[2], types[2] = ids[2][:17], types[2][:17]
    n = max(map(len, ids))
    x = torch.tensor([i + [tok.pad_id] * (n - len(i)) for i in ids])
    t = torch.tensor([s + [0] * (n - len(s)) for s in types])
    return x, (x != tok.pad_id).long(), t


def same(a, b, mask) -> float:
    """The largest difference of ``a`` and ``b`` at the real (mask 1) tokens."""
    return float((a - b)[mask.bool()].abs().max())


def tiny_electra(tok):
    """A transformers ElectraForPreTraining of ``SHAPE`` (embedding 16) at the tokenizer's vocabulary."""
    import transformers

    torch.manual_seed(0)
    config = transformers.ElectraConfig(
        vocab_size=tok.vocab_size, embedding_size=16, max_position_embeddings=64, pad_token_id=tok.pad_id,
        **SHAPE,
    )  # fmt: skip
    model = transformers.ElectraForPreTraining(config).eval()
    with torch.no_grad():
        model.discriminator_predictions.dense_prediction.bias.fill_(0.5)
    return model
