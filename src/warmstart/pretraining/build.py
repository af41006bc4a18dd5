"""The pretraining unit of a config (the family's model wrapped by its objective) and the config.json that
says how to build it again."""

from __future__ import annotations

import dataclasses

from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import backbone
from warmstart.nn.sizing import build_within_memory
from warmstart.objectives.base import Objective
from warmstart.objectives.sift import attach
from warmstart.pretraining.config import PretrainConfig, objective_of
from warmstart.registry import MODELS, lookup
from warmstart.tokenization.tokenizer import Tokenizer


def model_config_json(
    cfg: PretrainConfig, tokenizer: Tokenizer, objective: type[Objective] | None = None
) -> dict:
    """config.json: Hugging Face field names plus a warmstart block that says how to rebuild the unit
    (``objective``: the class of ``cfg.objective``, looked up when not given)."""
    unit_cls = objective or objective_of(cfg)[1]
    start = unit_cls.decoder_start_id
    extra = {"decoder_start_token_id": start(tokenizer)} if start else {}
    shapes = unit_cls.recorded(cfg)
    card = RunCard(arch=cfg.arch, objective=cfg.objective, tokenizer=tokenizer.fingerprint(), sections=shapes)
    return card.write(
        {
            "model_type": cfg.arch,
            "architectures": [unit_cls.hf_architecture],
            **dataclasses.asdict(cfg.model),
            "pad_token_id": tokenizer.pad_id,
            "bos_token_id": tokenizer.bos_id,
            "eos_token_id": tokenizer.eos_id,
            **extra,
        }
    )


def build_unit(cfg: PretrainConfig, tokenizer: Tokenizer, objective: type[Objective] | None = None):
    """The family's model wrapped by ``objective`` (the class of ``cfg.objective``, looked up when not
    given), seeded by ``train.seed`` and checked against free memory first."""
    _, model_cls = lookup(MODELS, "model", cfg.arch)
    unit_cls = objective or objective_of(cfg)[1]
    import torch

    def build():  # seeded here: the real build draws the same weights whatever the sizing check did
        torch.manual_seed(cfg.train.seed)
        return unit_cls(model_cls(cfg.model), *sections(cfg, unit_cls))

    fix = (
        "lower the model's sizes (model.hidden_size, model.num_hidden_layers, ...; vocab_size: the tokenizer)"
    )
    unit = build_within_memory(build, "the run's model settings", fix)
    attach(unit, cfg.sift)  # sift.weight > 0: the unit adds SiFT's penalty while training
    bind = getattr(backbone(unit), "bind", None)
    if bind is not None:  # a model that reads its tokenizer's words (ELMo's characters)
        bind(tokenizer)
    return unit


def sections(cfg: PretrainConfig, unit_cls: type[Objective]) -> list:
    """The config sections an objective reads (e.g. mlm, or mlm and electra)."""
    return [getattr(cfg, name) for name in unit_cls.sections]


def init_std(model_cfg) -> float:
    """The std of a family's normal initialisation (T5 scales embeddings by its factor instead)."""
    for key in ("initializer_range", "init_std"):
        if hasattr(model_cfg, key):
            return getattr(model_cfg, key)
    return model_cfg.initializer_factor
